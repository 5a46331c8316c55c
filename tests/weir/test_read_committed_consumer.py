"""The gRPC Fetch / ListOffsets at read_committed and the SDK consumer's isolation.level.

Transactional batches and markers are written straight into the partition log of an
in-process broker (the transaction coordinator is not part of this test).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.support.in_process_broker import InProcessBroker
from tests.weir.sdk_support import consume_all
from weir import Consumer, TopicPartition
from weir.records import RecordBatchBuilder

TOPIC = "events"
COMMITTED_VALUES = [b"plain-1", b"committed-1", b"plain-2"]


@pytest.fixture
def server(tmp_path) -> Iterator[InProcessBroker]:
    server = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1"}).start()
    server.broker.topic_admin.create_topic(TOPIC, 1, 1, {})
    yield server
    server.stop()


def batch(*values: bytes, producer_id: int = -1) -> bytes:
    transactional = producer_id >= 0
    builder = RecordBatchBuilder(
        producer_id=producer_id, producer_epoch=0 if transactional else -1, base_sequence=0 if transactional else -1, transactional=transactional
    )
    for value in values:
        builder.append(1_700_000_000_000, None, value)
    return builder.build()


def write_history(server: InProcessBroker) -> None:
    """0-1 aborted (producer 7), 2 plain, 3 committed (producer 8), 4 ABORT, 5 plain, 6 COMMIT, 7 open (producer 9)."""
    manager = server.broker.replica_manager
    log, epoch = manager.partition_log(TOPIC, 0), manager.leader_epoch(TOPIC, 0)
    log.append_as_leader(batch(b"aborted-1", b"aborted-2", producer_id=7), epoch)
    log.append_as_leader(batch(b"plain-1"), epoch)
    log.append_as_leader(batch(b"committed-1", producer_id=8), epoch)
    log.append_marker(7, 0, commit=False, coordinator_epoch=0, leader_epoch=epoch)
    log.append_as_leader(batch(b"plain-2"), epoch)
    log.append_marker(8, 0, commit=True, coordinator_epoch=0, leader_epoch=epoch)
    log.append_as_leader(batch(b"open-1", producer_id=9), epoch)


def grpc_fetch(server: InProcessBroker, isolation: int) -> broker_pb2.FetchPartitionResponse:
    request = broker_pb2.FetchRequest(
        max_wait_ms=0,
        min_bytes=0,
        isolation_level=isolation,
        topics=[broker_pb2.FetchTopic(topic=TOPIC, partitions=[broker_pb2.FetchPartition(partition=0, fetch_offset=0, current_leader_epoch=-1)])],
        replica_id=-1,
    )
    return server.stub.Fetch(request, timeout=10).topics[0].partitions[0]


def test_grpc_fetch_and_list_offsets_at_read_committed(server: InProcessBroker) -> None:
    write_history(server)
    committed = grpc_fetch(server, broker_pb2.READ_COMMITTED)
    assert (committed.error_code, committed.high_watermark, committed.last_stable_offset) == (0, 8, 7)
    assert [(entry.producer_id, entry.first_offset) for entry in committed.aborted_transactions] == [(7, 0)]
    uncommitted = grpc_fetch(server, broker_pb2.READ_UNCOMMITTED)
    assert uncommitted.last_stable_offset == 7 and not uncommitted.aborted_transactions
    assert len(uncommitted.records) > len(committed.records)
    for isolation, latest in ((broker_pb2.READ_COMMITTED, 7), (broker_pb2.READ_UNCOMMITTED, 8)):
        request = broker_pb2.ListOffsetsRequest(
            isolation_level=isolation,
            topics=[broker_pb2.ListOffsetsTopic(topic=TOPIC, partitions=[broker_pb2.ListOffsetsPartition(partition=0, timestamp=-1)])],
        )
        assert server.stub.ListOffsets(request, timeout=10).topics[0].partitions[0].offset == latest


@pytest.mark.parametrize(
    ("isolation", "expected"),
    [
        ("read_committed", COMMITTED_VALUES),
        ("read_uncommitted", [b"aborted-1", b"aborted-2", b"plain-1", b"committed-1", b"plain-2", b"open-1"]),
    ],
)
def test_sdk_consumer_drops_aborted_records_and_markers_at_read_committed(server: InProcessBroker, isolation: str, expected: list[bytes]) -> None:
    write_history(server)
    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{server.port}", "isolation.level": isolation})
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        messages = consume_all(consumer, len(expected), timeout=20)
        assert [message.value() for message in messages] == expected
        assert consume_all(consumer, 1, timeout=0.5) == []  # nothing past the LSO (read_committed) or the high watermark
    finally:
        consumer.close()


def test_sdk_consumer_position_moves_past_markers_and_aborted_batches(server: InProcessBroker) -> None:
    write_history(server)
    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{server.port}", "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        assert [message.value() for message in consume_all(consumer, 3)] == COMMITTED_VALUES
        assert consumer.position([TopicPartition(TOPIC, 0)])[0].offset == 7  # past the COMMIT at 6, up to the open transaction
        manager = server.broker.replica_manager
        manager.partition_log(TOPIC, 0).append_marker(9, 0, commit=False, coordinator_epoch=0, leader_epoch=manager.leader_epoch(TOPIC, 0))
        # The next fetch holds only the aborted batch at 7 and its ABORT at 8: nothing to return,
        # the position still moves to the end (the partition EOF event says where).
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and consumer.position([TopicPartition(TOPIC, 0)])[0].offset != 9:
            assert [message for message in consumer.consume(10, 0.2) if message.error() is None] == []
        assert consumer.position([TopicPartition(TOPIC, 0)])[0].offset == 9
    finally:
        consumer.close()
