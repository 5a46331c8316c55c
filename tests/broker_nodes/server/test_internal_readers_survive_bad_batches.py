"""The broker's own readers of stored batches survive a batch on disk that cannot be decoded.

A real broker is stopped, a batch with a correct CRC but an undecodable lz4 payload is written
into its segment (as an older Weir or a flipped bit left it), and the broker is started again:

- the log cleaner compacts the rest of the partition, keeps that batch byte for byte and never
  drops a record it cannot prove superseded, and says so in its log naming partition and offsets;
- the group coordinator loads ``__consumer_offsets`` around the batch: commits before and after
  it are served, new commits work, and its log names the partition and offsets it skipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from grpc_protos.weir.v1 import broker_pb2
from log_formats.offset_commit_records import OffsetAndMetadata, OffsetCommitKey, encode_offset_commit_key, encode_offset_commit_value
from tests.support.bad_batches import append_to_stopped_log, undecodable_batch_at
from tests.support.processes import BrokerProcess
from tests.support.raw_client import RawBroker
from weir import records

WAIT_SECONDS = 30.0
T = TypeVar("T")


def keyed_batch(base_offset: int, items: list[tuple[bytes, bytes]]) -> bytes:
    stamp = int(time.time() * 1000)
    return records.build_batch(((stamp, key, value, None) for key, value in items), records.COMPRESSION_NONE, base_offset=base_offset, partition_leader_epoch=0)


def stored_batches(client: RawBroker, topic: str, partition: int) -> dict[int, bytes]:
    """base offset -> stored bytes (from baseOffset on) of every batch the broker serves, without decoding records."""
    out: dict[int, bytes] = {}
    offset = 0
    for _ in range(1000):
        response = client.fetch(topic, partition, offset)
        assert response.error_code == 0, response.error_message
        data = response.records
        positions = list(records.iter_batch_positions(data))
        if not positions:
            return out
        for position, header in positions:
            out[header.base_offset] = bytes(data[position : position + header.size])
            offset = header.next_offset
        if offset >= response.high_watermark:
            return out
    raise AssertionError("the partition did not end")


def readable_records(batches: dict[int, bytes], skip: int) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    for base_offset, data in sorted(batches.items()):
        if base_offset != skip:
            out += [(record.offset, record.key, record.value) for record in records.iter_records(data)]
    return out


def wait_for(condition: Callable[[], T | None], what: str, seconds: float = WAIT_SECONDS) -> T:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


def test_the_cleaner_keeps_an_undecodable_batch_and_compacts_the_rest(tmp_path):
    broker = BrokerProcess(tmp_path / "data", configs={"log.retention.check.interval.ms": "200", "log.cleaner.backoff.ms": "100"}).start()
    client = RawBroker(broker.address)
    try:
        client.create_topic(
            "keyed", 1, {"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0"}
        )
        assert client.produce("keyed", 0, keyed_batch(0, [(b"k1", b"old"), (b"k2", b"only")])).error_code == 0
        client.close()
        broker.stop()
        bad = undecodable_batch_at(2, 3)
        append_to_stopped_log(broker, "keyed", 0, bad + keyed_batch(5, [(b"k1", b"new")]))
        broker.start()
        client = RawBroker(broker.address)
        # A batch larger than what is left of segment.bytes rolls the segment: 0..5 become cleanable.
        result = client.produce("keyed", 0, keyed_batch(0, [(b"k3", b"x" * 900)]))
        assert result.error_code == 0 and result.base_offset == 6, result.error_message
        wait_for(lambda: "compacted 1 segment(s)" in broker.read_log() or None, "a compaction pass")
        log = broker.read_log()
        assert "keyed-0: compaction keeps the batch at offsets 2..4 as it is: its records cannot be decoded" in log
        assert "maintenance of" not in log  # no pass failed
        batches = stored_batches(client, "keyed", 0)
        assert batches[2] == bad  # byte for byte
        # k1's old value (offset 0) is superseded by offset 5; nothing else is dropped.
        assert readable_records(batches, skip=2) == [(1, b"k2", b"only"), (5, b"k1", b"new"), (6, b"k3", b"x" * 900)]
        assert client.produce("keyed", 0, keyed_batch(0, [(b"k4", b"after")])).error_code == 0
    finally:
        client.close()
        broker.stop()


def commit(client: RawBroker, group: str, topic: str, offsets: dict[int, int]) -> broker_pb2.OffsetCommitResponse:
    request = broker_pb2.OffsetCommitRequest(
        group_id=group,
        generation_id=-1,
        member_id="",
        topics=[
            broker_pb2.OffsetCommitTopic(
                topic=topic,
                partitions=[
                    broker_pb2.OffsetCommitPartition(partition=partition, committed_offset=offset, committed_leader_epoch=-1)
                    for partition, offset in offsets.items()
                ],
            )
        ],
    )
    return client.stub.OffsetCommit(request, timeout=15)


def committed(client: RawBroker, group: str) -> tuple[int, dict[int, int]]:
    reply = client.stub.OffsetFetch(broker_pb2.OffsetFetchRequest(group_id=group), timeout=15)
    return reply.error_code, {partition.partition: partition.committed_offset for topic in reply.topics for partition in topic.partitions}


def commit_record(group: str, topic: str, partition: int, offset: int) -> tuple[bytes, bytes]:
    value = OffsetAndMetadata(offset=offset, leader_epoch=-1, metadata="", commit_timestamp=int(time.time() * 1000))
    return encode_offset_commit_key(OffsetCommitKey(group, topic, partition)), encode_offset_commit_value(value)


def test_the_coordinator_loads_committed_offsets_around_an_undecodable_batch(tmp_path):
    broker = BrokerProcess(tmp_path / "data", configs={"offsets.topic.num.partitions": "1"}).start()
    client = RawBroker(broker.address)
    try:
        client.create_topic("orders", 3)
        assert commit(client, "billing", "orders", {0: 10}).error_code == 0
        end = client.list_offset("__consumer_offsets", 0, -1)
        client.close()
        broker.stop()
        append_to_stopped_log(broker, "__consumer_offsets", 0, undecodable_batch_at(end, 2) + keyed_batch(end + 2, [commit_record("billing", "orders", 1, 20)]))
        broker.start()
        client = RawBroker(broker.address)

        def loaded() -> dict[int, int] | None:
            code, offsets = committed(client, "billing")
            return offsets if code == 0 and offsets else None

        assert wait_for(loaded, "the coordinator to load") == {0: 10, 1: 20}
        assert f"__consumer_offsets-0: skipping the batch at offsets {end}..{end + 1} while loading committed offsets and groups" in broker.read_log()
        assert commit(client, "billing", "orders", {2: 30}).topics[0].partitions[0].error_code == 0
        assert committed(client, "billing") == (0, {0: 10, 1: 20, 2: 30})
    finally:
        client.close()
        broker.stop()
