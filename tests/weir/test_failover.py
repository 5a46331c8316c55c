"""Producers and consumers fail over by themselves when a partition's leader moves or its broker stops.

Three in-process brokers replicate one topic (tests/broker_nodes/replication/cluster.py);
``apply`` pushes the cluster map the controller would push after an election. Every test
checks the outcome a user relies on: each record delivered exactly once, in order, and a
consumer reading on from where it was, without gaps or repeats.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.broker_nodes.replication.cluster import TENANT, TOPIC, ReplicatedCluster
from tests.broker_nodes.security.managed_cluster import tenant_token
from tests.weir.scripted_broker import ScriptedBroker, metadata
from tests.weir.sdk_support import assigned, consume_all
from weir import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer, TopicPartition
from weir.errors import ErrorCode
from weir.records import assign_offsets, build_batch

RECORDS = 400


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    running = ReplicatedCluster(tmp_path, topic_configs={"min.insync.replicas": "2"})
    try:
        running.apply(leader=1, epoch=1)
        yield running
    finally:
        running.stop()


@pytest.fixture
def config(cluster: ReplicatedCluster) -> dict[str, object]:
    """Client settings: every broker in bootstrap.servers (those a test stops later included), acting as the cluster's tenant."""
    return {
        "bootstrap.servers": ",".join(f"127.0.0.1:{node.port}" for node in cluster.nodes.values()),
        "weir.tenant.token": tenant_token(TENANT),
        "retry.backoff.ms": 20,
        "retry.backoff.max.ms": 200,
        "request.timeout.ms": 5000,
    }


