"""librdkafka's consume-transform-produce against a real broker process (KIP-447): the consumer's offsets commit with the output.

A read_committed consumer (auto commit off) reads ``input``; a transactional producer writes each
record transformed to ``output`` and commits the consumer's positions with
``send_offsets_to_transaction(position, consumer_group_metadata)`` in the same transaction. A first
run commits one transaction, then aborts one (its output and its offsets vanish) and stops; while
a transaction holds offsets, a read_committed consumer's ``committed()`` (OffsetFetch
require_stable) does not answer the older offset. A second run with a new consumer and producer
resumes exactly at the committed offsets, processes the rest and commits; ``output`` read at
read_committed then holds each input record exactly once. kafka-python's and aiokafka's transactional
producers (TxnOffsetCommit v2, naming no member) commit and abort offsets the same way.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.processes import BrokerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

INPUT, OUTPUT, GROUP, TRANSACTIONAL_ID = "input", "output", "transformer", "transformer-app"
PARTITIONS = 2
RECORDS_PER_PARTITION = 15
CLIENT_SECONDS = 30.0  # every client call finishes well within this
KAFKA_PYTHON_PROBE_MS = 30_000  # kafka-python's API-version probe (2 s by default, then NoBrokersAvailable) on a loaded machine


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path / "data", configs={"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}).start()
    admin = AdminClient({"bootstrap.servers": process.kafka_address})
    for future in admin.create_topics([NewTopic(INPUT, PARTITIONS, 1), NewTopic(OUTPUT, PARTITIONS, 1)], request_timeout=CLIENT_SECONDS).values():
        future.result(timeout=CLIENT_SECONDS)
    producer = Producer({"bootstrap.servers": process.kafka_address, "enable.idempotence": True})
    for partition in range(PARTITIONS):
        for index in range(RECORDS_PER_PARTITION):
            producer.produce(INPUT, f"in-{partition}-{index}".encode(), partition=partition)
    assert producer.flush(CLIENT_SECONDS) == 0
    yield process
    process.stop()


def consumer(address: str, group: str = GROUP) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": address,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
        }
    )


def transactional_producer(address: str) -> Producer:
    producer = Producer({"bootstrap.servers": address, "transactional.id": TRANSACTIONAL_ID, "transaction.timeout.ms": 60000, "linger.ms": 5})
    producer.init_transactions(CLIENT_SECONDS)
    return producer


def poll_records(source: Consumer, count: int) -> list[Message]:
    """Up to ``count`` records (fewer only when the input runs out within the client timeout)."""
    records: list[Message] = []
    deadline = time.monotonic() + CLIENT_SECONDS
    while len(records) < count and time.monotonic() < deadline:
        for message in source.consume(count - len(records), 0.5):
            assert message.error() is None, message.error()
            records.append(message)
    return records


def transform(producer: Producer, source: Consumer, records: list[Message]) -> None:
    """One transaction's work before its end: the transformed records and the consumer's positions."""
    producer.begin_transaction()
    for message in records:
        producer.produce(OUTPUT, b"out-" + message.value(), partition=message.partition())
    producer.send_offsets_to_transaction(source.position(source.assignment()), source.consumer_group_metadata(), CLIENT_SECONDS)


def committed(address: str) -> dict[int, int]:
    reader = consumer(address)
    try:
        return {item.partition: item.offset for item in reader.committed([TopicPartition(INPUT, p) for p in range(PARTITIONS)], CLIENT_SECONDS)}
    finally:
        reader.close()


def read_output(address: str, expected: int) -> list[bytes]:
    reader = consumer(address, group="auditor")
    reader.subscribe([OUTPUT])
    try:
        values = [message.value() for message in poll_records(reader, expected)]
        values += [message.value() for message in reader.consume(10, 2.0) if message.error() is None]  # anything beyond would be a duplicate
    finally:
        reader.close()
    return values


def test_consume_transform_produce_commits_offsets_with_the_output_exactly_once(broker: BrokerProcess) -> None:
    address = broker.kafka_address
    first_consumer, first_producer = consumer(address), transactional_producer(address)
    first_consumer.subscribe([INPUT])
    committed_batch = poll_records(first_consumer, 10)
    transform(first_producer, first_consumer, committed_batch)
    first_producer.commit_transaction(CLIENT_SECONDS)
    after_commit = committed(address)
    positions = {item.partition: item.offset for item in first_consumer.position(first_consumer.assignment())}
    # A partition not read from yet has no position (-1001): nothing is committed for it.
    assert after_commit == positions and sum(offset for offset in after_commit.values() if offset >= 0) == 10

    aborted_batch = poll_records(first_consumer, 8)
    transform(first_producer, first_consumer, aborted_batch)
    # An open transaction holds newer offsets: require_stable keeps the older ones from being answered.
    unstable = consumer(address)
    try:
        try:
            answered = unstable.committed([TopicPartition(INPUT, p) for p in range(PARTITIONS)], 3.0)
            assert all(item.error is not None for item in answered if item.offset != after_commit[item.partition]), answered
            assert any(item.error is not None for item in answered), answered
        except KafkaException:
            pass  # retried UNSTABLE_OFFSET_COMMIT until the timeout
    finally:
        unstable.close()
    first_producer.abort_transaction(CLIENT_SECONDS)
    assert committed(address) == after_commit
    first_consumer.close()

    second_consumer, second_producer = consumer(address), transactional_producer(address)
    second_consumer.subscribe([INPUT])
    rest = poll_records(second_consumer, PARTITIONS * RECORDS_PER_PARTITION - 10)
    first_offsets = {message.partition(): message.offset() for message in reversed(rest)}
    assert first_offsets == {partition: max(offset, 0) for partition, offset in after_commit.items() if offset < RECORDS_PER_PARTITION}
    transform(second_producer, second_consumer, rest)
    second_producer.commit_transaction(CLIENT_SECONDS)
    second_consumer.close()
    assert committed(address) == dict.fromkeys(range(PARTITIONS), RECORDS_PER_PARTITION)

    expected = sorted(b"out-in-%d-%d" % (partition, index) for partition in range(PARTITIONS) for index in range(RECORDS_PER_PARTITION))
    assert sorted(read_output(address, len(expected))) == expected


def kafka_python_run(address: str, group: str) -> tuple[dict[int, int], list[bytes]]:
    """kafka-python: one committed transaction of 10 records, then an aborted one; returns the committed positions and the committed output."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KafkaTopicPartition
    from kafka.structs import OffsetAndMetadata

    source = KafkaConsumer(
        INPUT,
        bootstrap_servers=address,
        group_id=group,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        api_version_auto_timeout_ms=KAFKA_PYTHON_PROBE_MS,
    )
    producer = KafkaProducer(bootstrap_servers=address, transactional_id=f"{TRANSACTIONAL_ID}-{group}", api_version_auto_timeout_ms=KAFKA_PYTHON_PROBE_MS)
    try:
        producer.init_transactions()
        positions: dict[int, int] = {}
        outputs: list[bytes] = []
        for commit, wanted in ((True, 10), (False, 5)):
            records = []
            deadline = time.monotonic() + CLIENT_SECONDS
            while len(records) < wanted and time.monotonic() < deadline:
                for batch in source.poll(timeout_ms=500, max_records=wanted - len(records)).values():
                    records.extend(batch)
            producer.begin_transaction()
            for record in records:
                producer.send(OUTPUT, b"out-" + record.value, partition=record.partition)
            offsets = {KafkaTopicPartition(INPUT, p.partition): OffsetAndMetadata(source.position(p), "", -1) for p in source.assignment()}
            producer.send_offsets_to_transaction(offsets, group)
            producer.flush()  # kafka-python's abort_transaction trips over batches not yet sent (its sender thread dies)
            if commit:
                producer.commit_transaction()
                positions = {tp.partition: meta.offset for tp, meta in offsets.items()}
                outputs = [b"out-" + record.value for record in records]
            else:
                producer.abort_transaction()
        return positions, outputs
    finally:
        producer.close()
        source.close()


