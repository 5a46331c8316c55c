"""The consumer's confluent-kafka semantics against a scripted broker (an in-process gRPC server per test).

assign() inside on_assign (the eager protocol's way to choose start offsets), a subscribed
topic that does not exist reported through poll() as UNKNOWN_TOPIC_OR_PART, commit metadata
returned by committed(), store_offsets() refused while enable.auto.offset.store is on, and
the consumer's statistics.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.weir.scripted_broker import coordinator_at, metadata
from tests.weir.scripted_groups import GroupBroker, RecordLog, ScriptedCoordinator
from tests.weir.test_group_membership import poll_until, wait_until
from weir import Consumer, KafkaError, KafkaException, TopicPartition
from weir.errors import ErrorCode

GROUP = "billing"
TOPIC = "orders"


class Scene:
    """One scripted broker as bootstrap, leader and coordinator; topics other than TOPIC do not exist."""

    def __init__(self, broker: GroupBroker) -> None:
        self.broker = broker
        self.coordinator = ScriptedCoordinator()
        self.log = RecordLog()
        broker.answers["Metadata"] = self._metadata
        broker.answers["FindCoordinator"] = lambda request: coordinator_at(broker, GROUP)
        broker.answers["ConsumerGroupHeartbeat"] = self.coordinator
        broker.answers["Fetch"] = self.log.fetch
        broker.answers["OffsetFetch"] = self.log.offset_fetch
        broker.answers["OffsetCommit"] = self.log.offset_commit
        broker.answers["ListOffsets"] = self.log.list_offsets
        self.consumers: list[Consumer] = []

    def _metadata(self, request: broker_pb2.MetadataRequest) -> broker_pb2.MetadataResponse:
        response = metadata([self.broker], {TOPIC: [(self.broker.node_id, 1)] * 2})
        for name in request.topics:
            if name != TOPIC:
                response.topics.append(broker_pb2.TopicMetadata(name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        return response

    def consumer(self, **extra: object) -> Consumer:
        consumer = Consumer(
            {
                "bootstrap.servers": self.broker.address,
                "group.id": GROUP,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "heartbeat.interval.ms": 50,
                "retry.backoff.ms": 10,
                "retry.backoff.max.ms": 50,
                **extra,
            }
        )
        self.consumers.append(consumer)
        return consumer


@pytest.fixture
def scene() -> Iterator[Scene]:
    broker = GroupBroker(1).start()
    scene = Scene(broker)
    try:
        yield scene
    finally:
        for consumer in scene.consumers:
            consumer.close()
        broker.stop()


def test_assign_inside_on_assign_sets_the_start_offsets(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {(TOPIC, 0), (TOPIC, 1)}, epoch=1)
    scene.log.records[(TOPIC, 0)] = 5
    scene.log.records[(TOPIC, 1)] = 5
    consumer = scene.consumer()
    assigned: list[list[TopicPartition]] = []

    def on_assign(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for partition in partitions:
            partition.offset = 3
        consumer.assign(partitions)  # confluent-kafka's eager protocol: raises nothing
        assigned.append(partitions)

    consumer.subscribe([TOPIC], on_assign=on_assign)
    both = [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)]
    polled = poll_until(consumer, lambda: all(tp.offset == 5 for tp in consumer.position(both)))
    messages = [message for message in polled if message.error() is None]
    assert len(assigned) == 1
    assert sorted((message.partition(), message.offset()) for message in messages) == [(0, 3), (0, 4), (1, 3), (1, 4)]


def test_subscribing_to_a_missing_topic_reports_unknown_topic_once(scene: Scene) -> None:
    consumer = scene.consumer()
    consumer.subscribe(["no-such-topic", TOPIC])
    message = consumer.poll(2.0)
    assert message is not None and message.error() is not None
    assert message.error().code() == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert message.topic() == "no-such-topic" and "no-such-topic" in message.error().str()
    events = [consumer.poll(0.05) for _ in range(5)]
    assert not [event for event in events if event is not None and event.error() is not None]


def test_with_allow_auto_create_topics_a_missing_subscribed_topic_is_asked_to_be_created(scene: Scene) -> None:
    # The broker creates it (through the controller) and answers LEADER_NOT_AVAILABLE meanwhile:
    # nothing to report, as librdkafka reports nothing for a topic being created.
    usual = scene.broker.answers["Metadata"]
    asked: list[bool] = []

    def being_created(request: broker_pb2.MetadataRequest) -> broker_pb2.MetadataResponse:
        if "fresh" not in request.topics:
            return usual(request)
        asked.append(request.allow_auto_topic_creation)
        response = metadata([scene.broker], {TOPIC: [(scene.broker.node_id, 1)] * 2})
        code = ErrorCode.LEADER_NOT_AVAILABLE if request.allow_auto_topic_creation else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        response.topics.append(broker_pb2.TopicMetadata(name="fresh", error_code=code))
        return response

    scene.broker.answers["Metadata"] = being_created
    consumer = scene.consumer(**{"allow.auto.create.topics": True})
    consumer.subscribe(["fresh"])
    events = [consumer.poll(0.1) for _ in range(5)]
    assert not [event for event in events if event is not None and event.error() is not None]
    assert asked and all(asked)


def test_commit_metadata_comes_back_from_committed(scene: Scene) -> None:
    consumer = scene.consumer()
    consumer.assign([TopicPartition(TOPIC, 0)])
    consumer.commit(offsets=[TopicPartition(TOPIC, 0, 7, "checkpoint-42")], asynchronous=False)
    (committed,) = consumer.committed([TopicPartition(TOPIC, 0)], timeout=5)
    assert (committed.offset, committed.metadata) == (7, "checkpoint-42")
    # On the wire as confluent-kafka commits it: with its C string's terminator.
    assert scene.log.commits[-1].topics[0].partitions[0].metadata == "checkpoint-42\x00"


@pytest.mark.parametrize("metadata, on_the_wire", [(None, ""), ("", "\x00"), ("नमस्ते", "नमस्ते\x00")])
def test_committed_tells_empty_metadata_from_none_as_confluent_kafka(scene: Scene, metadata: str | None, on_the_wire: str) -> None:
    consumer = scene.consumer()
    consumer.commit(offsets=[TopicPartition(TOPIC, 0, 3, metadata)], asynchronous=False)
    assert scene.log.commits[-1].topics[0].partitions[0].metadata == on_the_wire
    (committed,) = consumer.committed([TopicPartition(TOPIC, 0)], timeout=5)
    assert committed.metadata == metadata


def test_commit_metadata_codec_reads_other_clients_strings() -> None:
    from weir.commit_metadata import decode_commit_metadata, encode_commit_metadata

    assert decode_commit_metadata("written by java") == "written by java"  # no terminator: the whole string
    assert decode_commit_metadata("") is None
    with pytest.raises(ValueError, match="embedded null"):
        encode_commit_metadata("xyz\x00abc")


def test_store_offsets_with_auto_store_on_is_an_invalid_argument(scene: Scene) -> None:
    consumer = scene.consumer()
    consumer.assign([TopicPartition(TOPIC, 0)])
    with pytest.raises(KafkaException) as raised:
        consumer.store_offsets(offsets=[TopicPartition(TOPIC, 0, 3)])
    assert raised.value.args[0].code() == KafkaError._INVALID_ARG
    assert "enable.auto.offset.store" in raised.value.args[0].str()
    manual = scene.consumer(**{"enable.auto.offset.store": False})
    manual.assign([TopicPartition(TOPIC, 0)])
    manual.store_offsets(offsets=[TopicPartition(TOPIC, 0, 3)])


def test_stats_cb_reports_consumed_records_lag_and_the_group(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {(TOPIC, 0)}, epoch=1)
    scene.log.records[(TOPIC, 0)] = 4
    emitted: list[dict] = []
    consumer = scene.consumer(**{"stats_cb": lambda text: emitted.append(json.loads(text)), "statistics.interval.ms": 100})
    consumer.subscribe([TOPIC])
    poll_until(consumer, lambda: consumer.position([TopicPartition(TOPIC, 0)])[0].offset == 4)
    seen = len(emitted)
    poll_until(consumer, lambda: len(emitted) > seen)
    last = emitted[-1]
    assert last["type"] == "consumer" and last["rxmsgs"] == 4 and last["rx"] >= 1
    assert last["cgrp"]["state"] == "up" and last["cgrp"]["assignment_size"] == 1
    partition = last["topics"][TOPIC]["partitions"]["0"]
    assert (partition["rxmsgs"], partition["next_offset"], partition["hi_offset"], partition["consumer_lag"]) == (4, 4, 4, 0)


def test_throttle_cb_gets_fetch_throttle_time(scene: Scene) -> None:
    events = []
    fetch = scene.log.fetch

    def throttled_fetch(request: broker_pb2.FetchRequest) -> broker_pb2.FetchResponse:
        response = fetch(request)
        response.throttle_time_ms = 40
        return response

    scene.broker.answers["Fetch"] = throttled_fetch
    consumer = scene.consumer(throttle_cb=events.append)
    consumer.assign([TopicPartition(TOPIC, 0)])
    poll_until(consumer, lambda: bool(events))
    assert (events[0].broker_id, events[0].throttle_time) == (1, 0.04)


def test_an_asynchronous_commit_of_nothing_reports_no_offset_to_on_commit(scene: Scene) -> None:
    results = []
    consumer = scene.consumer(
        on_commit=lambda error, partitions: results.append((error.code() if error else None, [(tp.topic, tp.partition) for tp in partitions]))
    )
    consumer.assign([TopicPartition(TOPIC, 0)])
    assert consumer.commit(asynchronous=True) is None
    consumer.poll(0)
    assert results == [(KafkaError._NO_OFFSET, [(TOPIC, 0)])]
    with pytest.raises(KafkaException) as raised:
        consumer.commit(asynchronous=False)
    assert raised.value.args[0].code() == KafkaError._NO_OFFSET


def test_max_poll_exceeded_comes_first_and_the_partitions_are_revoked_at_the_next_poll(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {(TOPIC, 0)}, epoch=1)
    revoked: list[list[tuple[str, int]]] = []
    consumer = scene.consumer(**{"max.poll.interval.ms": 300})
    consumer.subscribe([TOPIC], on_revoke=lambda consumer, partitions: revoked.append([(tp.topic, tp.partition) for tp in partitions]))
    poll_until(consumer, lambda: consumer.assignment() != [])
    wait_until(lambda: any(request.member_epoch == -1 for request in scene.coordinator.requests), timeout=5)  # left after the interval
    event = consumer.poll(1.0)
    assert event is not None and event.error() is not None and event.error().code() == KafkaError._MAX_POLL_EXCEEDED
    assert revoked == []  # as librdkafka: the partitions go at the next poll()
    consumer.poll(0.1)
    assert revoked == [[(TOPIC, 0)]]


def test_incremental_assign_of_an_assigned_partition_is_a_conflict(scene: Scene) -> None:
    consumer = scene.consumer()
    consumer.incremental_assign([TopicPartition(TOPIC, 0)])
    with pytest.raises(KafkaException) as raised:
        consumer.incremental_assign([TopicPartition(TOPIC, 0)])
    assert raised.value.args[0].code() == KafkaError._CONFLICT
    with pytest.raises(KafkaException) as raised:
        consumer.incremental_unassign([TopicPartition(TOPIC, 1)])
    assert raised.value.args[0].code() == KafkaError._INVALID_ARG


def test_eager_style_callbacks_assign_and_unassign_everything_they_are_given(scene: Scene) -> None:
    scene.coordinator.assign("member-1", {(TOPIC, 0), (TOPIC, 1)}, epoch=1)
    scene.log.records[(TOPIC, 0)] = 2
    consumer = scene.consumer()
    revoked: list[list[TopicPartition]] = []

    def on_revoke(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked.append(partitions)
        consumer.unassign()  # what confluent-kafka's eager examples do

    consumer.subscribe([TOPIC], on_assign=lambda consumer, partitions: consumer.assign(partitions), on_revoke=on_revoke)
    poll_until(consumer, lambda: len(consumer.assignment()) == 2)
    scene.coordinator.assign("member-1", {(TOPIC, 1)}, epoch=2)
    poll_until(consumer, lambda: bool(revoked))
    assert [(tp.topic, tp.partition) for tp in revoked[0]] == [(TOPIC, 0)]
    assert [(tp.topic, tp.partition) for tp in consumer.assignment()] == [(TOPIC, 1)]  # the partition kept is still fetched
