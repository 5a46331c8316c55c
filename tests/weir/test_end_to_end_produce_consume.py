"""Producer and Consumer against a real broker process: delivery, round trips, partitioning."""

from __future__ import annotations

import pytest

from tests.weir.sdk_support import assigned, consume_all, create_topic
from weir import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer
from weir.message import TIMESTAMP_CREATE_TIME
from weir.partitioner import consistent_partition, murmur2_partition


def test_keyed_and_keyless_records_are_delivered_and_consumed_identically(broker) -> None:
    create_topic(broker.address, "orders", partitions=3)
    reports = []
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 2, "on_delivery": lambda error, message: reports.append((error, message))})
    sent = {}
    for index in range(300):
        key = None if index % 3 == 0 else f"key-{index % 7}"
        headers = [("index", str(index).encode()), ("empty", None)] if index % 2 else None
        timestamp = 1_700_000_000_000 + index
        producer.produce("orders", value=f"value-{index}", key=key, headers=headers, timestamp=timestamp)
        sent[f"value-{index}".encode()] = (key.encode() if key else None, headers, timestamp)
    assert producer.flush(20) == 0
    assert len(producer) == 0
    assert [error for error, _ in reports if error is not None] == []
    assert len(reports) == 300
    offsets = {(message.partition(), message.offset()) for _, message in reports}
    assert len(offsets) == 300 and all(offset >= 0 for _, offset in offsets)

    consumer = assigned(Consumer({"bootstrap.servers": broker.address}), "orders", 3, OFFSET_BEGINNING)
    received = consume_all(consumer, 300)
    consumer.close()
    producer.close()
    assert len(received) == 300
    delivered = {(message.partition(), message.offset()): message.value() for _, message in reports}
    for message in received:
        key, headers, timestamp = sent[message.value()]
        assert message.key() == key
        assert message.headers() == headers
        assert message.timestamp() == (TIMESTAMP_CREATE_TIME, timestamp)
        assert delivered[(message.partition(), message.offset())] == message.value()


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_compression_type_round_trips(broker, codec: str) -> None:
    create_topic(broker.address, "compressed")
    producer = Producer({"bootstrap.servers": broker.address, "compression.type": codec})
    values = [(f"record {index} " * 20).encode() for index in range(200)]
    for value in values:
        producer.produce("compressed", value, key=b"k")
    assert producer.close(20) == 0
    consumer = assigned(Consumer({"bootstrap.servers": broker.address}), "compressed", 1, OFFSET_BEGINNING)
    received = consume_all(consumer, 200)
    consumer.close()
    assert [message.value() for message in received] == values
    assert [message.offset() for message in received] == list(range(200))


def test_keys_land_on_the_partition_the_partitioner_chooses(broker) -> None:
    create_topic(broker.address, "keyed", partitions=5)
    keys = [f"customer-{index}".encode() for index in range(40)]
    # The default (librdkafka's consistent_random: CRC-32), and murmur2_random (Kafka's Java client's).
    for config, choose in (({}, consistent_partition), ({"partitioner": "murmur2_random"}, murmur2_partition)):
        reports: list = []
        producer = Producer({"bootstrap.servers": broker.address, "on_delivery": lambda error, message, reports=reports: reports.append(message), **config})
        for key in keys:
            producer.produce("keyed", b"v", key=key)
        assert producer.close(20) == 0
        assert {message.key(): message.partition() for message in reports} == {key: choose(key, 5) for key in keys}


def test_produce_to_unknown_topic_fails_through_the_callback(broker) -> None:
    reports = []
    producer = Producer({"bootstrap.servers": broker.address})
    producer.produce("missing-topic", b"v", on_delivery=lambda error, message: reports.append((error, message)))
    producer.flush(10)
    producer.close()
    assert len(reports) == 1
    error, message = reports[0]
    assert error.code() == KafkaError._UNKNOWN_TOPIC
    assert message.topic() == "missing-topic" and message.value() == b"v"


def test_produce_to_partition_out_of_range_raises(broker) -> None:
    create_topic(broker.address, "small", partitions=2)
    reports = []
    producer = Producer({"bootstrap.servers": broker.address, "on_delivery": lambda error, message: reports.append(error.code())})
    # As librdkafka: the first record (sent before the topic's metadata is known) fails through
    # its delivery report, later ones raise at once.
    producer.produce("small", b"v", partition=2)
    producer.flush(5)
    with pytest.raises(KafkaException) as raised:
        producer.produce("small", b"v", partition=2)
    producer.close()
    assert reports == [KafkaError._UNKNOWN_PARTITION]
    assert raised.value.error.code() == KafkaError._UNKNOWN_PARTITION


def test_record_above_message_max_bytes_raises(broker) -> None:
    producer = Producer({"bootstrap.servers": broker.address, "message.max.bytes": 1000})
    with pytest.raises(KafkaException) as raised:
        producer.produce("any", b"x" * 2000)
    producer.close()
    assert raised.value.error.code() == KafkaError.MSG_SIZE_TOO_LARGE


def test_acks_zero_reports_offset_minus_one(broker) -> None:
    create_topic(broker.address, "fire-and-forget")
    reports = []
    producer = Producer(
        {
            "bootstrap.servers": broker.address,
            "acks": 0,
            "enable.idempotence": False,
            "on_delivery": lambda error, message: reports.append((error, message.offset())),
        }
    )
    for _ in range(10):
        producer.produce("fire-and-forget", b"v")
    assert producer.close(10) == 0
    assert reports == [(None, -1)] * 10


def test_list_topics_describes_partitions_and_brokers(broker) -> None:
    create_topic(broker.address, "described", partitions=2)
    producer = Producer({"bootstrap.servers": broker.address})
    metadata = producer.list_topics(timeout=10)
    producer.close()
    topic = metadata.topics["described"]
    assert sorted(topic.partitions) == [0, 1]
    assert topic.error is None
    leader = topic.partitions[0].leader
    assert metadata.brokers[leader].port == broker.port
    assert topic.partitions[0].replicas == [leader] and topic.partitions[0].isrs == [leader]


def test_delivery_offsets_are_right_when_only_some_records_have_callbacks(broker) -> None:
    create_topic(broker.address, "sampled", partitions=1)
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 50})
    reported: dict[bytes, int] = {}
    for index in range(3000):
        value = f"record-{index}".encode()
        if index % 1000 == 999:
            producer.produce("sampled", value, on_delivery=lambda error, message: reported.__setitem__(message.value(), message.offset()))
        else:
            producer.produce("sampled", value)
    assert producer.flush(15) == 0
    assert len(producer) == 0
    assert reported == {b"record-999": 999, b"record-1999": 1999, b"record-2999": 2999}
