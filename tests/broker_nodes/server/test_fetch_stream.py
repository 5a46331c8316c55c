"""FetchStream: a consumer's fetches on one stream, each answered in order as unary Fetch answers it
(authentication, ACLs, tenant names, the long poll); at most fetch.streams.max streams, beyond
which one is refused with the trailer that sends the SDK to unary Fetch (weir.fetch_streams);
a client that cancels gives back its stream's thread and slot, and its parked fetch, at once."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from broker_nodes.server.broker import request_thread_count
from grpc_protos.weir.v1 import admin_pb2, broker_pb2
from tests.broker_nodes.replication.cluster import wait_until
from tests.broker_nodes.security.managed_cluster import INTERNAL, SecuredBroker, allow, as_key, brokers, credential, topic
from tests.broker_nodes.server.helpers import batch, create_topic
from tests.broker_nodes.server.test_metrics import scrape
from tests.support.processes import free_port
from weir.fetch_streams import FETCH_STREAM_REFUSED_TRAILER

TENANT_A = "tn-aaaaaaaaaa"
TENANT_B = "tn-bbbbbbbbbb"
ALICE_KEY = as_key("KEYALICE", "alice-secret")
BOB_KEY = as_key("KEYBOB", "bob-secret")
LONG_POLL_MS = 60_000  # far longer than any bounded wait of these tests: an answer before it was woken


def _fetch_request(name: str, *, offset: int = 0, max_wait_ms: int = 0, min_bytes: int = 0) -> broker_pb2.FetchRequest:
    partition = broker_pb2.FetchPartition(partition=0, fetch_offset=offset, current_leader_epoch=-1)
    return broker_pb2.FetchRequest(
        max_wait_ms=max_wait_ms, min_bytes=min_bytes, replica_id=-1, topics=[broker_pb2.FetchTopic(topic=name, partitions=[partition])]
    )


def _produce(stub, name: str, value: bytes, metadata=()) -> None:  # type: ignore[no-untyped-def]
    data = broker_pb2.ProducePartitionData(partition=0, records=batch([value]))
    answer = stub.Produce(
        broker_pb2.ProduceRequest(acks=1, timeout_ms=1000, topics=[broker_pb2.ProduceTopicData(topic=name, partitions=[data])]), metadata=metadata
    )
    assert answer.topics[0].partitions[0].error_code == 0


class OpenFetchStream:
    """One FetchStream whose requests the test sends one at a time."""

    def __init__(self, stub, metadata=()) -> None:  # type: ignore[no-untyped-def]
        self._outgoing: queue.SimpleQueue[broker_pb2.FetchRequest | None] = queue.SimpleQueue()
        self.responses = stub.FetchStream(self._requests(), metadata=metadata)

    def _requests(self) -> Iterator[broker_pb2.FetchRequest]:
        while (request := self._outgoing.get()) is not None:
            yield request

    def send(self, request: broker_pb2.FetchRequest) -> None:
        self._outgoing.put(request)

    def answer(self) -> broker_pb2.FetchPartitionResponse:
        response: broker_pb2.FetchResponse = next(self.responses)
        return response.topics[0].partitions[0]

    def exchange(self, request: broker_pb2.FetchRequest) -> broker_pb2.FetchPartitionResponse:
        self.send(request)
        return self.answer()

    def close(self) -> None:
        self._outgoing.put(None)
        self.responses.cancel()


# ---------------------------------------------------------------------- the stream's fetches


def test_fetches_on_a_stream_are_answered_in_the_order_sent_from_where_each_asks(server, stub) -> None:
    create_topic(stub, "orders")
    for value in (b"a", b"b", b"c"):
        _produce(stub, "orders", value)
    stream = OpenFetchStream(stub)
    try:
        answers = [stream.exchange(_fetch_request("orders", offset=offset)) for offset in (0, 2, 3)]
    finally:
        stream.close()
    assert [answer.error_code for answer in answers] == [0, 0, 0]
    assert [answer.high_watermark for answer in answers] == [3, 3, 3]
    assert answers[0].records and answers[1].records and not answers[2].records  # offset 3 is the log end


def test_a_long_poll_on_a_stream_is_woken_by_an_append(server, stub) -> None:
    create_topic(stub, "orders")
    stream = OpenFetchStream(stub)
    try:
        stream.send(_fetch_request("orders", max_wait_ms=LONG_POLL_MS, min_bytes=1))
        wait_until(lambda: server.broker.purgatory.parked == 1, what="the stream's fetch to park")
        _produce(stub, "orders", b"wake")
        answer = stream.answer()
    finally:
        stream.close()
    assert answer.error_code == 0 and answer.high_watermark == 1 and b"wake" in answer.records


def test_a_malformed_fetch_ends_the_stream_invalid_argument(server, stub) -> None:
    stream = OpenFetchStream(stub)
    try:
        with pytest.raises(grpc.RpcError) as refused:
            stream.exchange(broker_pb2.FetchRequest(max_wait_ms=-1, topics=[]))
    finally:
        stream.close()
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]


def test_each_fetch_on_a_stream_counts_as_a_fetch_call_with_its_bytes_in_the_metrics(broker_server_factory) -> None:
    port = free_port()
    broker = broker_server_factory(metrics_port=str(port))
    create_topic(broker.stub, "metered")
    _produce(broker.stub, "metered", b"x" * 100)
    url = f"http://127.0.0.1:{port}/metrics"
    before = scrape(url)
    stream = OpenFetchStream(broker.stub)
    try:
        fetched = [stream.exchange(_fetch_request("metered", offset=offset)).records for offset in (0, 1)]
    finally:
        stream.close()
    after = scrape(url)

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after[key] - before.get(key, 0.0)

    assert grew("weir_broker_requests_total", service="weir.v1.Broker", method="Fetch", code="OK") == 2
    assert grew("weir_broker_request_duration_seconds_count", service="weir.v1.Broker", method="Fetch") == 2
    assert grew("weir_broker_bytes_out_total") == sum(len(records) for records in fetched) > 0


# ---------------------------------------------------------------------- the cap and departing clients


def test_a_broker_serving_fetch_streams_max_refuses_one_more_with_the_trailer(broker_server_factory) -> None:
    broker = broker_server_factory(fetch_streams_max="1")
    create_topic(broker.stub, "orders")
    first = OpenFetchStream(broker.stub)
    try:
        assert first.exchange(_fetch_request("orders")).error_code == 0
        second = OpenFetchStream(broker.stub)
        with pytest.raises(grpc.RpcError) as refused:
            second.exchange(_fetch_request("orders"))
        second.close()
    finally:
        first.close()
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    assert any(key == FETCH_STREAM_REFUSED_TRAILER for key, _ in refused.value.trailing_metadata())  # type: ignore[attr-defined]
    assert broker.stub.Fetch(_fetch_request("orders")).topics[0].partitions[0].error_code == 0  # unary Fetch still answers


def test_fetch_streams_max_zero_refuses_every_stream(broker_server_factory) -> None:
    broker = broker_server_factory(fetch_streams_max="0")
    create_topic(broker.stub, "orders")
    stream = OpenFetchStream(broker.stub)
    with pytest.raises(grpc.RpcError) as refused:
        stream.exchange(_fetch_request("orders"))
    stream.close()
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]


def test_a_client_cancelling_a_parked_fetch_frees_the_waiter_and_the_stream_slot_at_once(broker_server_factory) -> None:
    broker = broker_server_factory(fetch_streams_max="1")
    create_topic(broker.stub, "orders")
    first = OpenFetchStream(broker.stub)
    first.send(_fetch_request("orders", max_wait_ms=LONG_POLL_MS, min_bytes=1))
    wait_until(lambda: broker.broker.purgatory.parked == 1, what="the stream's fetch to park")
    first.close()
    # Without the departure the waiter would stay parked, and the slot taken, for LONG_POLL_MS.
    wait_until(lambda: broker.broker.purgatory.parked == 0, what="the cancelled stream's fetch to leave the purgatory")

    def slot_free() -> bool:
        second = OpenFetchStream(broker.stub)
        try:
            return second.exchange(_fetch_request("orders")).error_code == 0
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]  # the handler is still returning
            return False
        finally:
            second.close()

    wait_until(slot_free, what="the stream slot to be given back")


def test_the_request_pool_has_a_thread_per_fetch_stream_beside_num_io_threads(tmp_path: Path) -> None:
    from broker_nodes.config import load_broker_config

    def threads(streams: int) -> int:
        config = load_broker_config(node_id=1, listen="127.0.0.1:0", data_dir=tmp_path, configs=[f"fetch.streams.max={streams}"], environment={})
        return request_thread_count(config)

    assert threads(32) - threads(0) == 32


# ---------------------------------------------------------------------- authentication, ACLs, tenants


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[SecuredBroker]:
    broker = SecuredBroker(tmp_path / "node-1").start()
    broker.admin.ApplyPartitions(
        admin_pb2.ApplyPartitionsRequest(
            version=1,
            cluster_id="weir-test",
            brokers=brokers((1, broker.port)),
            topics=[topic(TENANT_A, "orders"), topic(TENANT_A, "secret-plans"), topic(TENANT_B, "orders"), topic("", "__consumer_offsets")],
        ),
        metadata=INTERNAL,
    )
    broker.admin.ApplySecurity(
        admin_pb2.ApplySecurityRequest(
            version=1,
            credentials=[
                credential("KEYALICE", "alice-secret", TENANT_A, "User:sa-alice"),
                credential("KEYBOB", "bob-secret", TENANT_B, "User:sa-bob"),
            ],
            acls=[allow(TENANT_A, "User:sa-alice", admin_pb2.ACL_OPERATION_ALL, "orders"), allow(TENANT_B, "User:sa-bob", admin_pb2.ACL_OPERATION_ALL, "*")],
        ),
        metadata=INTERNAL,
    )
    yield broker
    broker.stop()


@pytest.mark.parametrize("metadata", [(), as_key("KEYALICE", "guess")], ids=["no key", "wrong secret"])
def test_a_fetch_stream_without_valid_credentials_is_unauthenticated(secured, metadata) -> None:
    stream = OpenFetchStream(secured.stub, metadata)
    with pytest.raises(grpc.RpcError) as refused:
        stream.exchange(_fetch_request("orders"))
    stream.close()
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]


def test_a_topic_the_caller_may_not_read_is_answered_topic_authorization_failed_on_the_stream(secured) -> None:
    stream = OpenFetchStream(secured.stub, ALICE_KEY)
    try:
        denied = stream.exchange(_fetch_request("secret-plans", max_wait_ms=LONG_POLL_MS, min_bytes=1))  # an error answers at once
        allowed = stream.exchange(_fetch_request("orders"))
    finally:
        stream.close()
    assert denied.error_code == 29 and not denied.records  # TOPIC_AUTHORIZATION_FAILED
    assert allowed.error_code == 0


def test_each_tenant_reads_its_own_topic_of_the_same_name_on_its_stream(secured) -> None:
    _produce(secured.stub, "orders", b"alice-order", ALICE_KEY)
    _produce(secured.stub, "orders", b"bob-order-1", BOB_KEY)
    _produce(secured.stub, "orders", b"bob-order-2", BOB_KEY)
    alice = OpenFetchStream(secured.stub, ALICE_KEY)
    bob = OpenFetchStream(secured.stub, BOB_KEY)
    try:
        alices = alice.exchange(_fetch_request("orders"))
        bobs = bob.exchange(_fetch_request("orders"))
    finally:
        alice.close()
        bob.close()
    assert alices.high_watermark == 1 and b"alice-order" in alices.records and b"bob-order" not in alices.records
    assert bobs.high_watermark == 2 and b"bob-order-1" in bobs.records and b"alice-order" not in bobs.records
