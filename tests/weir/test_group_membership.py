"""subscribe(): the member's side of KIP-848's heartbeat protocol, against a scripted coordinator.

A scripted broker (tests/weir/scripted_groups.py) plays bootstrap broker, partition leader and
group coordinator; the test decides each assignment, epoch and error answer, and checks what
the consumer sends and in which order it runs callbacks, commits and reports.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.weir.scripted_broker import coordinator_at, metadata
from tests.weir.scripted_groups import GroupBroker, RecordLog, ScriptedCoordinator, owned_set
from weir import Consumer, KafkaError, KafkaException, TopicPartition
from weir.errors import ErrorCode
from weir.group_membership import split_subscription

GROUP = "billing"
TOPIC = "orders"


class Scene:
    """One scripted broker serving metadata, fetches, offsets and the group; an event log shared by all."""

    def __init__(self, broker: GroupBroker) -> None:
        self.broker = broker
        self.events: list[tuple[Any, ...]] = []
        self.coordinator = ScriptedCoordinator(self.events)
        self.log = RecordLog(self.events)
        broker.answers["Metadata"] = lambda request: metadata(
            [broker], {TOPIC: [(broker.node_id, 1)] * 3, "orders-eu": [(broker.node_id, 1)], "audit": [(broker.node_id, 1)]}
        )
        broker.answers["FindCoordinator"] = lambda request: coordinator_at(broker, GROUP)
        broker.answers["ConsumerGroupHeartbeat"] = self.coordinator
        broker.answers["Fetch"] = self.log.fetch
        broker.answers["OffsetFetch"] = self.log.offset_fetch
        broker.answers["OffsetCommit"] = self.log.offset_commit
        broker.answers["ListOffsets"] = self.log.list_offsets
        self.consumers: list[Consumer] = []

    def consumer(self, **extra: object) -> Consumer:
        consumer = Consumer(
            {
                "bootstrap.servers": self.broker.address,
                "group.id": GROUP,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "request.timeout.ms": 3000,
                "retry.backoff.ms": 10,
                "retry.backoff.max.ms": 50,
                "heartbeat.interval.ms": 50,
                **extra,
            }
        )
        self.consumers.append(consumer)
        return consumer

    def of_kind(self, kind: str) -> list[tuple[Any, ...]]:
        return [event for event in list(self.events) if event[0] == kind]


@pytest.fixture
def scene() -> Iterator[Scene]:
    broker = GroupBroker(1).start()
    scene = Scene(broker)
    try:
        yield scene
    finally:
        for consumer in scene.consumers:
            try:
                consumer.close()
            except Exception:
                pass
        broker.stop()


def poll_until(consumer: Consumer, condition: Callable[[], bool], timeout: float = 10.0) -> list[Any]:
    """Poll until ``condition`` holds (bounded by ``timeout``); the messages and events polled."""
    polled = []
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        message = consumer.poll(0.05)
        if message is not None:
            polled.append(message)
    assert condition(), "the condition did not hold in time"
    return polled


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert condition(), "the condition did not hold in time"


def recorder(events: list[tuple[Any, ...]], kind: str) -> Callable[[Consumer, list[TopicPartition]], None]:
    def callback(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        events.append((kind, sorted((tp.topic, tp.partition) for tp in partitions)))

    return callback


def tp(partition: int, topic: str = TOPIC) -> tuple[str, int]:
    return (topic, partition)


# ---------------------------------------------------------------------- subscription lists


def test_split_subscription_separates_names_and_regular_expressions() -> None:
    assert split_subscription(["orders", "^audit-.*", "orders"]) == (["orders"], "^audit-.*")
    assert split_subscription(["^a.*", "^b.*"]) == ([], "(?:^a.*)|(?:^b.*)")


@pytest.mark.parametrize("topics", [[], [""], ["^(unclosed"], [3]])
def test_bad_subscription_lists_are_refused(topics: list[Any]) -> None:
    with pytest.raises(KafkaException) as raised:
        split_subscription(topics)
    assert raised.value.error.code() == KafkaError._INVALID_ARG


def test_subscribe_without_group_id_is_refused(scene: Scene) -> None:
    consumer = Consumer({"bootstrap.servers": scene.broker.address})
    scene.consumers.append(consumer)
    with pytest.raises(KafkaException) as raised:
        consumer.subscribe([TOPIC])
    assert raised.value.error.code() == KafkaError._INVALID_ARG and "group.id" in raised.value.error.str()


def test_subscribe_after_assign_and_assign_while_subscribed_are_state_errors(scene: Scene) -> None:
    consumer = scene.consumer()
    consumer.assign([TopicPartition(TOPIC, 0)])
    with pytest.raises(KafkaException) as raised:
        consumer.subscribe([TOPIC])
    assert raised.value.error.code() == KafkaError._STATE
    consumer.unassign()
    consumer.subscribe([TOPIC])
    with pytest.raises(KafkaException) as raised:
        consumer.assign([TopicPartition(TOPIC, 1)])
    assert raised.value.error.code() == KafkaError._STATE and "incremental_assign" in raised.value.error.str()


# ---------------------------------------------------------------------- joining


def test_join_sends_the_subscription_and_starts_assigned_partitions_at_committed_offsets(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {tp(0), tp(1)}, epoch=3)
    scene.log.records.update({tp(0): 5, tp(1): 2})
    scene.log.committed[tp(0)] = 3
    consumer = scene.consumer(**{"partition.assignment.strategy": "cooperative-sticky", "max.poll.interval.ms": 60000, "client.id": "billing-app"})
    consumer.subscribe([TOPIC], on_assign=recorder(scene.events, "assigned"))

    values: list[bytes] = []
    deadline = time.monotonic() + 10
    while len(values) < 4 and time.monotonic() < deadline:
        message = consumer.poll(0.05)
        if message is not None and message.error() is None:
            values.append(message.value())

    join = scene.coordinator.requests[0]
    assert (join.group_id, join.member_id, join.member_epoch) == (GROUP, "", 0)
    assert list(join.subscription.topic_names) == [TOPIC] and join.subscription.topic_regex == ""
    assert join.HasField("owned") and owned_set(join.owned) == frozenset()
    assert (join.server_assignor, join.rebalance_timeout_ms, join.client_id, join.session_timeout_ms) == ("sticky", 60000, "billing-app", 0)
    assert scene.of_kind("assigned") == [("assigned", [tp(0), tp(1)])]
    assert sorted((item.topic, item.partition) for item in consumer.assignment()) == [tp(0), tp(1)]
    # orders-0 resumes at its committed offset 3; orders-1 has none and starts at the earliest.
    assert sorted(values) == sorted([b"orders-0-3", b"orders-0-4", b"orders-1-0", b"orders-1-1"])
    assert consumer.memberid() == "member-1"
    wait_until(lambda: any(event[1:] == ("member-1", 3, frozenset({tp(0), tp(1)})) for event in scene.of_kind("owned")))


def test_regex_entries_are_sent_as_the_topic_regex(scene: Scene) -> None:
    consumer = scene.consumer()
    consumer.subscribe(["^orders-.*", "audit"])
    wait_until(lambda: len(scene.coordinator.requests) >= 1)
    join = scene.coordinator.requests[0]
    assert list(join.subscription.topic_names) == ["audit"] and join.subscription.topic_regex == "^orders-.*"


def test_a_new_subscription_is_sent_on_the_next_heartbeat(scene: Scene) -> None:
    consumer = scene.consumer()
    consumer.subscribe([TOPIC])

    def steady() -> list[broker_pb2.ConsumerGroupHeartbeatRequest]:
        return scene.coordinator.called(lambda request: request.member_epoch > 0 and not request.HasField("subscription") and not request.HasField("owned"))

    poll_until(consumer, lambda: len(steady()) >= 1)  # an unchanged subscription is left out
    consumer.subscribe(["audit"])
    poll_until(
        consumer, lambda: bool(scene.coordinator.called(lambda request: request.member_epoch > 0 and list(request.subscription.topic_names) == ["audit"]))
    )
    sent = len(scene.coordinator.requests)
    poll_until(consumer, lambda: len(scene.coordinator.requests) > sent)
    assert not scene.coordinator.requests[-1].HasField("subscription")


# ---------------------------------------------------------------------- reconciliation


def test_revoked_partition_is_committed_and_reported_before_the_new_one_is_assigned(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {tp(0), tp(1)}, epoch=1)
    scene.log.records[tp(0)] = 3
    consumer = scene.consumer(**{"enable.auto.commit": True, "auto.commit.interval.ms": 600000})
    consumer.subscribe([TOPIC], on_assign=recorder(scene.events, "assigned"), on_revoke=recorder(scene.events, "revoked"))
    received: list[int] = []

    def take() -> bool:
        message = consumer.poll(0.05)
        if message is not None and message.error() is None:
            received.append(message.offset())
        return len(received) == 3

    deadline = time.monotonic() + 10
    while not take() and time.monotonic() < deadline:
        pass
    assert received == [0, 1, 2]

    # The coordinator takes orders-0 away (epoch 2), and gives orders-2 once orders-0 is reported revoked (epoch 3).
    scene.coordinator.assign("member-1", {tp(1)}, epoch=2)
    poll_until(consumer, lambda: any(event[1:] == ("member-1", 2, frozenset({tp(1)})) for event in scene.of_kind("owned")))
    scene.coordinator.assign("member-1", {tp(1), tp(2)}, epoch=3)
    poll_until(consumer, lambda: ("assigned", [tp(2)]) in scene.events)

    ordered = [event for event in scene.events if event[0] in ("revoked", "commit", "assigned") or (event[0] == "owned" and event[2] >= 2)]
    assert ordered[0] == ("assigned", [tp(0), tp(1)])
    assert ordered[1:5] == [
        ("revoked", [tp(0)]),
        ("commit", "member-1", 2, {tp(0): 3}),
        ("owned", "member-1", 2, frozenset({tp(1)})),
        ("assigned", [tp(2)]),
    ]
    assert sorted((item.topic, item.partition) for item in consumer.assignment()) == [tp(1), tp(2)]


def test_on_revoke_may_unassign_itself_and_the_offsets_are_still_committed(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {tp(0)}, epoch=1)
    scene.log.records[tp(0)] = 2
    consumer = scene.consumer(**{"enable.auto.commit": True, "auto.commit.interval.ms": 600000})

    def on_revoke(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        consumer.incremental_unassign(partitions)
        scene.events.append(("revoked", sorted((item.topic, item.partition) for item in partitions)))

    consumer.subscribe([TOPIC], on_revoke=on_revoke)
    poll_until(consumer, lambda: consumer.position([TopicPartition(TOPIC, 0)])[0].offset == 2)
    scene.coordinator.assign("member-1", set(), epoch=2)
    poll_until(consumer, lambda: bool(scene.of_kind("revoked")))
    assert scene.of_kind("commit") == [("commit", "member-1", 2, {tp(0): 2})]
    assert consumer.assignment() == []


def test_on_assign_may_choose_start_offsets_with_incremental_assign(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {tp(0)}, epoch=1)
    scene.log.records[tp(0)] = 4

    def on_assign(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        consumer.incremental_assign([TopicPartition(item.topic, item.partition, 3) for item in partitions])

    consumer = scene.consumer()
    consumer.subscribe([TOPIC], on_assign=on_assign)
    messages = [message for message in poll_until(consumer, lambda: consumer.position([TopicPartition(TOPIC, 0)])[0].offset == 4) if message.error() is None]
    assert [message.offset() for message in messages] == [3]
    assert scene.log.commits == []


# ---------------------------------------------------------------------- commits


def test_commits_carry_member_id_and_epoch_and_stale_epochs_are_retried(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {tp(0)}, epoch=4)
    consumer = scene.consumer()
    consumer.subscribe([TOPIC])
    poll_until(consumer, lambda: consumer.assignment() != [])

    def stale_until_epoch_5(request: broker_pb2.OffsetCommitRequest) -> broker_pb2.OffsetCommitResponse | None:
        if request.generation_id >= 5:
            return None
        scene.coordinator.assign("member-1", {tp(0)}, epoch=5)
        return broker_pb2.OffsetCommitResponse(
            topics=[
                broker_pb2.OffsetCommitTopicResponse(
                    topic=TOPIC, partitions=[broker_pb2.OffsetCommitPartitionResponse(partition=0, error_code=ErrorCode.STALE_MEMBER_EPOCH)]
                )
            ]
        )  # type: ignore[attr-defined]

    scene.log.commit_answer = stale_until_epoch_5
    [result] = consumer.commit(offsets=[TopicPartition(TOPIC, 0, 7)], asynchronous=False) or []
    assert result.error is None
    assert [(request.member_id, request.generation_id) for request in scene.log.commits] == [("member-1", 4), ("member-1", 5)]
    assert scene.log.committed[tp(0)] == 7


def test_auto_commit_commits_only_what_poll_returned(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {tp(0)}, epoch=1)
    scene.log.records[tp(0)] = 10
    consumer = scene.consumer(**{"enable.auto.commit": True, "auto.commit.interval.ms": 600000})
    consumer.subscribe([TOPIC])
    taken = []
    deadline = time.monotonic() + 10
    while len(taken) < 4 and time.monotonic() < deadline:
        taken += [message for message in consumer.consume(4 - len(taken), 0.05) if message.error() is None]
    assert [message.offset() for message in taken] == [0, 1, 2, 3]
    consumer.close()
    # Ten records were fetched; the four returned are the ones committed (on close, after on_revoke).
    assert scene.of_kind("commit") == [("commit", "member-1", 1, {tp(0): 4})]
    assert scene.of_kind("leave") == [("leave", "member-1", -1)]


def test_without_auto_store_only_stored_offsets_are_committed(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {tp(0)}, epoch=1)
    scene.log.records[tp(0)] = 5
    consumer = scene.consumer(**{"enable.auto.commit": True, "enable.auto.offset.store": False, "auto.commit.interval.ms": 600000})
    consumer.subscribe([TOPIC])
    first = poll_until(consumer, lambda: consumer.position([TopicPartition(TOPIC, 0)])[0].offset >= 1)[0]
    consumer.store_offsets(message=first)
    consumer.close()
    assert scene.of_kind("commit") == [("commit", "member-1", 1, {tp(0): 1})]


# ---------------------------------------------------------------------- losing partitions


@pytest.mark.parametrize(("error", "rejoin_id"), [("FENCED_MEMBER_EPOCH", "member-1"), ("UNKNOWN_MEMBER_ID", "")])
def test_a_fenced_member_loses_its_partitions_without_committing_and_rejoins(scene: Scene, error: str, rejoin_id: str) -> None:
    scene.coordinator.assign("member-1", {tp(0)}, epoch=2)
    scene.log.records[tp(0)] = 3
    consumer = scene.consumer(**{"enable.auto.commit": True, "auto.commit.interval.ms": 600000})
    consumer.subscribe([TOPIC], on_revoke=recorder(scene.events, "revoked"), on_lost=recorder(scene.events, "lost"))
    poll_until(consumer, lambda: consumer.position([TopicPartition(TOPIC, 0)])[0].offset == 3)
    joins_before = len(scene.coordinator.called(lambda request: request.member_epoch == 0))

    scene.coordinator.fail_next(getattr(ErrorCode, error), "zombie")
    poll_until(consumer, lambda: len(scene.coordinator.called(lambda request: request.member_epoch == 0)) > joins_before)

    assert scene.of_kind("lost") == [("lost", [tp(0)])]
    assert scene.of_kind("revoked") == [] and scene.of_kind("commit") == []
    rejoin = scene.coordinator.called(lambda request: request.member_epoch == 0)[-1]
    assert rejoin.member_id == rejoin_id
    assert rejoin.HasField("owned") and owned_set(rejoin.owned) == frozenset()
    assert list(rejoin.subscription.topic_names) == [TOPIC]


def test_without_on_lost_on_revoke_is_called_for_lost_partitions(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {tp(1)}, epoch=2)
    consumer = scene.consumer()
    consumer.subscribe([TOPIC], on_revoke=recorder(scene.events, "revoked"))
    poll_until(consumer, lambda: consumer.assignment() != [])
    scene.coordinator.fail_next(ErrorCode.FENCED_MEMBER_EPOCH)  # type: ignore[attr-defined]
    poll_until(consumer, lambda: bool(scene.of_kind("revoked")))
    assert scene.of_kind("revoked") == [("revoked", [tp(1)])]


def test_exceeding_max_poll_interval_leaves_and_the_next_poll_reports_it(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {tp(0)}, epoch=2)
    consumer = scene.consumer(**{"max.poll.interval.ms": 800})
    consumer.subscribe([TOPIC], on_lost=recorder(scene.events, "lost"))
    poll_until(consumer, lambda: consumer.assignment() != [])

    wait_until(lambda: bool(scene.of_kind("leave")), timeout=5)  # the application stopped polling
    assert scene.of_kind("leave") == [("leave", "member-1", -1)]
    events = poll_until(consumer, lambda: bool(scene.of_kind("lost")))
    assert any(event.error() is not None and event.error().code() == KafkaError._MAX_POLL_EXCEEDED for event in events)
    assert scene.of_kind("lost") == [("lost", [tp(0)])]
    poll_until(consumer, lambda: ("join", "member-2") in scene.events)


def test_partitions_are_lost_when_no_heartbeat_is_answered_for_the_session_timeout(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {tp(0)}, epoch=2)
    consumer = scene.consumer(**{"session.timeout.ms": 1000})
    consumer.subscribe([TOPIC], on_lost=recorder(scene.events, "lost"))
    poll_until(consumer, lambda: consumer.assignment() != [])
    assert scene.coordinator.requests[0].session_timeout_ms == 1000
    scene.broker.answers["ConsumerGroupHeartbeat"] = lambda request: grpc.StatusCode.UNAVAILABLE  # the coordinator is unreachable
    poll_until(consumer, lambda: bool(scene.of_kind("lost")))
    assert scene.of_kind("lost") == [("lost", [tp(0)])] and consumer.assignment() == []
    scene.broker.answers["ConsumerGroupHeartbeat"] = scene.coordinator
    poll_until(consumer, lambda: ("join", "member-2") in scene.events)


def test_waiting_inside_a_long_poll_counts_as_polling(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {tp(0)}, epoch=2)
    consumer = scene.consumer(**{"max.poll.interval.ms": 300})
    consumer.subscribe([TOPIC])
    poll_until(consumer, lambda: consumer.assignment() != [])
    assert consumer.poll(1.0) is None  # nothing to read: poll() waits three poll intervals
    assert scene.of_kind("leave") == []
    assert [(item.topic, item.partition) for item in consumer.assignment()] == [tp(0)]


def test_a_fatal_heartbeat_error_comes_out_of_poll_and_heartbeats_stop(scene: Scene) -> None:
    scene.coordinator.fail_next(ErrorCode.GROUP_AUTHORIZATION_FAILED, "not allowed to READ group billing")  # type: ignore[attr-defined]
    consumer = scene.consumer()
    consumer.subscribe([TOPIC])
    events = poll_until(consumer, lambda: bool(scene.coordinator.requests)) + [consumer.poll(0.5)]
    errors = [event.error() for event in events if event is not None and event.error() is not None]
    assert [error.code() for error in errors] == [ErrorCode.GROUP_AUTHORIZATION_FAILED]  # type: ignore[attr-defined]
    assert "not allowed" in errors[0].str()
    sent = len(scene.coordinator.requests)
    consumer.poll(0.3)
    assert len(scene.coordinator.requests) == sent


# ---------------------------------------------------------------------- leaving and moving


def test_close_revokes_commits_and_a_static_member_leaves_for_now(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {tp(2)}, epoch=6)
    scene.log.records[tp(2)] = 1
    consumer = scene.consumer(**{"group.instance.id": "billing-0", "enable.auto.commit": True, "auto.commit.interval.ms": 600000})
    consumer.subscribe([TOPIC], on_revoke=recorder(scene.events, "revoked"))
    poll_until(consumer, lambda: consumer.position([TopicPartition(TOPIC, 2)])[0].offset == 1)
    consumer.close()
    assert scene.coordinator.requests[0].instance_id == "billing-0"
    tail = [event for event in scene.events if event[0] in ("revoked", "commit", "leave")]
    assert tail == [("revoked", [tp(2)]), ("commit", "member-1", 6, {tp(2): 1}), ("leave", "member-1", -2)]


def test_unsubscribe_leaves_and_a_later_subscribe_joins_again(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {tp(0)}, epoch=1)
    consumer = scene.consumer()
    consumer.subscribe([TOPIC], on_revoke=recorder(scene.events, "revoked"))
    poll_until(consumer, lambda: consumer.assignment() != [])
    consumer.unsubscribe()
    assert scene.of_kind("revoked") == [("revoked", [tp(0)])]
    assert scene.of_kind("leave") == [("leave", "member-1", -1)]
    assert consumer.assignment() == []
    consumer.subscribe([TOPIC])
    poll_until(consumer, lambda: ("join", "member-2") in scene.events)


def test_a_moved_coordinator_gets_the_same_member_with_its_full_state() -> None:
    old, new = GroupBroker(1).start(), GroupBroker(2).start()
    consumers: list[Consumer] = []
    try:
        events: list[tuple[Any, ...]] = []
        script = ScriptedCoordinator(events)
        log = RecordLog(events)
        script.assign("member-1", {tp(0)}, epoch=2)
        lookups = {"count": 0}

        def find(request: broker_pb2.FindCoordinatorRequest) -> broker_pb2.FindCoordinatorResponse:
            lookups["count"] += 1
            return coordinator_at(old if lookups["count"] == 1 else new, GROUP)

        for broker in (old, new):
            broker.answers["Metadata"] = lambda request: metadata([old, new], {TOPIC: [(1, 1)]})
            broker.answers["FindCoordinator"] = find
            broker.answers["Fetch"] = log.fetch
            broker.answers["OffsetFetch"] = log.offset_fetch
        old.answers["ConsumerGroupHeartbeat"] = script
        consumer = Consumer(
            {
                "bootstrap.servers": old.address,
                "group.id": GROUP,
                "enable.auto.commit": False,
                "retry.backoff.ms": 10,
                "retry.backoff.max.ms": 50,
                "request.timeout.ms": 3000,
            }
        )
        consumers.append(consumer)
        consumer.subscribe([TOPIC])
        poll_until(consumer, lambda: consumer.assignment() != [])
        new.answers["ConsumerGroupHeartbeat"] = script
        old.answers["ConsumerGroupHeartbeat"] = lambda request: broker_pb2.ConsumerGroupHeartbeatResponse(error_code=ErrorCode.NOT_COORDINATOR)  # type: ignore[attr-defined]
        poll_until(consumer, lambda: bool(new.called("ConsumerGroupHeartbeat")))

        first_at_new = new.called("ConsumerGroupHeartbeat")[0]
        assert (first_at_new.member_id, first_at_new.member_epoch) == ("member-1", 2)
        assert list(first_at_new.subscription.topic_names) == [TOPIC]
        assert first_at_new.HasField("owned") and owned_set(first_at_new.owned) == frozenset({tp(0)})
        assert [(item.topic, item.partition) for item in consumer.assignment()] == [tp(0)]
    finally:
        for consumer in consumers:
            consumer.close()
        old.stop()
        new.stop()


def test_manual_incremental_assign_and_unassign(scene: Scene) -> None:
    scene.log.records.update({tp(0): 2, tp(1): 2})
    consumer = scene.consumer()
    consumer.incremental_assign([TopicPartition(TOPIC, 0, 1)])
    consumer.incremental_assign([TopicPartition(TOPIC, 1, 0)])
    with pytest.raises(KafkaException):
        consumer.incremental_assign([TopicPartition(TOPIC, 1)])
    received = poll_until(
        consumer, lambda: consumer.position([TopicPartition(TOPIC, 1)])[0].offset == 2 and consumer.position([TopicPartition(TOPIC, 0)])[0].offset == 2
    )
    assert sorted(message.value() for message in received if message.error() is None) == [b"orders-0-1", b"orders-1-0", b"orders-1-1"]
    consumer.incremental_unassign([TopicPartition(TOPIC, 0)])
    assert [(item.topic, item.partition) for item in consumer.assignment()] == [tp(1)]
    with pytest.raises(KafkaException):
        consumer.incremental_unassign([TopicPartition(TOPIC, 0)])
    assert scene.coordinator.requests == []
