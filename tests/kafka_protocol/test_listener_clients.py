"""Stock Kafka clients negotiate ApiVersions and SASL/PLAIN with a real broker process (python -m broker_nodes --kafka-listen)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient, KafkaConsumer
from kafka.errors import KafkaError as KafkaPythonError

from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc
from tests.broker_nodes.security.managed_cluster import INTERNAL, INTERNAL_TOKEN, credential
from tests.kafka_protocol.wire import closed_by_peer, connect
from tests.support.processes import BrokerProcess
from tests.support.waiting import wait_until

TENANT = "tn-aaaaaaaaaa"
KEY = "KEYALICE"
SECRET = "alice-secret"
CLIENT_TIMEOUT_SECONDS = 15.0


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(
        tmp_path / "data",
        configs={"offsets.topic.num.partitions": "1", "security.required": "true"},
        env={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN},
    ).start()
    with grpc.insecure_channel(process.address) as channel:
        admin_pb2_grpc.AdminStub(channel).ApplySecurity(
            admin_pb2.ApplySecurityRequest(version=1, credentials=[credential(KEY, SECRET, TENANT, "User:sa-alice")]), metadata=INTERNAL, timeout=10
        )
    yield process
    process.stop()


def confluent_settings(broker: BrokerProcess, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": broker.kafka_address,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": KEY,
        "sasl.password": password,
        "reconnect.backoff.ms": 500,
    }


def test_librdkafka_authenticates_with_plain_and_reads_metadata(broker: BrokerProcess) -> None:
    admin = AdminClient(confluent_settings(broker, SECRET))
    metadata = admin.list_topics(timeout=CLIENT_TIMEOUT_SECONDS)
    assert [(node.id, str(node.host), node.port) for node in metadata.brokers.values()] == [(1, "127.0.0.1", broker.kafka_port)]
    assert "__consumer_offsets" not in metadata.topics  # internal and other tenants' names never reach a tenant


def test_librdkafka_with_a_wrong_secret_reports_an_authentication_error(broker: BrokerProcess) -> None:
    errors: list[KafkaError] = []
    settings = {**confluent_settings(broker, "not-the-secret"), "error_cb": errors.append}
    admin = AdminClient(settings)
    wait_until(lambda: (admin.poll(0.1), any(error.code() == KafkaError._AUTHENTICATION for error in errors))[1], "an authentication error", timeout=15)
    assert "SASL_AUTHENTICATION_FAILED" in broker.read_log() or "invalid API key or secret" in broker.read_log()
    assert "not-the-secret" not in broker.read_log()


def test_kafka_python_authenticates_with_plain(broker: BrokerProcess) -> None:
    consumer = KafkaConsumer(
        bootstrap_servers=broker.kafka_address,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username=KEY,
        sasl_plain_password=SECRET,
        request_timeout_ms=int(CLIENT_TIMEOUT_SECONDS * 1000),
        api_version_auto_timeout_ms=int(CLIENT_TIMEOUT_SECONDS * 1000),
    )
    try:
        assert "__consumer_offsets" not in consumer.topics()
    finally:
        consumer.close()


def test_kafka_python_with_a_wrong_secret_is_refused(broker: BrokerProcess) -> None:
    with pytest.raises(KafkaPythonError):
        KafkaAdminClient(
            bootstrap_servers=broker.kafka_address,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username=KEY,
            sasl_plain_password="not-the-secret",
            request_timeout_ms=5000,
            api_version_auto_timeout_ms=5000,
        )


def test_sigterm_closes_open_kafka_connections_and_exits_cleanly(broker: BrokerProcess) -> None:
    with connect(broker.kafka_port) as idle:
        assert broker.process is not None
        broker.process.send_signal(signal.SIGTERM)
        assert broker.process.wait(timeout=30) == 0
        assert closed_by_peer(idle)
    assert "Kafka listener stopped" in broker.read_log()
