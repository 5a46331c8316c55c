"""A security snapshot applied while a client's ProduceStream or FetchStream is open applies to its next request.

A stream is authenticated when it opens, but producers and consumers keep theirs open for
hours: as on a Kafka connection (``kafka_protocol.sasl``), removed ACLs refuse the stream's next
request and a revoked key (or an expired tenant token) ends the stream UNAUTHENTICATED, without the
client reconnecting.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from broker_nodes.server import servicer
from grpc_protos.weir.v1 import admin_pb2, broker_pb2
from tests.broker_nodes.security.managed_cluster import INTERNAL, SecuredBroker, allow, as_key, brokers, credential, tenant_token, topic
from tests.broker_nodes.server.helpers import batch
from weir.tenant_tokens import TENANT_TOKEN_HEADER

TENANT = "tn-aaaaaaaaaa"
PRINCIPAL = "User:sa-alice"
ALICE_KEY = as_key("KEYALICE", "alice-secret")
TOPIC_AUTHORIZATION_FAILED = 29
TOKEN_LIFETIME_MS = 1500


class OpenStream:
    """One bidi stream (``method``: the stub's ProduceStream or FetchStream) whose requests the test sends one at a time."""

    def __init__(self, method: Callable[..., Any], metadata: tuple[tuple[str, str], ...]) -> None:
        self._outgoing: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._responses = method(self._requests(), metadata=metadata)

    def _requests(self) -> Iterator[Any]:
        while (request := self._outgoing.get()) is not None:
            yield request

    def exchange(self, request: Any) -> Any:
        self._outgoing.put(request)
        return next(self._responses)

    def close(self) -> None:
        self._outgoing.put(None)
        self._responses.cancel()


def produce_request(value: bytes) -> broker_pb2.ProduceRequest:
    data = broker_pb2.ProducePartitionData(partition=0, records=batch([value]))
    return broker_pb2.ProduceRequest(acks=1, timeout_ms=1000, topics=[broker_pb2.ProduceTopicData(topic="orders", partitions=[data])])


def fetch_request() -> broker_pb2.FetchRequest:
    partition = broker_pb2.FetchPartition(partition=0, fetch_offset=0, current_leader_epoch=-1)
    return broker_pb2.FetchRequest(max_wait_ms=0, replica_id=-1, topics=[broker_pb2.FetchTopic(topic="orders", partitions=[partition])])


def apply_security(broker: SecuredBroker, version: int, *, key: bool = True, acl: bool = True) -> None:
    broker.admin.ApplySecurity(
        admin_pb2.ApplySecurityRequest(
            version=version,
            credentials=[credential("KEYALICE", "alice-secret", TENANT, PRINCIPAL)] if key else [],
            acls=[allow(TENANT, PRINCIPAL, admin_pb2.ACL_OPERATION_ALL, "orders")] if acl else [],
        ),
        metadata=INTERNAL,
    )


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[SecuredBroker]:
    broker = SecuredBroker(tmp_path / "node-1").start()
    broker.admin.ApplyPartitions(
        admin_pb2.ApplyPartitionsRequest(
            version=1, cluster_id="weir-test", brokers=brokers((1, broker.port)), topics=[topic(TENANT, "orders"), topic("", "__consumer_offsets")]
        ),
        metadata=INTERNAL,
    )
    apply_security(broker, 1)
    yield broker
    broker.stop()


def partition_error(answer: Any) -> int:
    return int(answer.topics[0].partitions[0].error_code)


STREAMS = {
    "produce": (lambda stub: stub.ProduceStream, lambda: produce_request(b"order")),
    "fetch": (lambda stub: stub.FetchStream, fetch_request),
}


@pytest.mark.parametrize("kind", STREAMS)
def test_acls_removed_while_a_stream_is_open_refuse_its_next_request(secured: SecuredBroker, kind: str) -> None:
    method, request = STREAMS[kind]
    stream = OpenStream(method(secured.stub), ALICE_KEY)
    try:
        assert partition_error(stream.exchange(request())) == 0
        apply_security(secured, 2, acl=False)
        assert partition_error(stream.exchange(request())) == TOPIC_AUTHORIZATION_FAILED
        apply_security(secured, 3)  # granted again: the same stream is served again
        assert partition_error(stream.exchange(request())) == 0
    finally:
        stream.close()


@pytest.mark.parametrize("kind", STREAMS)
def test_a_key_revoked_while_a_stream_is_open_ends_it_unauthenticated(secured: SecuredBroker, kind: str) -> None:
    method, request = STREAMS[kind]
    stream = OpenStream(method(secured.stub), ALICE_KEY)
    try:
        assert partition_error(stream.exchange(request())) == 0
        apply_security(secured, 2, key=False)
        with pytest.raises(grpc.RpcError) as ended:
            stream.exchange(request())
    finally:
        stream.close()
    assert ended.value.code() == grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]


def test_a_stream_opened_with_a_tenant_token_ends_once_the_token_expires(secured: SecuredBroker, monkeypatch: pytest.MonkeyPatch) -> None:
    # Resolved again at every request here (30 s in production), so that the test need not wait that long.
    monkeypatch.setattr(servicer, "STREAM_RESOLVE_SECONDS", 0.0)
    token = tenant_token(TENANT, lifetime_ms=TOKEN_LIFETIME_MS)
    stream = OpenStream(secured.stub.FetchStream, ((TENANT_TOKEN_HEADER, token),))
    deadline = time.monotonic() + TOKEN_LIFETIME_MS / 1000 + 10.0
    try:
        assert partition_error(stream.exchange(fetch_request())) == 0
        with pytest.raises(grpc.RpcError) as ended:
            while time.monotonic() < deadline:  # bounded: answered until the token expires
                assert partition_error(stream.exchange(fetch_request())) == 0
                time.sleep(0.05)
    finally:
        stream.close()
    assert ended.value.code() == grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]
    assert "expired" in (ended.value.details() or "")  # type: ignore[attr-defined]
