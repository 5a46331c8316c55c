"""The Kafka listener's muting after throttled responses (KIP-219), handler failures, IPv6 and TLS (SASL_SSL)."""

from __future__ import annotations

import datetime
import shutil
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from kio.index import load_response_schema
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.describe_cluster.v0.request import DescribeClusterRequest
from kio.schema.errors import ErrorCode

import broker_nodes.kafka_protocol.handlers  # noqa: F401  (registers every handler; the listener imports them on its first connection)
from broker_nodes.config import load_broker_config
from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.framing import decode_response, encode_request
from broker_nodes.server.app import BrokerServer, start_broker_server
from deploy.tls import ensure_local_certificates
from tests.kafka_protocol.wire import call, closed_by_peer, connect, read_frame
from tests.support.in_process_broker import InProcessBroker

DESCRIBE_CLUSTER = 60
THROTTLE_MS = 1000  # long enough that an unmuted answer on a loaded machine is still far quicker


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    running = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1", "kafka.listen": "127.0.0.1:0"}).start()
    yield running
    running.stop()


def replace_handler(monkeypatch: pytest.MonkeyPatch, api_key: int, handler: api.Handler) -> None:
    """Serve ``api_key`` with ``handler`` for one test (the registry is restored afterwards)."""
    registration = api.registration(api_key)
    assert registration is not None
    monkeypatch.setitem(api._registry, api_key, api.Registration(api_key, registration.min_version, registration.max_version, handler))


def throttled_describe_cluster(context: api.KafkaRequestContext, request: Any) -> Any:
    response_type: Any = load_response_schema(DESCRIBE_CLUSTER, context.api_version)
    return response_type(
        throttle_time=datetime.timedelta(milliseconds=THROTTLE_MS),
        error_code=ErrorCode.none,
        error_message=None,
        cluster_id="c",
        controller_id=1,
        brokers=(),
        cluster_authorized_operations=-2147483648,
    )


def test_a_throttled_response_mutes_the_connection_for_throttle_time(broker: InProcessBroker, monkeypatch: pytest.MonkeyPatch) -> None:
    replace_handler(monkeypatch, DESCRIBE_CLUSTER, throttled_describe_cluster)
    assert broker.running is not None
    port = broker.running.kafka_port
    request = DescribeClusterRequest(include_cluster_authorized_operations=False)
    with connect(port) as muted, connect(port) as bystander:
        started = time.monotonic()
        # Two requests sent at once: the first is answered at once (with its throttle time),
        # the second only after the connection was muted for that long (KIP-219).
        muted.sendall(encode_request(1, request) + encode_request(2, ApiVersionsRequest(client_software_name="x", client_software_version="1")))
        first_id, first = decode_response(read_frame(muted), load_response_schema(DESCRIBE_CLUSTER, 0))
        answered_first = time.monotonic() - started
        assert (first_id, first.throttle_time) == (1, datetime.timedelta(milliseconds=THROTTLE_MS))
        # Other connections are not muted.
        assert call(bystander, ApiVersionsRequest(client_software_name="x", client_software_version="1")).error_code == ErrorCode.none
        read_frame(muted)
        answered_second = time.monotonic() - started
    assert answered_first < THROTTLE_MS / 1000
    assert answered_second >= THROTTLE_MS / 1000 * 0.9


