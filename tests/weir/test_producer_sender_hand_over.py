"""The producer's sender makes the last request of a round on its own thread and hands its loop to a call thread.

The request then leaves without waiting for another thread to wake up (at ``linger.ms=0`` that
wake-up was in every record's latency), and the loop goes on elsewhere meanwhile: other
partitions are still sent while that call waits for its answer. A scripted broker
(tests/weir/scripted_broker.py) answers; every wait is bounded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.weir.scripted_broker import ScriptedBroker, metadata
from weir import KafkaError, Producer
from weir.producer_sender import Sender

TOPIC = "orders"
WAIT_SECONDS = 10.0


def _appended(request: broker_pb2.ProduceRequest) -> broker_pb2.ProduceResponse:
    [topic] = request.topics
    return broker_pb2.ProduceResponse(
        topics=[
            broker_pb2.ProduceTopicResponse(
                topic=topic.topic,
                partitions=[broker_pb2.ProducePartitionResponse(partition=data.partition, base_offset=0) for data in topic.partitions],
            )
        ]
    )


@pytest.fixture
def broker() -> Iterator[ScriptedBroker]:
    started = ScriptedBroker(1).start()
    started.answers["Metadata"] = lambda request: metadata([started], {TOPIC: [(1, 3), (1, 3)]})
    started.answers["Produce"] = _appended
    try:
        yield started
    finally:
        started.stop()


class ThreadsSeen:
    """Which thread prepared each Produce request (the loop's) and which thread made the call."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.prepared_on: list[int] = []
        self.called_on: list[int] = []
        original = Sender._send_request

        def send_request(sender: Sender, address: str, batches: list[Any]) -> None:
            self.prepared_on.append(threading.get_ident())
            original(sender, address, batches)

        monkeypatch.setattr(Sender, "_send_request", send_request)

    def watch(self, producer: Producer) -> None:
        cluster = producer._sender._cluster
        stub_of = cluster.stub
        seen = self

        class Stub:
            def __init__(self, address: str) -> None:
                self._stub = stub_of(address)

            def __getattr__(self, method: str) -> Any:  # every other call as it is
                return getattr(self._stub, method)

            def Produce(self, request: Any, **options: Any) -> Any:  # noqa: N802 (the gRPC method's name)
                seen.called_on.append(threading.get_ident())
                return self._stub.Produce(request, **options)

        cluster.stub = Stub  # type: ignore[method-assign]


def _producer(broker: ScriptedBroker, **settings: object) -> Producer:
    return Producer({"bootstrap.servers": broker.address, "linger.ms": 0, "acks": "1", **settings})


def test_the_last_request_of_a_round_is_made_by_the_thread_that_prepared_it(broker: ScriptedBroker, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = ThreadsSeen(monkeypatch)
    producer = _producer(broker)
    seen.watch(producer)
    reports: list[KafkaError | None] = []
    try:
        for index in range(5):
            producer.produce(TOPIC, b"record-%d" % index, partition=0, on_delivery=lambda error, message: reports.append(error))
            assert producer.flush(WAIT_SECONDS) == 0  # one record, one request, one round at a time
    finally:
        producer.close()
    assert reports == [None] * 5
    assert len(seen.called_on) == 5
    # Each request was made by the thread that ran its round, with no thread woken to send it.
    assert seen.called_on == seen.prepared_on


def test_the_loop_goes_on_while_the_thread_that_sent_a_request_waits_for_its_answer(broker: ScriptedBroker) -> None:
    other_partition_sent = threading.Event()

    def holds_partition_0(request: broker_pb2.ProduceRequest) -> broker_pb2.ProduceResponse | grpc.StatusCode:
        [topic] = request.topics
        if topic.partitions[0].partition == 1:
            other_partition_sent.set()
        elif not other_partition_sent.wait(WAIT_SECONDS):
            return grpc.StatusCode.DEADLINE_EXCEEDED  # partition 1 never came: the loop was stuck behind this call
        return _appended(request)

    broker.answers["Produce"] = holds_partition_0
    reports: list[tuple[int, KafkaError | None]] = []
    producer = _producer(broker, retries=0)
    try:
        producer.produce(TOPIC, b"first", partition=0, on_delivery=lambda error, message: reports.append((message.partition(), error)))
        for _ in range(1000):  # bounded: until the held request reached the broker
            if broker.called("Produce"):
                break
            other_partition_sent.wait(0.01)
        producer.produce(TOPIC, b"second", partition=1, on_delivery=lambda error, message: reports.append((message.partition(), error)))
        assert producer.flush(WAIT_SECONDS * 2) == 0
    finally:
        producer.close()
    assert other_partition_sent.is_set()
    assert sorted(reports) == [(0, None), (1, None)]
