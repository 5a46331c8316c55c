"""The group protocol through the gRPC service of an in-process broker, with raw stubs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.broker_nodes.coordinator.groups.raw_member import RawMember, settle
from tests.broker_nodes.replication.cluster import wait_until
from tests.broker_nodes.server.helpers import create_topic
from tests.support.in_process_broker import InProcessBroker
from weir.errors import ErrorCode

CONFIGS = {"offsets.topic.num.partitions": "3", "group.consumer.heartbeat.interval.ms": "200"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    running = InProcessBroker(tmp_path / "data", CONFIGS).start()
    create_topic(running.stub, "orders", 4)
    create_topic(running.stub, "orders-eu", 2)
    create_topic(running.stub, "audit", 1)
    try:
        yield running
    finally:
        running.stop()


def commit(
    stub, group: str, offsets: dict[tuple[str, int], int], *, member: RawMember | None = None, epoch: int | None = None
) -> broker_pb2.OffsetCommitResponse:  # type: ignore[no-untyped-def]
    topics: dict[str, list[broker_pb2.OffsetCommitPartition]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(broker_pb2.OffsetCommitPartition(partition=partition, committed_offset=offset, committed_leader_epoch=-1))
    request = broker_pb2.OffsetCommitRequest(
        group_id=group,
        member_id=member.member_id if member else "",
        generation_id=(member.epoch if epoch is None else epoch) if member else -1,
        topics=[broker_pb2.OffsetCommitTopic(topic=topic, partitions=items) for topic, items in topics.items()],
    )
    return stub.OffsetCommit(request, timeout=30)


def committed(stub, group: str) -> dict[tuple[str, int], int]:  # type: ignore[no-untyped-def]
    answer = stub.OffsetFetch(broker_pb2.OffsetFetchRequest(group_id=group), timeout=10)
    assert answer.error_code == ErrorCode.NO_ERROR, answer.error_message
    return {(topic.topic, partition.partition): partition.committed_offset for topic in answer.topics for partition in topic.partitions}


def describe(stub, *groups: str) -> list[broker_pb2.GroupDescription]:  # type: ignore[no-untyped-def]
    return list(stub.ConsumerGroupDescribe(broker_pb2.ConsumerGroupDescribeRequest(group_ids=list(groups)), timeout=10).groups)


def partition_codes(response: broker_pb2.OffsetCommitResponse) -> dict[tuple[str, int], int]:
    assert response.error_code == ErrorCode.NO_ERROR, response.error_message
    return {(topic.topic, partition.partition): partition.error_code for topic in response.topics for partition in topic.partitions}


def test_two_members_split_the_partitions_without_ever_sharing_one(broker: InProcessBroker) -> None:
    first = RawMember(broker.stub, "billing", ["orders"], session_timeout_ms=10_000, rebalance_timeout_ms=10_000)
    second = RawMember(broker.stub, "billing", ["orders"], session_timeout_ms=10_000, rebalance_timeout_ms=10_000)
    answer = first.join()
    assert (answer.member_epoch, answer.heartbeat_interval_ms, len(first.owned)) == (1, 200, 4)
    joined = second.join()
    assert joined.member_epoch == 2 and second.owned == set()
    # The newcomer gets nothing while the first still owns everything.
    assert second.heartbeat().error_code == ErrorCode.NO_ERROR and second.owned == set()
    settle([first, second])
    assert len(first.owned) == len(second.owned) == 2 and not first.owned & second.owned
    assert first.owned | second.owned == {("orders", number) for number in range(4)}
    [group] = describe(broker.stub, "billing")
    assert (group.state, group.group_epoch, group.assignment_epoch, group.assignor_name) == ("Stable", 2, 2, "sticky")
    assert {(member.member_id, member.member_epoch) for member in group.members} == {(first.member_id, 2), (second.member_id, 2)}
    assert {member.client_host for member in group.members} == {"127.0.0.1"}


def test_member_commits_with_its_epoch_only_what_it_owns(broker: InProcessBroker) -> None:
    first = RawMember(broker.stub, "billing", ["orders"])
    second = RawMember(broker.stub, "billing", ["orders"])
    first.join()
    second.join()
    settle([first, second])
    mine, theirs = sorted(first.owned)[0], sorted(second.owned)[0]
    assert partition_codes(commit(broker.stub, "billing", {mine: 10}, member=first)) == {mine: ErrorCode.NO_ERROR}
    refused = commit(broker.stub, "billing", {mine: 11, theirs: 99}, member=first)
    codes = {(topic.topic, partition.partition): (partition.error_code, partition.error_message) for topic in refused.topics for partition in topic.partitions}
    assert codes[mine][0] == ErrorCode.NO_ERROR
    assert codes[theirs] == (
        ErrorCode.INVALID_REQUEST,
        f"partition {theirs[1]} of topic 'orders' is not assigned to member {first.member_id!r} of group 'billing'",
    )
    assert committed(broker.stub, "billing") == {mine: 11}
    stale = commit(broker.stub, "billing", {mine: 12}, member=first, epoch=first.epoch - 1)
    assert stale.error_code == ErrorCode.STALE_MEMBER_EPOCH and "commit again with the current epoch" in stale.error_message
    unknown = commit(broker.stub, "billing", {mine: 12}, member=RawMember(broker.stub, "billing"))
    assert unknown.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    admin = commit(broker.stub, "billing", {mine: 0})
    assert (admin.error_code, admin.error_message) == (
        ErrorCode.UNKNOWN_MEMBER_ID,
        "group 'billing' has 2 active members: stop them before altering its offsets",
    )
    assert committed(broker.stub, "billing") == {mine: 11}
    first.leave()
    second.leave()
    assert partition_codes(commit(broker.stub, "billing", {mine: 0})) == {mine: ErrorCode.NO_ERROR}
    assert committed(broker.stub, "billing") == {mine: 0}


def test_heartbeat_errors_are_answered_in_the_response(broker: InProcessBroker) -> None:
    ghost = RawMember(broker.stub, "billing", ["orders"])
    ghost.member_id, ghost.epoch = "ghost", 3
    assert ghost.heartbeat().error_code == ErrorCode.UNKNOWN_MEMBER_ID
    member = RawMember(broker.stub, "billing", ["orders"])
    member.join()
    member.epoch += 5
    fenced = member.heartbeat()
    assert fenced.error_code == ErrorCode.FENCED_MEMBER_EPOCH and "rejoin with epoch 0" in fenced.error_message
    assert RawMember(broker.stub, "billing", ["orders"], session_timeout_ms=10).join().error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    assert RawMember(broker.stub, "billing", ["orders"], server_assignor="fancy").join().error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert RawMember(broker.stub, "billing", regex="(unclosed").join().error_code == ErrorCode.INVALID_REQUEST
    assert RawMember(broker.stub, "", ["orders"]).join().error_code == ErrorCode.INVALID_GROUP_ID
    # The refused calls changed nothing.
    [group] = describe(broker.stub, "billing")
    assert [entry.member_id for entry in group.members] == [member.member_id]


def test_regex_subscription_takes_matching_topics_and_ones_created_later(broker: InProcessBroker) -> None:
    member = RawMember(broker.stub, "regional", regex="orders-.*")
    member.join()
    assert member.owned == {("orders-eu", 0), ("orders-eu", 1)}
    create_topic(broker.stub, "orders-us", 1)
    member.heartbeat()
    assert member.owned == {("orders-eu", 0), ("orders-eu", 1), ("orders-us", 0)}
    [group] = describe(broker.stub, "regional")
    assert group.members[0].subscribed_topic_regex == "orders-.*"


def test_describe_list_and_delete(broker: InProcessBroker) -> None:
    member = RawMember(broker.stub, "billing", ["orders"])
    member.join()
    assert partition_codes(commit(broker.stub, "billing", {("orders", 0): 5}, member=member)) == {("orders", 0): 0}
    assert partition_codes(commit(broker.stub, "simple", {("audit", 0): 3})) == {("audit", 0): 0}
    listed = broker.stub.ListGroups(broker_pb2.ListGroupsRequest(), timeout=10).groups
    assert [(group.group_id, group.state, group.protocol_type) for group in listed] == [("billing", "Stable", "consumer"), ("simple", "Empty", "")]
    only_empty = broker.stub.ListGroups(broker_pb2.ListGroupsRequest(states_filter=["empty"]), timeout=10).groups
    assert [group.group_id for group in only_empty] == ["simple"]
    with pytest.raises(grpc.RpcError) as raised:
        broker.stub.ListGroups(broker_pb2.ListGroupsRequest(states_filter=["Rebalancing"]), timeout=10)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    billing, missing = describe(broker.stub, "billing", "missing")
    assert [(entry.member_id, [(tp.topic, list(tp.partitions)) for tp in entry.assignment]) for entry in billing.members] == [
        (member.member_id, [("orders", [0, 1, 2, 3])])
    ]
    assert (missing.error_code, missing.state) == (ErrorCode.GROUP_ID_NOT_FOUND, "Dead")

    deleted = broker.stub.DeleteGroups(broker_pb2.DeleteGroupsRequest(group_ids=["billing", "missing", "simple"]), timeout=30).groups
    assert [(entry.group_id, entry.error_code) for entry in deleted] == [
        ("billing", ErrorCode.NON_EMPTY_GROUP),
        ("missing", ErrorCode.GROUP_ID_NOT_FOUND),
        ("simple", ErrorCode.NO_ERROR),
    ]
    assert "has 1 members" in deleted[0].error_message
    member.leave()
    [done] = broker.stub.DeleteGroups(broker_pb2.DeleteGroupsRequest(group_ids=["billing"]), timeout=30).groups
    assert done.error_code == ErrorCode.NO_ERROR
    assert describe(broker.stub, "billing")[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert committed(broker.stub, "billing") == {}
    broker.restart()
    assert describe(broker.stub, "billing")[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert broker.stub.ListGroups(broker_pb2.ListGroupsRequest(), timeout=10).groups == []


def test_silent_member_is_removed_after_its_session_timeout(broker: InProcessBroker) -> None:
    silent = RawMember(broker.stub, "billing", ["orders"], session_timeout_ms=1_000)
    silent.join()
    other = RawMember(broker.stub, "billing", ["orders"], session_timeout_ms=10_000)
    other.join()

    def took_over() -> bool:
        other.heartbeat()
        return len(other.owned) == 4

    wait_until(took_over, timeout_seconds=10, what="the silent member's partitions to move")
    assert silent.heartbeat().error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_members_go_on_with_their_id_and_epoch_after_the_broker_restarts(broker: InProcessBroker) -> None:
    first = RawMember(broker.stub, "billing", ["orders"])
    second = RawMember(broker.stub, "billing", ["orders"])
    first.join()
    second.join()
    settle([first, second])
    owned = (set(first.owned), set(second.owned))
    broker.restart()
    for member in (first, second):
        member.stub = broker.stub
        answer = member.heartbeat()
        assert (answer.error_code, answer.member_epoch) == (ErrorCode.NO_ERROR, 2)
    assert (first.owned, second.owned) == owned
    assert describe(broker.stub, "billing")[0].state == "Stable"
