"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 on the Kafka listener of a broker that requires credentials, over raw frames.

kafka-python's SCRAM client computes the client's side; the broker holds only what the control
plane derives (``webapp.accounts.scram``), pushed in a security snapshot.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.sasl.scram import ScramClient
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as SaslHandshakeRequestV0
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from broker_nodes.kafka_protocol.framing import encode_raw
from grpc_protos.weir.v1 import admin_pb2
from tests.broker_nodes.security.managed_cluster import INTERNAL_TOKEN, credential
from tests.kafka_protocol.test_listener_sasl import METADATA_V1_ALL_TOPICS, SecuredKafkaBroker, apply_credentials
from tests.kafka_protocol.wire import call, closed_by_peer, connect, raw_request, read_frame
from webapp.accounts.scram import new_scram_credentials

TENANT = "tn-bbbbbbbbbb"
KEY = "WCKSCRAMBOB00001"
OLD_KEY = "WCKOLDPLAIN00001"
SECRET = "weir_cluster_bob-secret-0123456789"
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def scram_credential(key: str, secret: str) -> admin_pb2.Credential:
    """A cluster key as the control plane pushes one created with SCRAM support."""
    pushed = credential(key, secret, TENANT, "User:sa-bob")
    pushed.scram.extend(
        admin_pb2.ScramCredential(mechanism=item.mechanism, salt=item.salt, iterations=item.iterations, stored_key=item.stored_key, server_key=item.server_key)
        for item in new_scram_credentials(secret)
    )
    return pushed


def pushed_keys() -> list[admin_pb2.Credential]:
    return [scram_credential(KEY, SECRET), credential(OLD_KEY, SECRET, TENANT, "User:sa-old")]


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[SecuredKafkaBroker]:
    broker = SecuredKafkaBroker(
        tmp_path / "data",
        {"offsets.topic.num.partitions": "1", "kafka.listen": "127.0.0.1:0", "security.required": "true"},
        environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN},
    ).start()
    apply_credentials(broker, 1, *pushed_keys())
    yield broker
    broker.stop()


def scram_handshake(connection: socket.socket, mechanism: str) -> None:
    handshake = call(connection, SaslHandshakeRequest(mechanism=mechanism), correlation_id=1)
    assert handshake.error_code == ErrorCode.none
    assert handshake.mechanisms == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def authenticate(connection: socket.socket, mechanism: str, key: str = KEY, secret: str = SECRET) -> object:
    """Both SCRAM round trips over SaslAuthenticate; the last response (or the first that failed)."""
    scram_handshake(connection, mechanism)
    client = ScramClient(key, secret, mechanism)
    first = call(connection, SaslAuthenticateRequest(auth_bytes=client.first_message()), correlation_id=2)
    if first.error_code != ErrorCode.none:
        return first
    client.process_server_first_message(first.auth_bytes)
    final = call(connection, SaslAuthenticateRequest(auth_bytes=client.final_message()), correlation_id=3)
    if final.error_code == ErrorCode.none:
        client.process_server_final_message(final.auth_bytes)  # raises when the broker's signature is wrong
    return final


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_scram_with_a_key_made_by_the_control_plane_authenticates_and_requests_follow(secured: SecuredKafkaBroker, mechanism: str) -> None:
    with connect(secured.kafka_port) as connection:
        assert authenticate(connection, mechanism).error_code == ErrorCode.none  # type: ignore[attr-defined]
        assert call(connection, ApiVersionsRequest(client_software_name="x", client_software_version="1"), correlation_id=4).error_code == ErrorCode.none
        again = call(connection, SaslHandshakeRequest(mechanism=mechanism), correlation_id=5)
        assert again.error_code == ErrorCode.illegal_sasl_state


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_wrong_secret_gets_sasl_authentication_failed_and_the_connection_closes(secured: SecuredKafkaBroker, mechanism: str) -> None:
    with connect(secured.kafka_port) as connection:
        answer = authenticate(connection, mechanism, secret="weir_cluster_wrong")
        assert answer.error_code == ErrorCode.sasl_authentication_failed  # type: ignore[attr-defined]
        assert "the proof does not match" in answer.error_message  # type: ignore[attr-defined]
        assert closed_by_peer(connection)


