"""SASL/PLAIN on the Kafka listener of a broker that requires credentials (as the control plane runs it)."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as SaslHandshakeRequestV0
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from broker_nodes.kafka_protocol.framing import encode_raw, encode_request
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc
from tests.broker_nodes.security.managed_cluster import INTERNAL, INTERNAL_TOKEN, credential
from tests.kafka_protocol.wire import call, closed_by_peer, connect, raw_request, read_frame
from tests.support.in_process_broker import InProcessBroker

TENANT = "tn-aaaaaaaaaa"
KEY = "KEYALICE"
SECRET = "alice-secret"
METADATA_V1_ALL_TOPICS = struct.pack(">i", -1)  # Metadata v1's body: a null topic array


class SecuredKafkaBroker(InProcessBroker):
    @property
    def admin_stub(self) -> admin_pb2_grpc.AdminStub:
        return admin_pb2_grpc.AdminStub(self.channel)

    @property
    def kafka_port(self) -> int:
        assert self.running is not None
        return self.running.kafka_port


def apply_credentials(broker: SecuredKafkaBroker, version: int, *credentials: admin_pb2.Credential) -> None:
    admin = broker.admin_stub
    admin.ApplySecurity(admin_pb2.ApplySecurityRequest(version=version, credentials=list(credentials)), metadata=INTERNAL)


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[SecuredKafkaBroker]:
    broker = SecuredKafkaBroker(
        tmp_path / "data",
        {"offsets.topic.num.partitions": "1", "kafka.listen": "127.0.0.1:0", "security.required": "true"},
        environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN},
    ).start()
    apply_credentials(broker, 1, credential(KEY, SECRET, TENANT, "User:sa-alice"))
    yield broker
    broker.stop()


def plain(username: str, password: str) -> bytes:
    return b"\x00" + username.encode() + b"\x00" + password.encode()


def authenticate(connection: socket.socket, username: str = KEY, password: str = SECRET) -> object:
    handshake = call(connection, SaslHandshakeRequest(mechanism="PLAIN"), correlation_id=1)
    assert handshake.error_code == ErrorCode.none
    assert handshake.mechanisms == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    return call(connection, SaslAuthenticateRequest(auth_bytes=plain(username, password)), correlation_id=2)


def test_plain_with_the_clusters_api_key_authenticates_and_requests_follow(secured: SecuredKafkaBroker) -> None:
    with connect(secured.kafka_port) as connection:
        assert call(connection, ApiVersionsRequest(client_software_name="x", client_software_version="1")).error_code == ErrorCode.none
        answer = authenticate(connection)
        assert answer.error_code == ErrorCode.none  # type: ignore[attr-defined]
        # After authentication requests go to the registered handlers: a second handshake is ILLEGAL_SASL_STATE, as in Kafka.
        again = call(connection, SaslHandshakeRequest(mechanism="PLAIN"), correlation_id=3)
        assert again.error_code == ErrorCode.illegal_sasl_state
        assert call(connection, ApiVersionsRequest(client_software_name="x", client_software_version="1"), correlation_id=4).error_code == ErrorCode.none
    # The key's use names the application: the request header's client.id, KIP-511's software, the address.
    (use,) = secured.admin_stub.DescribeState(admin_pb2.DescribeStateRequest(), metadata=INTERNAL).credential_uses
    assert [(app.client_id, app.software_name, app.software_version, app.address) for app in use.applications] == [("weir", "x", "1", "127.0.0.1")]


@pytest.mark.parametrize(("username", "password"), [(KEY, "wrong"), ("KEYNOBODY", SECRET)])
def test_wrong_credentials_get_sasl_authentication_failed_and_the_connection_closes(secured: SecuredKafkaBroker, username: str, password: str) -> None:
    with connect(secured.kafka_port) as connection:
        answer = authenticate(connection, username, password)
        assert answer.error_code == ErrorCode.sasl_authentication_failed  # type: ignore[attr-defined]
        assert "invalid API key or secret" in answer.error_message  # type: ignore[attr-defined]
        assert password not in answer.error_message  # type: ignore[attr-defined]
        assert closed_by_peer(connection)


def test_a_malformed_plain_token_is_refused(secured: SecuredKafkaBroker) -> None:
    with connect(secured.kafka_port) as connection:
        call(connection, SaslHandshakeRequest(mechanism="PLAIN"), correlation_id=1)
        answer = call(connection, SaslAuthenticateRequest(auth_bytes=b"no-separators"), correlation_id=2)
        assert answer.error_code == ErrorCode.sasl_authentication_failed
        assert "three fields" in answer.error_message
        assert closed_by_peer(connection)


def test_a_request_before_authentication_closes_the_connection(secured: SecuredKafkaBroker) -> None:
    with connect(secured.kafka_port) as connection:
        connection.sendall(raw_request(3, 1, correlation_id=9, body=METADATA_V1_ALL_TOPICS))
        assert closed_by_peer(connection)


def test_sasl_authenticate_without_a_handshake_closes_the_connection(secured: SecuredKafkaBroker) -> None:
    with connect(secured.kafka_port) as connection:
        connection.sendall(encode_request(1, SaslAuthenticateRequest(auth_bytes=plain(KEY, SECRET))))
        assert closed_by_peer(connection)


def test_a_frame_above_half_a_megabyte_before_authentication_is_refused(secured: SecuredKafkaBroker) -> None:
    with connect(secured.kafka_port, timeout=5.0) as connection:
        connection.sendall(struct.pack(">i", 600 * 1024))
        assert closed_by_peer(connection)


def test_handshake_v0_then_a_raw_plain_token_authenticates(secured: SecuredKafkaBroker) -> None:
    with connect(secured.kafka_port) as connection:
        assert call(connection, SaslHandshakeRequestV0(mechanism="PLAIN")).error_code == ErrorCode.none
        connection.sendall(encode_raw(plain(KEY, SECRET)))
        assert read_frame(connection) == b""
        assert call(connection, ApiVersionsRequest(client_software_name="x", client_software_version="1"), correlation_id=5).error_code == ErrorCode.none


def test_handshake_v0_with_a_wrong_raw_token_closes_the_connection(secured: SecuredKafkaBroker) -> None:
    with connect(secured.kafka_port) as connection:
        call(connection, SaslHandshakeRequestV0(mechanism="PLAIN"))
        connection.sendall(encode_raw(plain(KEY, "wrong")))
        assert closed_by_peer(connection)


def test_a_revoked_key_closes_its_open_connections_at_their_next_request(secured: SecuredKafkaBroker) -> None:
    with connect(secured.kafka_port) as connection:
        assert authenticate(connection).error_code == ErrorCode.none  # type: ignore[attr-defined]
        apply_credentials(secured, 2)  # the key is gone from the next snapshot
        connection.sendall(raw_request(3, 1, correlation_id=9, body=METADATA_V1_ALL_TOPICS))
        assert closed_by_peer(connection)
    with connect(secured.kafka_port) as connection:
        assert authenticate(connection).error_code == ErrorCode.sasl_authentication_failed  # type: ignore[attr-defined]
    assert secured.running is not None
    assert secured.running.metrics.registry.get_sample_value("weir_broker_kafka_connections_closed_total", {"reason": "revoked"}) == 1


def test_a_broker_without_security_accepts_plain_with_any_credentials(tmp_path: Path) -> None:
    broker = InProcessBroker(tmp_path / "open", {"offsets.topic.num.partitions": "1", "kafka.listen": "127.0.0.1:0"}).start()
    try:
        assert broker.running is not None
        with connect(broker.running.kafka_port) as connection:
            assert authenticate(connection, "anyone", "anything").error_code == ErrorCode.none  # type: ignore[attr-defined]
    finally:
        broker.stop()
