"""Stock clients authenticate with SASL/SCRAM-SHA-256 and SCRAM-SHA-512 using a cluster key the control plane made.

The key is created by the control plane's own actions (``RealCluster.create_tenant``: the
action derives the key's SCRAM credentials, the security snapshot carries them to the broker
processes). librdkafka (confluent-kafka) produces and consumes with each mechanism, kafka-python
with SCRAM-SHA-512; a wrong secret is refused.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError as KafkaPythonError

from tests.kafka_clients.conftest import kafka_bootstrap
from tests.support.real_cluster import RealCluster, TenantAccess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(240)]

CLIENT_SECONDS = 30.0
RECORDS = 10
TOPIC = "scram-events"


def librdkafka_settings(cluster: RealCluster, access: TenantAccess, mechanism: str, secret: str | None = None) -> dict[str, Any]:
    return {
        "bootstrap.servers": kafka_bootstrap(cluster),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": access.api_key,
        "sasl.password": access.api_secret if secret is None else secret,
    }


def librdkafka_round_trip(cluster: RealCluster, access: TenantAccess, mechanism: str) -> list[bytes]:
    """Produce RECORDS values with ``mechanism`` (idempotent, acks=all), then consume them back in a group; the values read."""
    values = [f"{mechanism}-{index}".encode() for index in range(RECORDS)]
    errors: list[KafkaError | None] = []
    producer = Producer({**librdkafka_settings(cluster, access, mechanism), "acks": "all", "enable.idempotence": True})
    for value in values:
        producer.produce(TOPIC, value=value, on_delivery=lambda error, message: errors.append(error))
    assert producer.flush(CLIENT_SECONDS) == 0, "records still undelivered"
    assert errors == [None] * RECORDS
    consumer = Consumer({**librdkafka_settings(cluster, access, mechanism), "group.id": f"readers-{mechanism}", "auto.offset.reset": "earliest"})
    read: list[bytes] = []
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + CLIENT_SECONDS
        while time.monotonic() < deadline and len([value for value in read if value.startswith(mechanism.encode())]) < RECORDS:
            message = consumer.poll(1.0)
            if message is None:
                continue
            assert message.error() is None, message.error()
            read.append(message.value())
    finally:
        consumer.close()
    return [value for value in read if value.startswith(mechanism.encode())]


def test_stock_clients_produce_and_consume_with_scram_sha_256_and_512(cluster: RealCluster) -> None:
    access = cluster.create_tenant("Scram")
    cluster.create_topic(TOPIC, partitions=1, replication_factor=2)

    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        assert librdkafka_round_trip(cluster, access, mechanism) == [f"{mechanism}-{index}".encode() for index in range(RECORDS)]

    kafka_python = {
        "bootstrap_servers": kafka_bootstrap(cluster).split(","),
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": access.api_key,
        "sasl_plain_password": access.api_secret,
        "request_timeout_ms": int(CLIENT_SECONDS * 1000),
        "api_version_auto_timeout_ms": int(CLIENT_SECONDS * 1000),  # its 2 s default is too short on a loaded machine
    }
    producer = KafkaProducer(**kafka_python, acks="all")
    try:
        for index in range(RECORDS):
            producer.send(TOPIC, f"kafka-python-{index}".encode(), partition=0).get(timeout=CLIENT_SECONDS)
    finally:
        producer.close(timeout=CLIENT_SECONDS)
    consumer = KafkaConsumer(TOPIC, **kafka_python, auto_offset_reset="earliest", group_id="kafka-python")
    read: list[bytes] = []
    try:
        # Polled until every record is read or the deadline passes: joining the group, syncing and the first
        # fetch may each take seconds on a loaded machine, longer than one consumer_timeout_ms of silence.
        deadline = time.monotonic() + 3 * CLIENT_SECONDS
        while time.monotonic() < deadline and len(read) < RECORDS:
            for records in consumer.poll(timeout_ms=1000).values():
                read.extend(record.value for record in records if record.value.startswith(b"kafka-python-"))
    finally:
        consumer.close()
    assert read == [f"kafka-python-{index}".encode() for index in range(RECORDS)]


def test_a_wrong_secret_is_refused_with_scram(cluster: RealCluster) -> None:
    access = cluster.create_tenant("ScramWrong")
    admin = AdminClient({**librdkafka_settings(cluster, access, "SCRAM-SHA-256", secret="weir_cluster_not-the-secret"), "reconnect.backoff.ms": 500})
    with pytest.raises(KafkaException) as raised:
        admin.list_topics(timeout=5)
    assert raised.value.args[0].code() in (KafkaError._AUTHENTICATION, KafkaError._TRANSPORT, KafkaError._TIMED_OUT)
    with pytest.raises(KafkaPythonError):
        KafkaAdminClient(
            bootstrap_servers=kafka_bootstrap(cluster).split(","),
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username=access.api_key,
            sasl_plain_password="weir_cluster_not-the-secret",
            request_timeout_ms=5000,
            api_version_auto_timeout_ms=5000,
        )
