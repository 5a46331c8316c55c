"""A librdkafka producer and consumer follow a partition leader killed with -9 (KIP-320 epochs, NOT_LEADER).

Three brokers and the controller run as real processes; the topic has three replicas and
min.insync.replicas=2. An idempotent acks=all librdkafka producer writes numbered records
through the brokers' Kafka listeners while the partition's leader is killed -9 halfway: every
record must be acknowledged, and a consumer (assign, no group) reads each exactly once, in
order, at the offset it was acknowledged at.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.support.real_cluster import ClusterTimings, ClusterUnavailableError, RealCluster, TenantAccess, database_url_for_subprocesses

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(300)]

TOPIC = "failover"
RECORDS = 3000
KILL_AT = 1000  # the record after which the leader is killed
SEND_INTERVAL_SECONDS = 0.002
DELIVERY_SECONDS = 90.0  # message.timeout.ms: long enough for the session timeout, the election and the push on a busy machine
TIMINGS = ClusterTimings(session_timeout_ms=2000, replica_lag_time_max_ms=2000)


@pytest.fixture
def cluster(tmp_path: Path, transactional_db: None) -> Iterator[RealCluster]:
    try:
        database_url_for_subprocesses()
    except ClusterUnavailableError as error:
        pytest.skip(str(error))
    started = RealCluster(tmp_path / "cluster", broker_count=3, timings=TIMINGS)
    try:
        yield started.start()
    finally:
        started.close()


def kafka_config(cluster: RealCluster, access: TenantAccess) -> dict[str, object]:
    return {
        "bootstrap.servers": ",".join(broker.kafka_address for broker in cluster.brokers.values()),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": access.api_key,
        "sasl.password": access.api_secret,
    }


def test_idempotent_producer_and_consumer_follow_a_killed_leader(cluster: RealCluster) -> None:
    access = cluster.create_tenant("Failover")
    cluster.create_topic(TOPIC, 1, 3, {"min.insync.replicas": "2"})
    cluster.wait_for_full_isr(TOPIC)
    leader = cluster.leader_of(TOPIC, 0)

    acknowledged: dict[bytes, int] = {}
    failures: list[KafkaError] = []

    def report(error: KafkaError | None, message: object) -> None:
        if error is not None:
            failures.append(error)
        else:
            acknowledged[message.value()] = message.offset()  # type: ignore[attr-defined]

    producer = Producer(
        {**kafka_config(cluster, access), "enable.idempotence": True, "acks": "all", "linger.ms": 5, "message.timeout.ms": int(DELIVERY_SECONDS * 1000)}
    )
    for index in range(RECORDS):
        producer.produce(TOPIC, value=b"%06d" % index, partition=0, on_delivery=report)
        producer.poll(0)
        if index == KILL_AT:
            producer.flush(DELIVERY_SECONDS)
            cluster.kill(leader)
        time.sleep(SEND_INTERVAL_SECONDS)
    assert producer.flush(DELIVERY_SECONDS) == 0
    assert failures == []
    assert len(acknowledged) == RECORDS
    new_leader = cluster.wait_until(lambda: (node := cluster.leader_of(TOPIC, 0)) not in (-1, leader) and node, "a new leader")
    assert new_leader != leader

    consumer = Consumer({**kafka_config(cluster, access), "group.id": "assign-only", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    read: list[tuple[bytes, int]] = []
    deadline = time.monotonic() + DELIVERY_SECONDS
    try:
        while len(read) < RECORDS and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            read.append((message.value(), message.offset()))
    finally:
        consumer.close()
    assert [value for value, _ in read] == [b"%06d" % index for index in range(RECORDS)]  # each once, in order
    assert all(acknowledged[value] == offset for value, offset in read)
