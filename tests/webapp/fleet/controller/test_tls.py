"""The Controller service over TLS: brokers with the CA register, plaintext callers are refused."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from django.core.management import CommandError, call_command

from broker_nodes.config import load_broker_config
from broker_nodes.server.channels import open_internal_channel
from deploy.tls import TlsFiles, ensure_local_certificates
from grpc_protos.weir.v1 import controller_pb2, controller_pb2_grpc
from webapp.controller.service import ControllerService
from webapp.controller.servicer import ControllerTlsError, create_controller_server
from weir.errors import ErrorCode

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="the test CA is made with the openssl command")

TOKEN = "controller-tls-test-token"
METADATA = (("x-weir-internal-token", TOKEN),)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return ensure_local_certificates(tmp_path_factory.mktemp("ca") / "tls", ["127.0.0.1", "localhost"])


def serve_tls(service: ControllerService, certificates: TlsFiles) -> tuple[grpc.Server, str]:
    server, port = create_controller_server(service, "127.0.0.1:0", internal_token=TOKEN, tls=(certificates.certificate, certificates.private_key))
    return server, f"127.0.0.1:{port}"


@pytest.fixture
def tls_controller(certificates: TlsFiles) -> Iterator[str]:
    """A TLS controller for calls refused before they reach it (its epoch is never checked)."""
    server, address = serve_tls(ControllerService(session_timeout_ms=9000, first_epoch=10, controller_epoch=1, push=lambda: None), certificates)
    try:
        yield address
    finally:
        server.stop(None)


@pytest.mark.django_db(transaction=True)
def test_a_broker_trusting_the_ca_registers_over_tls(certificates: TlsFiles, tmp_path: Path) -> None:
    # Without a given controller epoch the service takes the next one from the database: the current one.
    server, address = serve_tls(ControllerService(session_timeout_ms=9000, first_epoch=10, push=lambda: None), certificates)
    broker_config = load_broker_config(
        node_id=1,
        listen="127.0.0.1:0",
        data_dir=tmp_path,
        tls_cert=certificates.certificate,
        tls_key=certificates.private_key,
        tls_ca=certificates.ca_certificate,
    )
    try:
        with open_internal_channel(address, broker_config) as channel:
            answer = controller_pb2_grpc.ControllerStub(channel).RegisterBroker(
                controller_pb2.RegisterBrokerRequest(node_id=1, host="127.0.0.1", port=9092), metadata=METADATA, timeout=10
            )
    finally:
        server.stop(None)
    assert answer.error_code == ErrorCode.NO_ERROR
    assert answer.broker_epoch > 0


def test_a_plaintext_caller_is_refused_by_a_tls_controller(tls_controller: str) -> None:
    with grpc.insecure_channel(tls_controller) as channel, pytest.raises(grpc.RpcError) as raised:
        controller_pb2_grpc.ControllerStub(channel).BrokerHeartbeat(
            controller_pb2.BrokerHeartbeatRequest(node_id=1, broker_epoch=1), metadata=METADATA, timeout=3
        )
    assert raised.value.code() == grpc.StatusCode.UNAVAILABLE


def test_a_caller_trusting_another_ca_is_refused(tls_controller: str, tmp_path: Path) -> None:
    other_ca = ensure_local_certificates(tmp_path / "other-ca", ["127.0.0.1"]).ca_certificate
    with grpc.secure_channel(tls_controller, grpc.ssl_channel_credentials(other_ca.read_bytes())) as channel, pytest.raises(grpc.RpcError) as raised:
        controller_pb2_grpc.ControllerStub(channel).BrokerHeartbeat(
            controller_pb2.BrokerHeartbeatRequest(node_id=1, broker_epoch=1), metadata=METADATA, timeout=3
        )
    assert raised.value.code() == grpc.StatusCode.UNAVAILABLE


def test_an_unreadable_certificate_stops_the_controller_from_serving(certificates: TlsFiles, tmp_path: Path) -> None:
    not_pem = tmp_path / "server.pem"
    not_pem.write_text("not a certificate")
    service = ControllerService(session_timeout_ms=9000, first_epoch=10, controller_epoch=1, push=lambda: None)
    with pytest.raises(ControllerTlsError, match="not a PEM file"):
        create_controller_server(service, "127.0.0.1:0", internal_token=TOKEN, tls=(not_pem, certificates.private_key))
    with pytest.raises(ControllerTlsError, match="missing.pem"):
        create_controller_server(service, "127.0.0.1:0", internal_token=TOKEN, tls=(certificates.certificate, tmp_path / "missing.pem"))


def test_run_controller_needs_both_tls_flags(certificates: TlsFiles, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="--tls-cert and --tls-key go together"):
        call_command("run_controller", "--listen", "127.0.0.1:0", "--tls-cert", str(certificates.certificate))
    with pytest.raises(CommandError, match="is not a readable file"):
        call_command("run_controller", "--listen", "127.0.0.1:0", "--tls-cert", str(tmp_path / "missing.pem"), "--tls-key", str(certificates.private_key))
