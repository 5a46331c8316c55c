"""Fetch and ListOffsets at read_committed over the Kafka protocol: the last stable offset and aborted transactions.

Transactional batches and markers are written straight into the partition log (the
transaction coordinator is not part of this test, and a transactional Produce needs it to
verify the partition); plain batches come from the listener's Produce.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.kafka_protocol.admin_calls import call_handler, request_module
from tests.kafka_protocol.test_data_handlers import ANONYMOUS, DESCRIBE_PRODUCERS, fetch, list_offset, produce
from tests.support.in_process_broker import InProcessBroker
from weir.read_committed import committed_batches
from weir.records import RecordBatchBuilder, batch_records_bytes, decode_records

TOPIC = "events"
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
LATEST = -1
POLL_SECONDS = 20.0


@pytest.fixture
def server(tmp_path) -> Iterator[InProcessBroker]:
    server = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1", "kafka.listen": "127.0.0.1:0"}).start()
    server.broker.topic_admin.create_topic(TOPIC, 1, 1, {})
    yield server
    server.stop()


def transactional(producer_id: int, *values: bytes) -> bytes:
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=0, base_sequence=0, transactional=True)
    for value in values:
        builder.append(1_700_000_000_000, None, value)
    return builder.build()


def plain(*values: bytes) -> bytes:
    builder = RecordBatchBuilder()
    for value in values:
        builder.append(1_700_000_000_000, None, value)
    return builder.build()


def append_transactional(broker, producer_id: int, *values: bytes) -> None:
    log = broker.replica_manager.partition_log(TOPIC, 0)
    log.append_as_leader(transactional(producer_id, *values), broker.replica_manager.leader_epoch(TOPIC, 0))


def end_transaction(broker, producer_id: int, *, commit: bool) -> int:
    log = broker.replica_manager.partition_log(TOPIC, 0)
    epoch = broker.replica_manager.leader_epoch(TOPIC, 0)
    return log.append_marker(producer_id, 0, commit=commit, coordinator_epoch=0, leader_epoch=epoch).first_offset


def write_history(broker) -> None:
    """Offsets: 0-1 aborted (producer 7), 2 plain, 3 producer 8 (committed at 6), 4 abort marker, 5 plain, 6 commit, 7 producer 9 (open)."""
    append_transactional(broker, 7, b"aborted-1", b"aborted-2")
    assert produce(broker, TOPIC, 0, plain(b"plain-1")).error_code == 0
    append_transactional(broker, 8, b"committed-1")
    assert end_transaction(broker, 7, commit=False) == 4
    assert produce(broker, TOPIC, 0, plain(b"plain-2")).error_code == 0
    assert end_transaction(broker, 8, commit=True) == 6
    append_transactional(broker, 9, b"open-1")


def test_fetch_at_read_committed_stops_at_the_lso_and_names_the_aborted_transactions(server) -> None:
    broker = server.broker
    write_history(broker)
    committed = fetch(broker, TOPIC, 0, 0, isolation_level=READ_COMMITTED).responses[0].partitions[0]
    assert (committed.high_watermark, committed.last_stable_offset) == (8, 7)
    assert [(entry.producer_id, entry.first_offset) for entry in committed.aborted_transactions] == [(7, 0)]
    aborted = [(entry.producer_id, entry.first_offset) for entry in committed.aborted_transactions]
    values = [
        value
        for position, header in committed_batches(committed.records, aborted)
        for _, _, _, value, _ in decode_records(batch_records_bytes(committed.records, position, header), header)
    ]
    assert values == [b"plain-1", b"committed-1", b"plain-2"]
    assert fetch(broker, TOPIC, 0, 5, isolation_level=READ_COMMITTED).responses[0].partitions[0].aborted_transactions == ()
    uncommitted = fetch(broker, TOPIC, 0, 0, isolation_level=READ_UNCOMMITTED).responses[0].partitions[0]
    assert uncommitted.aborted_transactions is None and uncommitted.last_stable_offset == 7
    assert len(uncommitted.records) > len(committed.records)


def test_list_offsets_latest_is_the_lso_at_read_committed(server) -> None:
    broker = server.broker
    write_history(broker)
    assert list_offset(broker, TOPIC, 0, LATEST).offset == 8
    assert list_offset(broker, TOPIC, 0, LATEST, isolation_level=READ_COMMITTED).offset == 7
    end_transaction(broker, 9, commit=True)
    assert list_offset(broker, TOPIC, 0, LATEST, isolation_level=READ_COMMITTED).offset == 9


def test_librdkafka_at_read_committed_skips_aborted_records_and_markers_over_the_listener(server) -> None:
    broker = server.broker
    write_history(broker)
    end_transaction(broker, 9, commit=False)
    assert produce(broker, TOPIC, 0, plain(b"plain-3")).error_code == 0
    expected = [b"plain-1", b"committed-1", b"plain-2", b"plain-3"]
    for isolation, wanted in (("read_committed", expected), ("read_uncommitted", None)):
        consumer = Consumer(
            {
                "bootstrap.servers": f"127.0.0.1:{server.running.kafka_port}",
                "group.id": f"reader-{isolation}",
                "isolation.level": isolation,
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 50,
            }
        )
        try:
            consumer.assign([TopicPartition(TOPIC, 0, 0)])
            values, offsets = [], []
            deadline = time.monotonic() + POLL_SECONDS
            while time.monotonic() < deadline and (not offsets or offsets[-1] < 9):
                message = consumer.poll(0.2)
                if message is None or message.error() is not None:
                    continue
                values.append(message.value())
                offsets.append(message.offset())
        finally:
            consumer.close()
        if wanted is not None:
            assert values == wanted
        else:
            assert values == [b"aborted-1", b"aborted-2", b"plain-1", b"committed-1", b"plain-2", b"open-1", b"plain-3"]


def test_describe_producers_names_open_transactions_and_coordinator_epochs(server) -> None:
    broker = server.broker
    write_history(broker)
    schema = request_module(DESCRIBE_PRODUCERS, 0)
    request = schema.DescribeProducersRequest(topics=(schema.TopicRequest(name=TOPIC, partition_indexes=(0,)),))
    producers = call_handler(broker, ANONYMOUS, DESCRIBE_PRODUCERS, 0, request).topics[0].partitions[0].active_producers
    assert [(producer.producer_id, producer.coordinator_epoch, producer.current_txn_start_offset) for producer in producers] == [
        (7, 0, -1),
        (8, 0, -1),
        (9, -1, 7),
    ]