def aiokafka_run(address: str, group: str) -> tuple[dict[int, int], list[bytes]]:
    """aiokafka: the same two transactions as :func:`kafka_python_run`."""
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run() -> tuple[dict[int, int], list[bytes]]:
        source = AIOKafkaConsumer(
            INPUT, bootstrap_servers=address, group_id=group, isolation_level="read_committed", enable_auto_commit=False, auto_offset_reset="earliest"
        )
        producer = AIOKafkaProducer(bootstrap_servers=address, transactional_id=f"{TRANSACTIONAL_ID}-{group}")
        await source.start()
        await producer.start()
        try:
            positions: dict[int, int] = {}
            outputs: list[bytes] = []
            for commit, wanted in ((True, 10), (False, 5)):
                records = []
                deadline = time.monotonic() + CLIENT_SECONDS
                while len(records) < wanted and time.monotonic() < deadline:
                    for batch in (await source.getmany(timeout_ms=500, max_records=wanted - len(records))).values():
                        records.extend(batch)
                await producer.begin_transaction()
                for record in records:
                    await producer.send_and_wait(OUTPUT, b"out-" + record.value, partition=record.partition)
                offsets = {tp: await source.position(tp) for tp in source.assignment()}
                await producer.send_offsets_to_transaction(offsets, group)
                if commit:
                    await producer.commit_transaction()
                    positions = {tp.partition: offset for tp, offset in offsets.items()}
                    outputs = [b"out-" + record.value for record in records]
                else:
                    await producer.abort_transaction()
            return positions, outputs
        finally:
            await producer.stop()
            await source.stop()

    return asyncio.run(run())


@pytest.mark.parametrize("client", ["kafka-python", "aiokafka"])
def test_other_clients_transactional_offsets_commit_with_the_output_and_abort_with_it(broker: BrokerProcess, client: str) -> None:
    address, group = broker.kafka_address, f"transformer-{client}"
    positions, outputs = (kafka_python_run if client == "kafka-python" else aiokafka_run)(address, group)
    assert sum(positions.values()) == 10
    reader = consumer(address, group)
    try:
        stored = reader.committed([TopicPartition(INPUT, p) for p in range(PARTITIONS)], CLIENT_SECONDS)
    finally:
        reader.close()
    assert {item.partition: item.offset for item in stored if item.offset >= 0} == positions
    assert sorted(read_output(address, len(outputs))) == sorted(outputs)
