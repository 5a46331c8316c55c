"""Consumer positions against a real broker: commits, seek, resets, timestamps, end of partition,
consume()'s batches. One broker for the module: each test has its own topics and groups."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.support.processes import BrokerProcess
from tests.weir.sdk_support import assigned, consume_all, create_topic
from weir import OFFSET_BEGINNING, OFFSET_INVALID, Consumer, KafkaError, Producer, TopicPartition
from weir.consumer import consume_available

BASE_TIME = 1_700_000_000_000


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path_factory.mktemp("consumer-broker") / "data").start()
    try:
        yield process
    finally:
        process.stop()


def load(address: str, topic: str, count: int, partitions: int = 1) -> None:
    create_topic(address, topic, partitions)
    producer = Producer({"bootstrap.servers": address})
    for index in range(count):
        producer.produce(topic, f"value-{index}", partition=index % partitions, timestamp=BASE_TIME + index * 1000)
    assert producer.close(20) == 0


def test_commit_committed_and_position_round_trip_across_consumers(broker) -> None:
    load(broker.address, "events", 50)
    config = {"bootstrap.servers": broker.address, "group.id": "billing", "enable.auto.commit": False}
    first = assigned(Consumer(config), "events", 1, OFFSET_BEGINNING)
    received = consume_all(first, 20)[:20]
    first.commit(message=received[-1], asynchronous=False)
    partition = TopicPartition("events", 0)
    assert first.committed([partition], timeout=10)[0].offset == received[-1].offset() + 1
    first.close()

    second = Consumer(config)
    second.assign([TopicPartition("events", 0)])
    rest = consume_all(second, 50 - (received[-1].offset() + 1))
    assert rest[0].offset() == received[-1].offset() + 1
    assert rest[-1].offset() == 49
    assert second.position([partition])[0].offset == 50
    second.commit(asynchronous=False)
    assert second.committed([partition], timeout=10)[0].offset == 50
    second.close()


def test_committed_without_commit_is_invalid(broker) -> None:
    load(broker.address, "quiet", 1)
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "nobody"})
    assert consumer.committed([TopicPartition("quiet", 0)], timeout=10)[0].offset == OFFSET_INVALID
    consumer.close()


def test_close_commits_consumed_offsets_with_auto_commit(broker) -> None:
    load(broker.address, "auto", 10)
    config = {"bootstrap.servers": broker.address, "group.id": "auto-group"}
    consumer = assigned(Consumer(config), "auto", 1, OFFSET_BEGINNING)
    assert len(consume_all(consumer, 10)) == 10
    consumer.close()
    checker = Consumer(config)
    assert checker.committed([TopicPartition("auto", 0)], timeout=10)[0].offset == 10
    checker.close()


def test_seek_moves_the_next_message(broker) -> None:
    load(broker.address, "seekable", 30)
    consumer = assigned(Consumer({"bootstrap.servers": broker.address}), "seekable", 1, OFFSET_BEGINNING)
    assert len(consume_all(consumer, 30)) == 30
    consumer.seek(TopicPartition("seekable", 0, 7))
    again = consume_all(consumer, 23)
    consumer.close()
    assert [message.offset() for message in again] == list(range(7, 30))


def test_offsets_for_times_finds_the_first_record_at_or_after(broker) -> None:
    load(broker.address, "timed", 10)
    consumer = Consumer({"bootstrap.servers": broker.address})
    found = consumer.offsets_for_times([TopicPartition("timed", 0, BASE_TIME + 4500)], timeout=10)
    past_end = consumer.offsets_for_times([TopicPartition("timed", 0, BASE_TIME + 999_999)], timeout=10)
    watermarks = consumer.get_watermark_offsets(TopicPartition("timed", 0), timeout=10)
    consumer.close()
    assert found[0].offset == 5
    assert past_end[0].offset == -1
    assert watermarks == (0, 10)


def test_auto_offset_reset_earliest_and_latest(broker) -> None:
    load(broker.address, "resets", 5)
    earliest = Consumer({"bootstrap.servers": broker.address, "group.id": "fresh-1", "auto.offset.reset": "earliest"})
    earliest.assign([TopicPartition("resets", 0)])
    assert [message.offset() for message in consume_all(earliest, 5)] == [0, 1, 2, 3, 4]
    earliest.close()

    latest = Consumer({"bootstrap.servers": broker.address, "group.id": "fresh-2", "auto.offset.reset": "latest"})
    latest.assign([TopicPartition("resets", 0)])
    assert latest.consume(10, 1.0) == []
    producer = Producer({"bootstrap.servers": broker.address})
    producer.produce("resets", b"after")
    producer.close(10)
    received = consume_all(latest, 1)
    latest.close()
    assert [(message.offset(), message.value()) for message in received] == [(5, b"after")]


def test_out_of_range_offset_resets_per_policy(broker) -> None:
    load(broker.address, "ranged", 5)
    consumer = Consumer({"bootstrap.servers": broker.address, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("ranged", 0, 1000)])
    assert [message.offset() for message in consume_all(consumer, 5)] == [0, 1, 2, 3, 4]
    consumer.close()


def test_out_of_range_offset_with_reset_error_gives_an_error_message(broker) -> None:
    load(broker.address, "strict", 2)
    consumer = Consumer({"bootstrap.servers": broker.address, "auto.offset.reset": "error"})
    consumer.assign([TopicPartition("strict", 0, 1000)])
    message = consumer.poll(10)
    consumer.close()
    assert message is not None and message.error().code() == KafkaError._AUTO_OFFSET_RESET


def test_partition_eof_is_reported_once_at_the_end(broker) -> None:
    load(broker.address, "finite", 3)
    consumer = Consumer({"bootstrap.servers": broker.address, "enable.partition.eof": True})
    consumer.assign([TopicPartition("finite", 0, OFFSET_BEGINNING)])
    events = []
    for _ in range(40):
        events += consumer.consume(10, 0.2)
        if any(event.error() for event in events):
            break
    consumer.close()
    assert [event.offset() for event in events if event.error() is None] == [0, 1, 2]
    eof = [event for event in events if event.error() is not None]
    assert len(eof) == 1 and eof[0].error().code() == KafkaError._PARTITION_EOF


def test_paused_partition_is_not_consumed_until_resumed(broker) -> None:
    load(broker.address, "pausable", 4)
    consumer = Consumer({"bootstrap.servers": broker.address})
    # An explicit start offset: OFFSET_END is resolved asynchronously (as in confluent-kafka)
    # and could land after the record below.
    partition = TopicPartition("pausable", 0, 4)
    consumer.assign([partition])
    consumer.pause([partition])
    producer = Producer({"bootstrap.servers": broker.address})
    producer.produce("pausable", b"late")
    producer.close(10)
    assert consumer.consume(10, 0.5) == []
    consumer.resume([partition])
    received = consume_all(consumer, 1)
    consumer.close()
    assert [message.value() for message in received] == [b"late"]


@pytest.mark.parametrize("enabled_by_application", [True, False])
def test_consume_leaves_the_garbage_collector_as_the_application_set_it(broker, enabled_by_application: bool) -> None:
    import gc

    topic = f"collected-{enabled_by_application}"
    load(broker.address, topic, 50)
    consumer = assigned(Consumer({"bootstrap.servers": broker.address}), topic, 1, OFFSET_BEGINNING)
    was_enabled = gc.isenabled()
    (gc.enable if enabled_by_application else gc.disable)()
    try:
        received = consume_all(consumer, 50)
        assert gc.isenabled() is enabled_by_application
    finally:
        (gc.enable if was_enabled else gc.disable)()
        consumer.close()
    assert len(received) == 50


def test_consume_waits_to_fill_its_batch_as_librdkafka_and_consume_available_does_not(broker) -> None:
    load(broker.address, "batches", 3)
    consumer = Consumer({"bootstrap.servers": broker.address})
    consumer.assign([TopicPartition("batches", 0, OFFSET_BEGINNING)])
    assert [message.offset() for message in consume_available(consumer, 1, 10)] == [0]
    started = time.monotonic()
    assert [message.offset() for message in consumer.consume(1, 10)] == [1]  # full batch: returns at once
    assert time.monotonic() - started < 5
    started = time.monotonic()
    assert [message.offset() for message in consumer.consume(5, 0.4)] == [2]  # one of five: waits out the timeout
    assert time.monotonic() - started >= 0.4
    producer = Producer({"bootstrap.servers": broker.address})
    producer.produce("batches", "more")
    assert producer.close(20) == 0
    started = time.monotonic()
    taken = consume_available(consumer, 100, 10)  # what is there once one came: no wait for 100
    assert time.monotonic() - started < 5
    assert [message.value() for message in taken][-1:] == [b"more"] and all(message.error() is None for message in taken)
    consumer.close()
