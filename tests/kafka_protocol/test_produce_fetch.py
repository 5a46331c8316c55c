"""Stock Kafka clients produce and consume through a broker's Kafka listener (no groups: assign).

librdkafka (confluent-kafka) with every compression codec and idempotence, kafka-python and
aiokafka; records cross between the Kafka door and the gRPC SDK byte for byte (key, value,
headers, timestamp). The broker is a real in-process broker serving both listeners on
loopback; clients connect with PLAINTEXT (a standalone broker has no credentials).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import Producer as KafkaProducer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from tests.support.in_process_broker import InProcessBroker
from weir.consumer import Consumer as WeirConsumer
from weir.message import TopicPartition as WeirTopicPartition
from weir.producer import Producer as WeirProducer

pytestmark = pytest.mark.timeout(120)

CLIENT_SECONDS = 20.0  # the longest any client call or read loop may take
BASE_TIMESTAMP_MS = 1_700_000_000_000


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    server = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1", "kafka.listen": "127.0.0.1:0"}).start()
    yield server
    server.stop()


def kafka_address(broker: InProcessBroker) -> str:
    assert broker.running is not None
    return f"127.0.0.1:{broker.running.kafka_port}"


def create_topic(broker: InProcessBroker, name: str, partitions: int = 1) -> None:
    broker.broker.topic_admin.create_topic(name, partitions, 1, {})


def expected_records(count: int, tag: str) -> list[tuple[bytes, bytes, list[tuple[str, bytes]], int]]:
    return [
        (f"key-{tag}-{index}".encode(), f"value-{tag}-{index}".encode() * 3, [("trace", f"t{index}".encode())], BASE_TIMESTAMP_MS + index)
        for index in range(count)
    ]


def librdkafka_produce(broker: InProcessBroker, topic: str, records, **config: object) -> list[int]:
    """Produce with confluent-kafka; the offsets the broker acknowledged, in order."""
    reports: list[tuple[object, int]] = []
    producer = KafkaProducer({"bootstrap.servers": kafka_address(broker), "message.timeout.ms": int(CLIENT_SECONDS * 1000), **config})
    for key, value, headers, timestamp in records:
        producer.produce(
            topic, key=key, value=value, headers=headers, timestamp=timestamp, on_delivery=lambda error, message: reports.append((error, message.offset()))
        )
    assert producer.flush(CLIENT_SECONDS) == 0
    assert [error for error, _ in reports if error is not None] == []
    return [offset for _, offset in reports]


def librdkafka_consume(broker: InProcessBroker, topic: str, count: int, partition: int = 0) -> list[tuple[bytes, bytes, list[tuple[str, bytes]], int]]:
    consumer = KafkaConsumer({"bootstrap.servers": kafka_address(broker), "group.id": "assign-only", "enable.auto.commit": False})
    consumer.assign([KafkaTopicPartition(topic, partition, 0)])
    return read_assigned(consumer, count)


def read_assigned(consumer, count: int) -> list[tuple[bytes, bytes, list[tuple[str, bytes]], int]]:  # type: ignore[no-untyped-def]
    """Up to ``count`` records from an assigned consumer (librdkafka's or the SDK's: one API), bounded in time; closes it."""
    read = []
    deadline = time.monotonic() + CLIENT_SECONDS
    try:
        while len(read) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            read.append((message.key(), message.value(), list(message.headers() or []), message.timestamp()[1]))
    finally:
        consumer.close()
    return read


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_librdkafka_idempotent_acks_all_producer_and_assigned_consumer(broker, codec):
    create_topic(broker, "events")
    records = expected_records(50, codec)
    offsets = librdkafka_produce(broker, "events", records, **{"enable.idempotence": True, "acks": "all", "compression.type": codec, "linger.ms": 5})
    assert offsets == list(range(50))
    assert librdkafka_consume(broker, "events", 50) == records


def test_librdkafka_acks_zero_producer_is_served_without_responses(broker):
    create_topic(broker, "fire-and-forget")
    records = expected_records(20, "acks0")
    librdkafka_produce(broker, "fire-and-forget", records, acks=0)
    assert librdkafka_consume(broker, "fire-and-forget", 20) == records


def test_librdkafka_metadata_lists_the_topics_and_this_broker(broker):
    create_topic(broker, "listed", partitions=3)
    producer = KafkaProducer({"bootstrap.servers": kafka_address(broker)})
    metadata = producer.list_topics(timeout=CLIENT_SECONDS)
    assert sorted(metadata.topics["listed"].partitions) == [0, 1, 2]
    assert [(node.id, f"{node.host}:{node.port}") for node in metadata.brokers.values()] == [(broker.broker.config.node_id, kafka_address(broker))]
    assert metadata.topics["listed"].partitions[0].leader == broker.broker.config.node_id


def test_kafka_python_produces_and_consumes_with_assign(broker):
    from kafka import KafkaConsumer as PyConsumer
    from kafka import KafkaProducer as PyProducer
    from kafka import TopicPartition as PyTopicPartition

    create_topic(broker, "py")
    records = expected_records(10, "py")
    producer = PyProducer(bootstrap_servers=kafka_address(broker), acks="all", compression_type="gzip", request_timeout_ms=int(CLIENT_SECONDS * 1000))
    futures = [producer.send("py", key=key, value=value, headers=headers, timestamp_ms=timestamp) for key, value, headers, timestamp in records]
    assert [future.get(timeout=CLIENT_SECONDS).offset for future in futures] == list(range(10))
    producer.close(timeout=CLIENT_SECONDS)
    consumer = PyConsumer(bootstrap_servers=kafka_address(broker), enable_auto_commit=False, consumer_timeout_ms=int(CLIENT_SECONDS * 1000))
    consumer.assign([PyTopicPartition("py", 0)])
    consumer.seek_to_beginning()
    read = []
    for message in consumer:
        read.append((message.key, message.value, list(message.headers), message.timestamp))
        if len(read) == 10:
            break
    consumer.close()
    assert read == records


def test_aiokafka_produces_and_consumes_with_assign(broker):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition as AioTopicPartition

    create_topic(broker, "aio")
    records = expected_records(10, "aio")

    async def run() -> list[tuple[bytes, bytes, list[tuple[str, bytes]], int]]:
        producer = AIOKafkaProducer(bootstrap_servers=kafka_address(broker), enable_idempotence=True, compression_type="lz4")
        await producer.start()
        try:
            sent = [
                await producer.send_and_wait("aio", key=key, value=value, headers=headers, timestamp_ms=timestamp) for key, value, headers, timestamp in records
            ]
            assert [metadata.offset for metadata in sent] == list(range(10))
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=kafka_address(broker), enable_auto_commit=False)
        await consumer.start()
        try:
            partition = AioTopicPartition("aio", 0)
            consumer.assign([partition])
            await consumer.seek_to_beginning(partition)
            read = []
            while len(read) < 10:
                message = await asyncio.wait_for(consumer.getone(), CLIENT_SECONDS)
                read.append((message.key, message.value, list(message.headers), message.timestamp))
            return read
        finally:
            await consumer.stop()

    assert asyncio.run(asyncio.wait_for(run(), CLIENT_SECONDS * 3)) == records


def weir_consume(broker: InProcessBroker, topic: str, count: int) -> list[tuple[bytes, bytes, list[tuple[str, bytes]], int]]:
    consumer = WeirConsumer({"bootstrap.servers": f"127.0.0.1:{broker.port}"})
    consumer.assign([WeirTopicPartition(topic, 0, 0)])
    return read_assigned(consumer, count)


def test_records_produced_through_kafka_are_read_by_the_sdk_and_the_reverse(broker):
    create_topic(broker, "kafka-to-sdk")
    create_topic(broker, "sdk-to-kafka")
    through_kafka = expected_records(15, "k")
    librdkafka_produce(broker, "kafka-to-sdk", through_kafka, **{"enable.idempotence": True, "compression.type": "zstd"})
    assert weir_consume(broker, "kafka-to-sdk", 15) == through_kafka

    through_sdk = expected_records(15, "s")
    producer = WeirProducer({"bootstrap.servers": f"127.0.0.1:{broker.port}", "compression.type": "snappy"})
    for key, value, headers, timestamp in through_sdk:
        producer.produce("sdk-to-kafka", key=key, value=value, headers=headers, timestamp=timestamp)
    assert producer.flush(CLIENT_SECONDS) == 0
    assert librdkafka_consume(broker, "sdk-to-kafka", 15) == through_sdk
    # The same bytes on disk whichever door wrote them: each door reads the other's batches unchanged.
    assert weir_consume(broker, "sdk-to-kafka", 15) == through_sdk
