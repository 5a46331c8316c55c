"""AdminClient's consumer-group calls and weir.group_tools, against scripted brokers: requests sent, answers mapped."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.weir.scripted_broker import coordinator_at, metadata
from tests.weir.scripted_groups import GroupBroker, RecordLog
from weir import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from weir.admin import AdminClient
from weir.errors import ErrorCode
from weir.group_tools import OffsetChange, PartitionLag, apply_offset_reset, consumer_group_lag, plan_offset_reset
from weir.message import OFFSET_INVALID

GROUP = "billing"


@pytest.fixture
def brokers() -> Iterator[list[GroupBroker]]:
    started = [GroupBroker(node_id).start() for node_id in (1, 2)]
    for broker in started:
        broker.answers["Metadata"] = lambda request: metadata(started, {"orders": [(1, 1), (1, 1)], "audit": [(1, 1)]})
        broker.answers["FindCoordinator"] = lambda request: coordinator_at(started[1], request.group_ids[0])
    try:
        yield started
    finally:
        for broker in started:
            broker.stop()


@pytest.fixture
def admin(brokers: list[GroupBroker]) -> Iterator[AdminClient]:
    client = AdminClient({"bootstrap.servers": brokers[0].address, "retry.backoff.ms": 10, "retry.backoff.max.ms": 50, "socket.timeout.ms": 3000})
    try:
        yield client
    finally:
        client.close()


def _member(member_id: str, assigned: dict[str, list[int]], target: dict[str, list[int]]) -> broker_pb2.GroupMemberDescription:
    return broker_pb2.GroupMemberDescription(
        member_id=member_id,
        instance_id="",
        member_epoch=4,
        client_id="billing-app",
        client_host="/10.0.0.7",
        subscribed_topic_names=["orders"],
        assignment=[broker_pb2.TopicPartitions(topic=topic, partitions=partitions) for topic, partitions in assigned.items()],
        target_assignment=[broker_pb2.TopicPartitions(topic=topic, partitions=partitions) for topic, partitions in target.items()],
    )


def test_list_consumer_groups_asks_every_broker_and_merges(brokers: list[GroupBroker], admin: AdminClient) -> None:
    first, second = brokers
    first.answers["ListGroups"] = lambda request: broker_pb2.ListGroupsResponse(
        groups=[broker_pb2.ListedGroup(group_id="billing", state="Stable", protocol_type="consumer")]
    )
    second.answers["ListGroups"] = lambda request: broker_pb2.ListGroupsResponse(
        groups=[
            broker_pb2.ListedGroup(group_id="audit", state="Empty", protocol_type="consumer"),
            broker_pb2.ListedGroup(group_id="billing", state="Stable", protocol_type="consumer"),
        ]
    )
    result = admin.list_consumer_groups(request_timeout=5).result(timeout=10)
    assert [(listing.group_id, listing.state, listing.is_simple_consumer_group) for listing in result.valid] == [
        ("audit", ConsumerGroupState.EMPTY, False),
        ("billing", ConsumerGroupState.STABLE, False),
    ]
    assert result.errors == []

    admin.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(timeout=10)
    assert list(second.called("ListGroups")[-1].states_filter) == ["Empty"]


def test_a_broker_that_cannot_list_adds_an_error_and_the_others_still_count(brokers: list[GroupBroker], admin: AdminClient) -> None:
    first, second = brokers
    first.answers["ListGroups"] = lambda request: broker_pb2.ListGroupsResponse(
        groups=[broker_pb2.ListedGroup(group_id="billing", state="Reconciling", protocol_type="consumer")]
    )
    second.answers["ListGroups"] = lambda request: broker_pb2.ListGroupsResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)  # type: ignore[attr-defined]
    result = admin.list_consumer_groups().result(timeout=10)
    assert [(listing.group_id, listing.state) for listing in result.valid] == [("billing", ConsumerGroupState.RECONCILING)]
    assert [error.code() for error in result.errors] == [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]  # type: ignore[attr-defined]
    assert "broker 2" in result.errors[0].str()


def test_describe_maps_members_assignments_and_the_coordinator(brokers: list[GroupBroker], admin: AdminClient) -> None:
    coordinator = brokers[1]
    coordinator.answers["ConsumerGroupDescribe"] = lambda request: broker_pb2.ConsumerGroupDescribeResponse(
        groups=[
            broker_pb2.GroupDescription(
                group_id=GROUP,
                state="Reconciling",
                group_epoch=5,
                assignment_epoch=5,
                assignor_name="range",
                members=[_member("member-1", {"orders": [0, 1]}, {"orders": [1]}), _member("member-2", {}, {"orders": [0]})],
            )
        ]
    )
    description = admin.describe_consumer_groups([GROUP])[GROUP].result(timeout=10)
    assert (description.group_id, description.state, description.partition_assignor, description.is_simple_consumer_group) == (
        GROUP,
        ConsumerGroupState.RECONCILING,
        "range",
        False,
    )
    assert (description.coordinator.id, description.coordinator.port) == (2, coordinator.port)
    first, second = description.members
    assert (first.member_id, first.client_id, first.host, first.group_instance_id, first.member_epoch) == ("member-1", "billing-app", "/10.0.0.7", None, 4)
    assert first.assignment.topic_partitions == [TopicPartition("orders", 0), TopicPartition("orders", 1)]
    assert first.target_assignment is not None and first.target_assignment.topic_partitions == [TopicPartition("orders", 1)]
    assert second.assignment.topic_partitions == [] and second.target_assignment.topic_partitions == [TopicPartition("orders", 0)]  # type: ignore[union-attr]


def test_describe_of_an_unknown_group_fails_its_future_and_not_coordinator_is_retried(brokers: list[GroupBroker], admin: AdminClient) -> None:
    first, second = brokers
    answers = iter([coordinator_at(first, "ghost"), coordinator_at(second, "ghost")])
    first.answers["FindCoordinator"] = lambda request: next(answers)
    first.answers["ConsumerGroupDescribe"] = lambda request: broker_pb2.ConsumerGroupDescribeResponse(
        groups=[broker_pb2.GroupDescription(group_id="ghost", error_code=ErrorCode.NOT_COORDINATOR)]
    )  # type: ignore[attr-defined]
    second.answers["ConsumerGroupDescribe"] = lambda request: broker_pb2.ConsumerGroupDescribeResponse(
        groups=[broker_pb2.GroupDescription(group_id="ghost", error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message="group ghost does not exist")]
    )  # type: ignore[attr-defined]
    with pytest.raises(KafkaException) as raised:
        admin.describe_consumer_groups(["ghost"])["ghost"].result(timeout=10)
    assert raised.value.error.code() == ErrorCode.GROUP_ID_NOT_FOUND  # type: ignore[attr-defined]
    assert len(first.called("ConsumerGroupDescribe")) == 1 and len(second.called("ConsumerGroupDescribe")) == 1


def test_delete_reports_each_groups_outcome(brokers: list[GroupBroker], admin: AdminClient) -> None:
    def delete(request: broker_pb2.DeleteGroupsRequest) -> broker_pb2.DeleteGroupsResponse:
        [group_id] = request.group_ids
        code = ErrorCode.NON_EMPTY_GROUP if group_id == "busy" else 0  # type: ignore[attr-defined]
        return broker_pb2.DeleteGroupsResponse(
            groups=[broker_pb2.DeletedGroup(group_id=group_id, error_code=code, error_message="group busy has 2 members" if code else "")]
        )

    brokers[1].answers["DeleteGroups"] = delete
    futures = admin.delete_consumer_groups(["idle", "busy"])
    assert futures["idle"].result(timeout=10) is None
    with pytest.raises(KafkaException) as raised:
        futures["busy"].result(timeout=10)
    assert raised.value.error.code() == ErrorCode.NON_EMPTY_GROUP and "2 members" in raised.value.error.str()  # type: ignore[attr-defined]


def test_group_calls_refuse_bad_arguments(admin: AdminClient) -> None:
    with pytest.raises(TypeError):
        admin.describe_consumer_groups([])
    with pytest.raises(ValueError):
        admin.delete_consumer_groups([""])
    with pytest.raises(ValueError):
        admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP, [TopicPartition("orders", 0, -2)])])
    with pytest.raises(ValueError):
        admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP)])
    with pytest.raises(TypeError):
        admin.list_consumer_group_offsets([GROUP])  # type: ignore[list-item]


def test_list_consumer_group_offsets_maps_committed_and_missing_offsets(brokers: list[GroupBroker], admin: AdminClient) -> None:
    brokers[1].answers["OffsetFetch"] = lambda request: broker_pb2.OffsetFetchResponse(
        topics=[
            broker_pb2.OffsetFetchTopicResponse(
                topic="orders",
                partitions=[
                    broker_pb2.OffsetFetchPartitionResponse(partition=1, committed_offset=-1, committed_leader_epoch=-1),
                    broker_pb2.OffsetFetchPartitionResponse(partition=0, committed_offset=42, committed_leader_epoch=3, metadata="m"),
                ],
            )
        ]
    )
    result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP)])[GROUP].result(timeout=10)
    assert [(tp.topic, tp.partition, tp.offset, tp.leader_epoch, tp.metadata) for tp in result.topic_partitions] == [
        ("orders", 0, 42, 3, "m"),
        ("orders", 1, OFFSET_INVALID, None, None),
    ]
    assert list(brokers[1].called("OffsetFetch")[0].topics) == []  # None: every partition the group committed


def test_alter_offsets_commits_without_a_member_and_an_active_group_fails_clearly(brokers: list[GroupBroker], admin: AdminClient) -> None:
    log = RecordLog()
    brokers[1].answers["OffsetCommit"] = log.offset_commit
    request = ConsumerGroupTopicPartitions(GROUP, [TopicPartition("orders", 0, 10), TopicPartition("orders", 1, 0)])
    result = admin.alter_consumer_group_offsets([request])[GROUP].result(timeout=10)
    assert [(tp.partition, tp.offset, tp.error) for tp in result.topic_partitions] == [(0, 10, None), (1, 0, None)]
    assert (log.commits[0].member_id, log.commits[0].generation_id) == ("", -1)

    log.commit_answer = lambda request: broker_pb2.OffsetCommitResponse(
        error_code=ErrorCode.UNKNOWN_MEMBER_ID, error_message="group billing has 2 active members: stop them before altering its offsets"
    )  # type: ignore[attr-defined]
    with pytest.raises(KafkaException) as raised:
        apply_offset_reset(admin, GROUP, [OffsetChange("orders", 0, 10, 0)], timeout=10)
    assert "2 active members" in raised.value.error.str()


def _serve_offsets(broker: GroupBroker, log: RecordLog, members: list[broker_pb2.GroupMemberDescription]) -> None:
    broker.answers["OffsetFetch"] = lambda request: (
        log.offset_fetch(request)
        if request.topics
        else broker_pb2.OffsetFetchResponse(
            topics=[
                broker_pb2.OffsetFetchTopicResponse(
                    topic=topic,
                    partitions=[
                        broker_pb2.OffsetFetchPartitionResponse(partition=partition, committed_offset=offset)
                        for (name, partition), offset in sorted(log.committed.items())
                        if name == topic
                    ],
                )
                for topic in sorted({name for name, _ in log.committed})
            ]
        )
    )
    broker.answers["ListOffsets"] = log.list_offsets
    broker.answers["ConsumerGroupDescribe"] = lambda request: broker_pb2.ConsumerGroupDescribeResponse(
        groups=[broker_pb2.GroupDescription(group_id=GROUP, state="Stable", group_epoch=2, members=members)]
    )


def test_consumer_group_lag_covers_committed_and_assigned_partitions(brokers: list[GroupBroker], admin: AdminClient) -> None:
    log = RecordLog()
    log.records.update({("orders", 0): 100, ("orders", 1): 7, ("audit", 0): 5})
    log.committed.update({("orders", 0): 60, ("audit", 0): 5})
    for broker in brokers:
        _serve_offsets(broker, log, [_member("member-1", {"orders": [0, 1]}, {"orders": [0, 1]})])
    lags = consumer_group_lag(admin, GROUP, timeout=10)
    assert lags == [
        PartitionLag("audit", 0, 5, 5, 0),
        PartitionLag("orders", 0, 60, 100, 40),
        PartitionLag("orders", 1, -1, 7, None),
    ]


def test_plan_offset_reset_to_latest_earliest_and_clamped_offsets(brokers: list[GroupBroker], admin: AdminClient) -> None:
    log = RecordLog()
    log.records.update({("orders", 0): 100, ("orders", 1): 7})
    log.committed.update({("orders", 0): 60})
    for broker in brokers:
        _serve_offsets(broker, log, [])
    assert plan_offset_reset(admin, GROUP, topics=["orders"], to="latest", timeout=10) == [OffsetChange("orders", 0, 60, 100), OffsetChange("orders", 1, -1, 7)]
    assert plan_offset_reset(admin, GROUP, topics=["orders"], to="earliest", timeout=10) == [OffsetChange("orders", 0, 60, 0), OffsetChange("orders", 1, -1, 0)]
    assert plan_offset_reset(admin, GROUP, topics=[], to={("orders", 1): 500}, timeout=10) == [OffsetChange("orders", 1, -1, 7)]
    assert log.commits == []  # a plan writes nothing
    with pytest.raises(ValueError):
        plan_offset_reset(admin, GROUP, topics=["orders"], to="yesterday", timeout=10)
    with pytest.raises(KafkaException):
        plan_offset_reset(admin, GROUP, topics=[], to={("orders", 9): 1}, timeout=10)
