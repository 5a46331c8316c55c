"""TLS end to end: a broker serving a certificate from a test CA, the SDK with security.protocol=SASL_SSL."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import grpc
import pytest

from broker_nodes.config import load_broker_config
from broker_nodes.server.app import start_broker_server
from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc
from weir.admin import AdminClient
from weir.errors import KafkaError, KafkaException

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl command makes the test CA")


def _openssl(*arguments: str, cwd: Path) -> None:
    subprocess.run(["openssl", *arguments], cwd=cwd, check=True, capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ca.pem, and broker.pem / broker-key.pem for 127.0.0.1 signed by it."""
    directory = tmp_path_factory.mktemp("tls")
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Weir test CA", cwd=directory
    )
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "broker-key.pem", "-out", "broker.csr", "-subj", "/CN=127.0.0.1", cwd=directory)
    (directory / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl(
        "x509",
        "-req",
        "-in",
        "broker.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca-key.pem",
        "-CAcreateserial",
        "-out",
        "broker.pem",
        "-days",
        "2",
        "-extfile",
        "san.cnf",
        cwd=directory,
    )
    return directory


@pytest.fixture
def tls_broker(tmp_path: Path, certificates: Path):
    config = load_broker_config(
        node_id=1,
        listen="127.0.0.1:0",
        data_dir=tmp_path / "data",
        configs=["offsets.topic.num.partitions=1", "auto.create.topics.enable=true"],
        tls_cert=certificates / "broker.pem",
        tls_key=certificates / "broker-key.pem",
        tls_ca=certificates / "ca.pem",
    )
    running = start_broker_server(config)
    yield running
    running.stop(grace_seconds=1.0)


def test_sdk_over_sasl_ssl_with_the_ca_lists_topics(tls_broker, certificates: Path) -> None:
    client = AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{tls_broker.port}",
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(certificates / "ca.pem"),
            "socket.timeout.ms": 5000,
        }
    )
    metadata = client.list_topics(timeout=5)
    assert "__consumer_offsets" in metadata.topics


def test_plaintext_client_is_refused_by_a_tls_broker(tls_broker) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{tls_broker.port}") as channel, pytest.raises(grpc.RpcError) as raised:
        broker_pb2_grpc.BrokerStub(channel).Metadata(broker_pb2.MetadataRequest(), timeout=3)
    assert raised.value.code() == grpc.StatusCode.UNAVAILABLE


def test_sdk_without_the_ca_does_not_trust_the_broker(tls_broker) -> None:
    client = AdminClient({"bootstrap.servers": f"127.0.0.1:{tls_broker.port}", "security.protocol": "SSL", "socket.timeout.ms": 2000})
    with pytest.raises(KafkaException):
        client.list_topics(timeout=2)


def test_without_certificate_verification_the_brokers_certificate_is_trusted(tls_broker) -> None:
    client = AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{tls_broker.port}",
            "security.protocol": "SSL",
            "enable.ssl.certificate.verification": False,
            "socket.timeout.ms": 5000,
        }
    )
    assert "__consumer_offsets" in client.list_topics(timeout=5).topics


def test_producing_to_a_new_topic_creates_it_when_the_broker_allows_it(tls_broker, certificates: Path) -> None:
    from weir import Producer

    config = {"bootstrap.servers": f"127.0.0.1:{tls_broker.port}", "security.protocol": "SSL", "ssl.ca.location": str(certificates / "ca.pem")}
    reports = []
    producer = Producer({**config, "on_delivery": lambda error, message: reports.append((error, message.topic()))})
    try:
        producer.produce("created-by-produce", b"first")
        assert producer.flush(10) == 0
    finally:
        producer.close()
    assert reports == [(None, "created-by-produce")]
    refusing = Producer({**config, "allow.auto.create.topics": False, "on_delivery": lambda error, message: reports.append((error, message.topic()))})
    try:
        refusing.produce("not-created", b"v")
        assert refusing.flush(10) == 0
    finally:
        refusing.close()
    assert reports[-1][0] is not None and reports[-1][0].code() == KafkaError._UNKNOWN_TOPIC
