"""Crash safety with real broker processes: kill -9, torn tails, lost indexes, flipped bytes.

Each test damages a stopped broker's files the way a crash or a bad disk would, restarts
the process and checks that every record before the damage is served, nothing after it
is, the broker says what it dropped, and new appends continue from the right offset.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from log_formats.log_files import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, parse_segment_file_name
from tests.support.processes import BrokerProcess
from tests.support.raw_client import RawBroker
from tests.support.waiting import wait_until
from weir import records
from weir.consumer import consume_available

# Small segments so that a few hundred batches span several files.
SMALL_SEGMENTS = {"segment.bytes": "65536", "index.interval.bytes": "1024"}


def segment_files(partition_dir: Path, suffix: str) -> list[Path]:
    found = [(parse_segment_file_name(path.name), path) for path in partition_dir.iterdir()]
    return [path for parsed, path in sorted((p, f) for p, f in found if p) if parsed[1] == suffix]


def fill(client: RawBroker, topic: str, batches: int, per_batch: int = 20) -> list[bytes]:
    values = []
    for batch_number in range(batches):
        chunk = [f"{topic}-{batch_number}-{index}".encode() * 5 for index in range(per_batch)]
        client.produce_values(topic, 0, chunk)
        values.extend(chunk)
    return values


@pytest.fixture
def crashed_broker(tmp_path: Path):
    """A broker holding 200 batches of 20 records in topic `events`, then killed with SIGKILL."""
    broker = BrokerProcess(tmp_path / "data").start()
    client = RawBroker(broker.address)
    client.create_topic("events", 1, SMALL_SEGMENTS)
    values = fill(client, "events", 200)
    client.close()
    broker.kill()
    yield broker, values, tmp_path / "data" / "events-0"
    broker.stop()


def test_kill_9_loses_no_acknowledged_record(crashed_broker):
    broker, values, _ = crashed_broker
    broker.start()
    client = RawBroker(broker.address)
    assert [value for _, value in client.read_all("events", 0)] == values
    assert client.produce_values("events", 0, [b"after restart"]) == len(values)
    client.close()


def test_torn_tail_is_truncated_to_the_last_whole_batch(crashed_broker):
    broker, values, partition_dir = crashed_broker
    last_log = segment_files(partition_dir, LOG_SUFFIX)[-1]
    data = last_log.read_bytes()
    batches = list(records.iter_batch_positions(data))
    last_position, last_header = batches[-1]
    # Cut the last batch in half, as a crash during write() would.
    os.truncate(last_log, last_position + last_header.size // 2)
    broker.start()
    client = RawBroker(broker.address)
    survivors = client.read_all("events", 0)
    assert [value for _, value in survivors] == values[: len(values) - last_header.records_count]
    assert client.produce_values("events", 0, [b"next"]) == last_header.base_offset
    client.close()
    log = broker.read_log()
    assert last_log.name in log and "truncat" in log.lower()


def test_deleted_indexes_are_rebuilt_and_lookups_stay_right(crashed_broker):
    broker, values, partition_dir = crashed_broker
    deleted = segment_files(partition_dir, INDEX_SUFFIX) + segment_files(partition_dir, TIME_INDEX_SUFFIX)
    assert len(deleted) >= 4, "the fixture should span several segments"
    for path in deleted:
        path.unlink()
    broker.start()
    client = RawBroker(broker.address)
    for offset in (0, 1, 777, 2000, 3999):
        response = client.fetch("events", 0, offset, max_bytes=2048)
        first = next(records.iter_records(response.records, min_offset=offset))
        assert (first.offset, first.value) == (offset, values[offset])
    client.close()
    assert all(path.exists() for path in segment_files(partition_dir, LOG_SUFFIX))
    assert segment_files(partition_dir, INDEX_SUFFIX), "indexes were not rebuilt"


def test_flipped_byte_drops_that_batch_and_everything_after_it(crashed_broker):
    broker, values, partition_dir = crashed_broker
    # The active segment lies past the recovery point (closed segments were fsynced when
    # they rolled), so recovery scans it batch by batch, as Kafka's LogLoader does.
    damaged = segment_files(partition_dir, LOG_SUFFIX)[-1]
    data = bytearray(damaged.read_bytes())
    batches = list(records.iter_batch_positions(data))
    position, header = batches[len(batches) // 2]
    data[position + records.HEADER_SIZE + 3] ^= 0xFF
    damaged.write_bytes(bytes(data))
    broker.start()
    client = RawBroker(broker.address)
    survivors = client.read_all("events", 0)
    assert [offset for offset, _ in survivors] == list(range(header.base_offset))
    assert [value for _, value in survivors] == values[: header.base_offset]
    client.close()
    assert "CRC" in broker.read_log() or "corrupt" in broker.read_log().lower()


def test_kill_9_during_produce_with_the_sdk_loses_and_duplicates_nothing(tmp_path: Path):
    from weir import Consumer, Producer, TopicPartition
    from weir.admin import AdminClient, NewTopic

    broker = BrokerProcess(tmp_path / "data").start()
    try:
        AdminClient({"bootstrap.servers": broker.address}).create_topics([NewTopic("orders", num_partitions=2, replication_factor=1)])["orders"].result(
            timeout=15
        )
        producer = Producer(
            {"bootstrap.servers": broker.address, "linger.ms": 2, "enable.idempotence": True, "delivery.timeout.ms": 60_000, "retry.backoff.ms": 50}
        )
        acknowledged: list[bytes] = []
        failed: list[str] = []

        def on_delivery(error, message):
            if error is None:
                acknowledged.append(message.value())
            else:
                failed.append(str(error))

        stop = threading.Event()

        def produce_forever():
            for index in range(200_000):
                if stop.is_set():
                    return
                producer.produce("orders", f"order-{index}".encode(), key=str(index % 50).encode(), on_delivery=on_delivery)
                producer.poll(0)
                if index % 500 == 0:
                    time.sleep(0.01)

        worker = threading.Thread(target=produce_forever)
        worker.start()
        deadline = time.monotonic() + 20
        while len(acknowledged) < 2000 and time.monotonic() < deadline:
            time.sleep(0.05)
        broker.kill()
        time.sleep(0.5)
        broker.start()
        resumed_after = len(acknowledged)
        wait_until(lambda: len(acknowledged) > resumed_after, "an acknowledgement from the restarted broker", 30)
        stop.set()
        worker.join(timeout=30)
        assert producer.flush(60) == 0
        assert not failed, failed[:3]
        assert len(acknowledged) >= 2000

        consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "checker", "enable.auto.commit": False})
        consumer.assign([TopicPartition("orders", partition, 0) for partition in (0, 1)])
        seen: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(seen) < len(acknowledged) and time.monotonic() < deadline:
            for message in consume_available(consumer, 10_000, 1.0):
                assert message.error() is None
                seen.append(message.value())
        consumer.close()
        assert len(seen) == len(set(seen)), "a record was stored twice"
        assert set(acknowledged) <= set(seen), "an acknowledged record was lost"
    finally:
        broker.stop()