def test_an_unknown_key_fails_at_the_first_message(secured: SecuredKafkaBroker) -> None:
    with connect(secured.kafka_port) as connection:
        answer = authenticate(connection, "SCRAM-SHA-256", key="WCKNOBODY0000001")
        assert answer.error_code == ErrorCode.sasl_authentication_failed  # type: ignore[attr-defined]
        assert "invalid API key or secret" in answer.error_message  # type: ignore[attr-defined]
        assert closed_by_peer(connection)


def test_a_key_created_before_scram_support_is_told_to_use_plain_or_a_new_key(secured: SecuredKafkaBroker) -> None:
    with connect(secured.kafka_port) as connection:
        answer = authenticate(connection, "SCRAM-SHA-512", key=OLD_KEY)
        assert answer.error_code == ErrorCode.sasl_authentication_failed  # type: ignore[attr-defined]
        assert "create a new cluster API key, or use sasl.mechanism=PLAIN" in answer.error_message  # type: ignore[attr-defined]
        assert closed_by_peer(connection)


def test_a_client_final_with_a_wrong_nonce_is_refused(secured: SecuredKafkaBroker) -> None:
    with connect(secured.kafka_port) as connection:
        scram_handshake(connection, "SCRAM-SHA-256")
        client = ScramClient(KEY, SECRET, "SCRAM-SHA-256")
        first = call(connection, SaslAuthenticateRequest(auth_bytes=client.first_message()), correlation_id=2)
        client.process_server_first_message(first.auth_bytes)
        tampered = client.final_message().replace(b",p=", b"x,p=")
        answer = call(connection, SaslAuthenticateRequest(auth_bytes=tampered), correlation_id=3)
        assert answer.error_code == ErrorCode.sasl_authentication_failed
        assert "nonce" in answer.error_message
        assert closed_by_peer(connection)


def test_a_garbled_client_first_is_refused(secured: SecuredKafkaBroker) -> None:
    with connect(secured.kafka_port) as connection:
        scram_handshake(connection, "SCRAM-SHA-256")
        answer = call(connection, SaslAuthenticateRequest(auth_bytes=b"n,,n=" + KEY.encode() + b",r=abc,tokenauth=true"), correlation_id=2)
        assert answer.error_code == ErrorCode.sasl_authentication_failed
        assert "tokenauth" in answer.error_message
        assert closed_by_peer(connection)


def test_handshake_v0_then_raw_scram_tokens_authenticate(secured: SecuredKafkaBroker) -> None:
    with connect(secured.kafka_port) as connection:
        assert call(connection, SaslHandshakeRequestV0(mechanism="SCRAM-SHA-512")).error_code == ErrorCode.none
        client = ScramClient(KEY, SECRET, "SCRAM-SHA-512")
        connection.sendall(encode_raw(client.first_message()))
        client.process_server_first_message(read_frame(connection))
        connection.sendall(encode_raw(client.final_message()))
        client.process_server_final_message(read_frame(connection))
        assert call(connection, ApiVersionsRequest(client_software_name="x", client_software_version="1"), correlation_id=5).error_code == ErrorCode.none


def test_a_revoked_key_closes_its_open_scram_connections_at_their_next_request(secured: SecuredKafkaBroker) -> None:
    with connect(secured.kafka_port) as connection:
        assert authenticate(connection, "SCRAM-SHA-256").error_code == ErrorCode.none  # type: ignore[attr-defined]
        apply_credentials(secured, 2, credential(OLD_KEY, SECRET, TENANT, "User:sa-old"))  # KEY is gone from the next snapshot
        connection.sendall(raw_request(3, 1, correlation_id=9, body=METADATA_V1_ALL_TOPICS))
        assert closed_by_peer(connection)
    assert secured.running is not None
    assert secured.running.metrics.registry.get_sample_value("weir_broker_kafka_connections_closed_total", {"reason": "revoked"}) == 1
