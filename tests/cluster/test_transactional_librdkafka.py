"""librdkafka's transactional producer and read_committed consumer on a 3-broker cluster, through the Kafka listeners.

Every batch is verified with the transaction coordinator before it is appended (KIP-890 part 1,
over Replication.VerifyTxnPartitions when the coordinator is another broker); markers reach
partitions led by other brokers through Replication.WriteTxnMarkers. Checked: committed
transactions are read in full at read_committed, the aborted one never; a second producer
with the same transactional id fences the first, whose next commit fails; the coordinator
killed with -9 between transactions is replaced and the producer goes on.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer

from log_formats.transaction_log_records import partition_for_transactional_id
from tests.support.real_cluster import ClusterTimings, RealCluster

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "ledger"
TRANSACTIONAL_ID = "ledger-writer"
TIMINGS = ClusterTimings(session_timeout_ms=2000, replica_lag_time_max_ms=2000)
CLIENT_SECONDS = 60.0


def transactional_producer(cluster: RealCluster) -> Producer:
    producer = Producer(cluster.kafka_client_config(**{"transactional.id": TRANSACTIONAL_ID, "transaction.timeout.ms": 60000, "linger.ms": 5}))
    producer.init_transactions(CLIENT_SECONDS)
    return producer


def write_transaction(producer: Producer, label: str, *, commit: bool) -> list[bytes]:
    values = [f"{label}-{index}".encode() for index in range(20)]
    producer.begin_transaction()
    for index, value in enumerate(values):
        producer.produce(TOPIC, value, partition=index % 2)
    producer.flush(CLIENT_SECONDS)
    if commit:
        producer.commit_transaction(CLIENT_SECONDS)
    else:
        producer.abort_transaction(CLIENT_SECONDS)
    return values


def coordinator_node(cluster: RealCluster) -> int:
    rows = cluster.internal_partition_rows("__transaction_state")
    assert cluster.access is not None
    return rows[partition_for_transactional_id(f"{cluster.access.tenant_id}~{TRANSACTIONAL_ID}", len(rows))].leader


def read_committed(cluster: RealCluster, expected: int) -> list[bytes]:
    consumer = Consumer(
        cluster.kafka_client_config(
            **{"group.id": "auditor", "auto.offset.reset": "earliest", "isolation.level": "read_committed", "enable.auto.commit": False}
        )
    )
    consumer.subscribe([TOPIC])
    values: list[bytes] = []
    deadline = time.monotonic() + CLIENT_SECONDS
    try:
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        for _ in range(4):  # an aborted record would show up within a few more polls
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    return values


def test_transactions_commit_abort_fence_and_survive_the_coordinators_kill_9(start_cluster) -> None:
    cluster = start_cluster(broker_count=3, timings=TIMINGS)
    cluster.create_tenant("Ledger")
    cluster.create_topic(TOPIC, 2, 3, {"min.insync.replicas": "2"})
    cluster.wait_for_full_isr(TOPIC)

    producer = transactional_producer(cluster)
    first = write_transaction(producer, "first", commit=True)
    write_transaction(producer, "aborted", commit=False)
    coordinator = coordinator_node(cluster)
    cluster.kill(coordinator)
    cluster.wait_until(lambda: coordinator_node(cluster) not in (coordinator, -1), "a new leader of the transactional id's partition", 30.0)
    second = write_transaction(producer, "second", commit=True)

    successor = transactional_producer(cluster)
    with pytest.raises(KafkaException):
        write_transaction(producer, "zombie", commit=True)
    third = write_transaction(successor, "third", commit=True)

    committed = first + second + third
    seen = read_committed(cluster, len(committed))
    assert sorted(seen) == sorted(committed), f"missing {sorted(set(committed) - set(seen))[:5]}, unexpected {sorted(set(seen) - set(committed))[:5]}"
