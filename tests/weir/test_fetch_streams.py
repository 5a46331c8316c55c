"""The consumer's fetches on one FetchStream per broker (weir.fetch_streams): it holds the stream
while it reads and ends it on close(); a broker that refuses the stream (fetch.streams.max) gets
unary Fetch calls and the stream is tried again later; a broker restart does not stop it."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.support.in_process_broker import InProcessBroker
from tests.weir.scripted_broker import ScriptedBroker, metadata
from tests.weir.sdk_support import assigned, consume_all, create_topic, wait_for
from weir import OFFSET_BEGINNING, Consumer, Producer, TopicPartition, request_streams
from weir.fetch_streams import FETCH_STREAM_REFUSED_TRAILER
from weir.records import assign_offsets, build_batch

FAST_CONFIGS = {"offsets.topic.num.partitions": "3"}


class HeldStream:
    """A FetchStream the test opens itself: it takes a stream slot while it is open."""

    def __init__(self, broker: InProcessBroker, topic: str) -> None:
        self._outgoing: queue.SimpleQueue[broker_pb2.FetchRequest | None] = queue.SimpleQueue()
        self._responses = broker.stub.FetchStream(self._requests())
        self._topic = topic

    def _requests(self) -> Iterator[broker_pb2.FetchRequest]:
        while (request := self._outgoing.get()) is not None:
            yield request

    def accepted(self) -> bool:
        """Whether the broker answers a fetch on it (False: refused for want of a slot)."""
        partition = broker_pb2.FetchPartition(partition=0, fetch_offset=0, current_leader_epoch=-1)
        self._outgoing.put(broker_pb2.FetchRequest(replica_id=-1, topics=[broker_pb2.FetchTopic(topic=self._topic, partitions=[partition])]))
        try:
            next(self._responses)
            return True
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
            assert any(key == FETCH_STREAM_REFUSED_TRAILER for key, _ in error.trailing_metadata())  # type: ignore[attr-defined]
            return False

    def close(self) -> None:
        self._outgoing.put(None)
        self._responses.cancel()


def _slot_taken(broker: InProcessBroker, topic: str) -> bool:
    probe = HeldStream(broker, topic)
    try:
        return not probe.accepted()
    finally:
        probe.close()


def _produce(address: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": address, "linger.ms": 0})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(20) == 0
    producer.close()


@pytest.fixture
def one_stream_broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    """A broker that serves a single fetch stream."""
    broker = InProcessBroker(tmp_path / "data", {**FAST_CONFIGS, "fetch.streams.max": "1"}).start()
    yield broker
    broker.stop()


def _address(broker: InProcessBroker) -> str:
    return f"127.0.0.1:{broker.port}"


def test_a_consumer_reads_through_its_fetch_stream_and_close_ends_it(one_stream_broker) -> None:
    address = _address(one_stream_broker)
    create_topic(address, "orders")
    _produce(address, "orders", [b"a", b"b", b"c"])
    consumer = assigned(Consumer({"bootstrap.servers": address, "fetch.wait.max.ms": 60_000}), "orders", 1, OFFSET_BEGINNING)
    try:
        assert [message.value() for message in consume_all(consumer, 3)] == [b"a", b"b", b"c"]
        assert _slot_taken(one_stream_broker, "orders")  # the consumer's stream holds the broker's one slot
    finally:
        consumer.close()
    # close() ends the stream (its fetch parked for up to a minute is given up): the slot is free again.
    assert wait_for(lambda: not _slot_taken(one_stream_broker, "orders"), timeout=10.0)


def test_a_consumer_refused_a_stream_reads_by_unary_fetch_and_tries_the_stream_again(one_stream_broker, monkeypatch) -> None:
    monkeypatch.setattr(request_streams, "REFUSED_SECONDS", 0.2)
    address = _address(one_stream_broker)
    create_topic(address, "orders")
    _produce(address, "orders", [b"a", b"b"])
    held = HeldStream(one_stream_broker, "orders")
    assert held.accepted()
    consumer = assigned(Consumer({"bootstrap.servers": address, "fetch.wait.max.ms": 100}), "orders", 1, OFFSET_BEGINNING)
    try:
        assert [message.value() for message in consume_all(consumer, 2)] == [b"a", b"b"]  # by unary Fetch: the slot is the test's
        held.close()
        # Once the slot is free and the refusal's time is up, the consumer's fetches go on a stream again.
        assert wait_for(lambda: _slot_taken(one_stream_broker, "orders"), timeout=10.0)
        _produce(address, "orders", [b"c"])
        assert [message.value() for message in consume_all(consumer, 1)] == [b"c"]
    finally:
        consumer.close()


def test_a_consumer_reads_on_across_a_broker_restart(broker) -> None:
    create_topic(broker.address, "orders")
    _produce(broker.address, "orders", [b"before"])
    consumer = assigned(Consumer({"bootstrap.servers": broker.address, "retry.backoff.ms": 50, "retry.backoff.max.ms": 200}), "orders", 1, OFFSET_BEGINNING)
    try:
        assert [message.value() for message in consume_all(consumer, 1)] == [b"before"]
        broker.kill()  # the stream fails mid long poll
        broker.start()
        _produce(broker.address, "orders", [b"after"])
        assert [message.value() for message in consume_all(consumer, 1, timeout=30.0)] == [b"after"]
    finally:
        consumer.close()


class StallingBroker(ScriptedBroker):
    """A scripted broker whose first FetchStream takes its request and never answers; later streams answer ``answers["Fetch"]``."""

    def __init__(self, node_id: int) -> None:
        super().__init__(node_id)
        self.streams = 0
        self.stalled_stream_ended = threading.Event()

    def FetchStream(self, requests, context):  # type: ignore[no-untyped-def]
        self.streams += 1
        if self.streams == 1:
            context.add_callback(self.stalled_stream_ended.set)
            next(requests)
            self.stalled_stream_ended.wait(30)  # until the client gives up on the stream (or the test ends)
            return
        for request in requests:
            yield self._answer("Fetch", request, context)


def test_a_fetch_stream_without_an_answer_by_the_fetch_deadline_is_replaced_by_a_new_one() -> None:
    broker = StallingBroker(1).start()
    broker.answers["Metadata"] = lambda request: metadata([broker], {"orders": [(1, 0)]})
    records = bytearray(build_batch([(1_700_000_000_000, None, b"v", None)]))
    assign_offsets(records, 0, 0, 0)
    answer = broker_pb2.FetchPartitionResponse(partition=0, high_watermark=1, log_start_offset=0, records=bytes(records))
    broker.answers["Fetch"] = lambda request: broker_pb2.FetchResponse(topics=[broker_pb2.FetchTopicResponse(topic="orders", partitions=[answer])])
    consumer = Consumer({"bootstrap.servers": broker.address, "request.timeout.ms": 500, "fetch.wait.max.ms": 10, "retry.backoff.ms": 10})
    try:
        consumer.assign([TopicPartition("orders", 0, 0)])
        received = consume_all(consumer, 1)
    finally:
        consumer.close()
        broker.stalled_stream_ended.set()
        broker.stop()
    assert [message.value() for message in received] == [b"v"]
    assert broker.streams >= 2  # the stalled stream was cancelled at the deadline and the fetch went on a new one