class Deliveries:
    """Delivery reports, collected from poll() and flush()."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: list[bytes] = []
        self.errors: list[KafkaError] = []

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        with self.lock:
            if error is None:
                self.values.append(message.value())
            else:
                self.errors.append(error)


def _producer(config: dict[str, object], deliveries: Deliveries) -> Producer:
    return Producer({**config, "enable.idempotence": True, "linger.ms": 2, "batch.num.messages": 10, "delivery.timeout.ms": 60000, "on_delivery": deliveries})


def _produce(producer: Producer, values: range) -> None:
    for index in values:
        producer.produce(TOPIC, b"record-%d" % index, partition=0)
        producer.poll(0)


def _read_everything(config: dict[str, object], expected: int) -> list[Message]:
    consumer = assigned(Consumer({**config, "enable.auto.commit": False}), TOPIC, 1, OFFSET_BEGINNING)
    try:
        received = consume_all(consumer, expected, timeout=30)
        assert consumer.consume(100, 0.5) == []  # nothing beyond the expected count: no duplicates
    finally:
        consumer.close()
    return received


def _expected(count: int) -> list[bytes]:
    return [b"record-%d" % index for index in range(count)]


def test_producer_keeps_producing_across_a_leader_move_exactly_once_in_order(cluster: ReplicatedCluster, config: dict[str, object]) -> None:
    deliveries = Deliveries()
    producer = _producer(config, deliveries)
    _produce(producer, range(RECORDS // 2))
    cluster.apply(leader=2, epoch=2)  # while batches are queued and in flight
    _produce(producer, range(RECORDS // 2, RECORDS))
    assert producer.flush(60) == 0
    producer.close()

    assert deliveries.errors == []
    assert sorted(deliveries.values) == sorted(_expected(RECORDS))
    received = _read_everything(config, RECORDS)
    assert [message.value() for message in received] == _expected(RECORDS)
    assert [message.offset() for message in received] == list(range(RECORDS))


def test_producer_fails_over_from_a_stopped_leader_exactly_once_in_order(cluster: ReplicatedCluster, config: dict[str, object]) -> None:
    deliveries = Deliveries()
    producer = _producer(config, deliveries)
    _produce(producer, range(RECORDS // 2))
    cluster.nodes[1].stop()
    cluster.apply(leader=2, epoch=2, isr=[2, 3], to=[2, 3])
    _produce(producer, range(RECORDS // 2, RECORDS))
    assert producer.flush(60) == 0
    producer.close()

    assert deliveries.errors == []
    received = _read_everything(config, RECORDS)
    assert [message.value() for message in received] == _expected(RECORDS)


def test_consumer_reads_on_at_the_new_leader_without_gaps_or_repeats(cluster: ReplicatedCluster, config: dict[str, object]) -> None:
    deliveries = Deliveries()
    producer = _producer(config, deliveries)
    _produce(producer, range(100))
    assert producer.flush(30) == 0
    consumer = assigned(Consumer({**config, "enable.auto.commit": False}), TOPIC, 1, OFFSET_BEGINNING)
    try:
        received = consume_all(consumer, 40)
        cluster.apply(leader=2, epoch=2)  # the old leader now refuses fetches
        _produce(producer, range(100, 200))
        assert producer.flush(30) == 0
        received += consume_all(consumer, 200 - len(received))
        assert consumer.consume(100, 0.5) == []
    finally:
        consumer.close()
        producer.close()

    assert [message.offset() for message in received] == list(range(200))
    assert [message.value() for message in received] == _expected(200)


def test_consumer_reads_on_after_its_leader_stopped(cluster: ReplicatedCluster, config: dict[str, object]) -> None:
    deliveries = Deliveries()
    producer = _producer(config, deliveries)
    _produce(producer, range(100))
    assert producer.flush(30) == 0
    consumer = assigned(Consumer({**config, "enable.auto.commit": False}), TOPIC, 1, OFFSET_BEGINNING)
    try:
        received = consume_all(consumer, 30)
        cluster.nodes[1].stop()  # cuts the consumer's long poll
        cluster.apply(leader=2, epoch=2, isr=[2, 3], to=[2, 3])
        _produce(producer, range(100, 200))  # only the new leader has these
        assert producer.flush(30) == 0
        received += consume_all(consumer, 200 - len(received))
        assert consumer.consume(100, 0.5) == []
    finally:
        consumer.close()
        producer.close()

    assert deliveries.errors == []
    assert [message.offset() for message in received] == list(range(200))
    assert [message.value() for message in received] == _expected(200)


def test_fetch_carries_the_cached_leader_epoch_and_refreshes_when_fenced() -> None:
    broker = ScriptedBroker(1).start()
    epochs = iter([7, 8])
    broker.answers["Metadata"] = lambda request: metadata([broker], {"orders": [(1, next(epochs, 8))]})
    records = bytearray(build_batch([(1_700_000_000_000, None, b"v%d" % index, None) for index in range(3)]))
    assign_offsets(records, 0, 0, 8)
    answers = iter(
        [
            broker_pb2.FetchPartitionResponse(partition=0, error_code=ErrorCode.FENCED_LEADER_EPOCH, high_watermark=-1),  # type: ignore[attr-defined]
            broker_pb2.FetchPartitionResponse(partition=0, high_watermark=3, log_start_offset=0, records=bytes(records)),
        ]
    )

    def fetch(request: broker_pb2.FetchRequest) -> broker_pb2.FetchResponse:
        answer = next(answers, broker_pb2.FetchPartitionResponse(partition=0, high_watermark=3, log_start_offset=0))
        return broker_pb2.FetchResponse(topics=[broker_pb2.FetchTopicResponse(topic="orders", partitions=[answer])])

    broker.answers["Fetch"] = fetch
    consumer = Consumer({"bootstrap.servers": broker.address, "retry.backoff.ms": 10, "retry.backoff.max.ms": 50, "fetch.wait.max.ms": 10})
    try:
        consumer.assign([TopicPartition("orders", 0, 0)])
        received = consume_all(consumer, 3)
    finally:
        consumer.close()
        broker.stop()

    assert [message.offset() for message in received] == [0, 1, 2]
    fetches = [request.topics[0].partitions[0] for request in broker.called("Fetch")]
    assert [(fetch.fetch_offset, fetch.current_leader_epoch) for fetch in fetches[:2]] == [(0, 7), (0, 8)]
