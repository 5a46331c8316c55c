"""The Kafka listener's framing, limits and bad input, over raw sockets against an in-process broker."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

import broker_nodes.kafka_protocol.handlers  # noqa: F401  (registers every handler; the listener imports them on its first connection)
from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.framing import decode_response, encode_request
from tests.kafka_protocol.wire import call, closed_by_peer, connect, raw_request, read_frame
from tests.support.in_process_broker import InProcessBroker
from tests.support.waiting import wait_until

BASE_CONFIGS = {"offsets.topic.num.partitions": "1", "kafka.listen": "127.0.0.1:0"}
READ_TIMEOUT_MS = 400


@pytest.fixture
def start_broker(tmp_path: Path) -> Iterator[Callable[..., InProcessBroker]]:
    started: list[InProcessBroker] = []

    def start(**configs: str) -> InProcessBroker:
        merged = {**BASE_CONFIGS, **{key.replace("_", "."): value for key, value in configs.items()}}
        broker: InProcessBroker = InProcessBroker(tmp_path / f"data-{len(started)}", merged).start()
        started.append(broker)
        return broker

    yield start
    for broker in started:
        broker.stop()


@pytest.fixture
def broker(start_broker: Callable[..., InProcessBroker]) -> InProcessBroker:
    return start_broker(kafka_request_read_timeout_ms=str(READ_TIMEOUT_MS))


def kafka_port(broker: InProcessBroker) -> int:
    assert broker.running is not None
    return broker.running.kafka_port


def closed_count(broker: InProcessBroker, reason: str) -> float:
    assert broker.running is not None
    value = broker.running.metrics.registry.get_sample_value("weir_broker_kafka_connections_closed_total", {"reason": reason})
    return value or 0.0


def api_versions(port: int) -> object:
    with connect(port) as connection:
        return call(connection, ApiVersionsRequest(client_software_name="weir-tests", client_software_version="1"))


def assert_still_serving(broker: InProcessBroker) -> None:
    response = api_versions(kafka_port(broker))
    assert response.error_code == ErrorCode.none  # type: ignore[attr-defined]


def test_api_versions_lists_exactly_the_registered_apis(broker: InProcessBroker) -> None:
    response = api_versions(kafka_port(broker))
    answered = {(entry.api_key, entry.min_version, entry.max_version) for entry in response.api_keys}  # type: ignore[attr-defined]
    registered = {(item.api_key, item.min_version, item.max_version) for item in api.registrations().values()}
    assert answered == registered
    assert {(17, 0, 1), (18, 0, 3), (36, 0, 2)} <= answered
    assert response.finalized_features == ()  # type: ignore[attr-defined]


def test_api_versions_above_the_supported_version_answers_v0_with_unsupported_version_and_the_list(broker: InProcessBroker) -> None:
    with connect(kafka_port(broker)) as connection:
        connection.sendall(raw_request(18, 99, correlation_id=42, body=b"\x00\x00\x00"))
        correlation_id, response = decode_response(read_frame(connection), ApiVersionsResponseV0)
        assert correlation_id == 42
        assert response.error_code == ErrorCode.unsupported_version
        assert (18, 0, 3) in {(entry.api_key, entry.min_version, entry.max_version) for entry in response.api_keys}
        # The client retries with a version from the list on the same connection.
        assert call(connection, ApiVersionsRequest(client_software_name="x", client_software_version="1")).error_code == ErrorCode.none


def test_a_size_prefix_above_socket_request_max_bytes_closes_the_connection_before_any_body_is_read(start_broker: Callable[..., InProcessBroker]) -> None:
    broker = start_broker(socket_request_max_bytes="1048576")
    assert broker.running is not None
    budget_before = broker.running.metrics.registry.get_sample_value("weir_broker_request_budget_bytes")
    with connect(kafka_port(broker), timeout=5.0) as connection:
        connection.sendall(struct.pack(">i", 2**31 - 1))  # announces 2 GiB and sends nothing more
        started = time.monotonic()
        assert closed_by_peer(connection)
        assert time.monotonic() - started < 4.0  # refused at once, not after waiting for the body
    with connect(kafka_port(broker), timeout=5.0) as connection:
        connection.sendall(struct.pack(">i", -5))
        assert closed_by_peer(connection)
    assert closed_count(broker, "too_large") == 2
    assert broker.running.metrics.registry.get_sample_value("weir_broker_request_budget_bytes") == budget_before
    assert_still_serving(broker)


def test_a_truncated_frame_closes_only_its_connection(broker: InProcessBroker) -> None:
    port = kafka_port(broker)
    with connect(port) as bystander:
        with connect(port) as connection:
            connection.sendall(struct.pack(">i", 100) + b"\x00\x12\x00\x03")  # 4 of 100 bytes, then the client leaves
            connection.shutdown(socket.SHUT_WR)
            assert closed_by_peer(connection)
        assert call(bystander, ApiVersionsRequest(client_software_name="x", client_software_version="1")).error_code == ErrorCode.none


def test_a_frame_shorter_than_a_request_header_is_malformed(broker: InProcessBroker) -> None:
    with connect(kafka_port(broker)) as connection:
        connection.sendall(struct.pack(">i", 3) + b"\x00\x12\x00")
        assert closed_by_peer(connection)
    assert closed_count(broker, "malformed") == 1


def test_an_unknown_api_key_closes_the_connection(broker: InProcessBroker) -> None:
    with connect(kafka_port(broker)) as connection:
        connection.sendall(raw_request(4242, 0, correlation_id=1))
        assert closed_by_peer(connection)
    assert closed_count(broker, "unknown_api") == 1
    assert_still_serving(broker)


def test_an_unsupported_version_of_another_api_closes_the_connection(broker: InProcessBroker) -> None:
    with connect(kafka_port(broker)) as connection:
        connection.sendall(raw_request(17, 7, correlation_id=1, body=b"\x00\x05PLAIN"))  # SaslHandshake has v0-v1
        assert closed_by_peer(connection)
    assert closed_count(broker, "unsupported_version") == 1


def test_a_body_that_does_not_decode_closes_the_connection(broker: InProcessBroker) -> None:
    with connect(kafka_port(broker)) as connection:
        connection.sendall(raw_request(17, 1, correlation_id=1, body=b"\x00\x50PL"))  # a string claiming 80 bytes, 2 present
        assert closed_by_peer(connection)
    assert closed_count(broker, "malformed") == 1


def test_half_a_request_then_silence_is_closed_after_the_read_timeout(broker: InProcessBroker) -> None:
    port = kafka_port(broker)
    with connect(port) as bystander, connect(port) as staller:
        staller.sendall(struct.pack(">i", 50) + b"\x00\x12")
        started = time.monotonic()
        assert closed_by_peer(staller)
        waited = time.monotonic() - started
        assert READ_TIMEOUT_MS / 1000 * 0.8 <= waited < 5.0
        assert call(bystander, ApiVersionsRequest(client_software_name="x", client_software_version="1")).error_code == ErrorCode.none
    assert closed_count(broker, "stalled") == 1


def test_a_connection_idle_longer_than_connections_max_idle_ms_is_closed(start_broker: Callable[..., InProcessBroker]) -> None:
    broker = start_broker(connections_max_idle_ms="500")
    with connect(kafka_port(broker)) as connection:
        call(connection, ApiVersionsRequest(client_software_name="x", client_software_version="1"))
        started = time.monotonic()
        assert closed_by_peer(connection)
        assert 0.4 <= time.monotonic() - started < 5.0
    assert closed_count(broker, "idle") == 1


def test_pipelined_requests_are_answered_in_order(broker: InProcessBroker) -> None:
    with connect(kafka_port(broker)) as connection:
        request = ApiVersionsRequest(client_software_name="x", client_software_version="1")
        connection.sendall(b"".join(encode_request(correlation_id, request) for correlation_id in range(100, 120)))
        answered = [decode_response(read_frame(connection), ApiVersionsResponse)[0] for _ in range(20)]
        assert answered == list(range(100, 120))


def test_connections_beyond_max_connections_are_closed_as_they_are_accepted(start_broker: Callable[..., InProcessBroker]) -> None:
    broker = start_broker(max_connections="3")
    port = kafka_port(broker)
    held = [connect(port) for _ in range(3)]
    try:
        for connection in held:  # each is served, so each is counted before the next one comes
            call(connection, ApiVersionsRequest(client_software_name="x", client_software_version="1"))
        with connect(port, timeout=5.0) as extra:
            assert closed_by_peer(extra)
        assert closed_count(broker, "too_many") == 1
        assert call(held[0], ApiVersionsRequest(client_software_name="x", client_software_version="1")).error_code == ErrorCode.none
    finally:
        for connection in held:
            connection.close()
    wait_until(lambda: broker.running is not None and broker.running.kafka is not None and broker.running.kafka.connection_count == 0, "connections gone")
    assert_still_serving(broker)


def test_a_thousand_connections_at_once_leave_a_normal_client_served(start_broker: Callable[..., InProcessBroker]) -> None:
    broker = start_broker()  # the default 30 s read timeout: the stalled third stay open during the test
    port = kafka_port(broker)
    crowd: list[socket.socket] = []
    try:
        for index in range(1000):
            connection = connect(port)
            crowd.append(connection)
            if index % 3 == 0:
                connection.sendall(struct.pack(">i", 64) + b"\x00")  # a third start a request and stall
        assert_still_serving(broker)
        assert broker.running is not None and broker.running.kafka is not None
        wait_until(lambda: broker.running.kafka.connection_count >= 1000, "the crowd accepted", timeout=20.0)  # type: ignore[union-attr]
        assert_still_serving(broker)
    finally:
        for connection in crowd:
            connection.close()
    wait_until(lambda: broker.running.kafka.connection_count == 0, "the crowd's connections closed", timeout=20.0)  # type: ignore[union-attr]
    assert_still_serving(broker)


def test_sasl_handshake_for_an_unoffered_mechanism_is_refused_with_the_enabled_mechanisms(broker: InProcessBroker) -> None:
    with connect(kafka_port(broker)) as connection:
        response = call(connection, SaslHandshakeRequest(mechanism="GSSAPI"))
        assert response.error_code == ErrorCode.unsupported_sasl_mechanism
        assert response.mechanisms == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
        assert closed_by_peer(connection)


def test_the_listener_counts_connections_and_requests_in_the_brokers_metrics(broker: InProcessBroker) -> None:
    assert broker.running is not None
    registry = broker.running.metrics.registry
    with connect(kafka_port(broker)) as connection:
        call(connection, ApiVersionsRequest(client_software_name="x", client_software_version="1"))
        assert registry.get_sample_value("weir_broker_kafka_connections") == 1
    wait_until(lambda: registry.get_sample_value("weir_broker_kafka_connections") == 0, "the connection counted as closed")
    assert registry.get_sample_value("weir_broker_kafka_requests_total", {"api": "api_versions", "outcome": "ok"}) == 1
    assert b"weir_broker_kafka_request_duration_seconds" in broker.running.metrics.exposition()