def test_a_handler_that_raises_closes_only_its_connection(broker: InProcessBroker, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(context: api.KafkaRequestContext, request: Any) -> Any:
        raise RuntimeError("a bug in a handler")

    replace_handler(monkeypatch, DESCRIBE_CLUSTER, failing)
    assert broker.running is not None
    port = broker.running.kafka_port
    with connect(port) as bystander, connect(port) as victim:
        victim.sendall(encode_request(1, DescribeClusterRequest(include_cluster_authorized_operations=False)))
        assert closed_by_peer(victim)
        assert call(bystander, ApiVersionsRequest(client_software_name="x", client_software_version="1")).error_code == ErrorCode.none
    registry = broker.running.metrics.registry
    assert registry.get_sample_value("weir_broker_kafka_connections_closed_total", {"reason": "handler_error"}) == 1
    assert registry.get_sample_value("weir_broker_kafka_requests_total", {"api": "describe_cluster", "outcome": "closed"}) == 1


def test_the_listener_serves_ipv6_loopback(tmp_path: Path) -> None:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    broker = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1", "kafka.listen": "[::1]:0"}).start()
    try:
        assert broker.running is not None
        with connect(broker.running.kafka_port, host="::1") as connection:
            assert call(connection, ApiVersionsRequest(client_software_name="x", client_software_version="1")).error_code == ErrorCode.none
    finally:
        broker.stop()


@pytest.fixture
def tls_broker(tmp_path: Path) -> Iterator[tuple[BrokerServer, Path]]:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command makes the test CA")
    files = ensure_local_certificates(tmp_path / "tls", ["127.0.0.1", "localhost"])
    config = load_broker_config(
        node_id=1,
        listen="127.0.0.1:0",
        data_dir=tmp_path / "data",
        configs=["offsets.topic.num.partitions=1", "kafka.listen=127.0.0.1:0"],
        tls_cert=files.certificate,
        tls_key=files.private_key,
        tls_ca=files.ca_certificate,
    )
    running = start_broker_server(config)
    yield running, files.ca_certificate
    running.stop(1.0)


def test_a_tls_broker_speaks_tls_on_its_kafka_listener(tls_broker: tuple[BrokerServer, Path]) -> None:
    running, ca_certificate = tls_broker
    with connect(running.kafka_port, timeout=5.0) as plaintext:  # a plaintext client gets nothing it can read
        plaintext.sendall(encode_request(1, ApiVersionsRequest(client_software_name="x", client_software_version="1")))
        with pytest.raises((ConnectionError, TimeoutError, OSError)):
            read_frame(plaintext)
    context = ssl.create_default_context(cafile=str(ca_certificate))
    with connect(running.kafka_port) as raw, context.wrap_socket(raw, server_hostname="127.0.0.1") as secure:
        assert call(secure, ApiVersionsRequest(client_software_name="x", client_software_version="1")).error_code == ErrorCode.none  # type: ignore[arg-type]
    admin = AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{running.kafka_port}",
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(ca_certificate),
            "sasl.mechanism": "PLAIN",
            "sasl.username": "anyone",
            "sasl.password": "anything",
        }
    )
    metadata = admin.list_topics(timeout=15)
    assert [node.port for node in metadata.brokers.values()] == [running.kafka_port]


def test_requests_that_may_wait_never_hold_the_threads_of_those_that_answer_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    released = threading.Event()
    entered = threading.Semaphore(0)

    def parked_describe_cluster(context: api.KafkaRequestContext, request: Any) -> Any:
        entered.release()
        released.wait(20)
        return throttled_describe_cluster(context, request)

    # DescribeCluster answers at once in real life; here it parks, standing in for a long poll on the waiting pool.
    monkeypatch.setattr("broker_nodes.kafka_protocol.connection.QUICK_API_KEYS", frozenset({17, 18, 36}))
    replace_handler(monkeypatch, DESCRIBE_CLUSTER, parked_describe_cluster)
    broker = InProcessBroker(
        tmp_path / "data", {"offsets.topic.num.partitions": "1", "kafka.listen": "127.0.0.1:0", "kafka.waiting.handler.threads": "1"}
    ).start()
    try:
        assert broker.running is not None
        port = broker.running.kafka_port
        request = encode_request(1, DescribeClusterRequest(include_cluster_authorized_operations=False))
        with connect(port) as first, connect(port) as second, connect(port) as quick:
            first.sendall(request)
            assert entered.acquire(timeout=10)  # the one waiting thread is taken
            second.sendall(request)  # queued behind it
            started = time.monotonic()
            assert call(quick, ApiVersionsRequest(client_software_name="x", client_software_version="1")).error_code == ErrorCode.none
            assert time.monotonic() - started < 5.0
            assert not entered.acquire(timeout=0.2)  # the second waits for a thread
            released.set()
            assert decode_response(read_frame(first), load_response_schema(DESCRIBE_CLUSTER, 0))[0] == 1
            assert decode_response(read_frame(second), load_response_schema(DESCRIBE_CLUSTER, 0))[0] == 1
    finally:
        released.set()
        broker.stop()
