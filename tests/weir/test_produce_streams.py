"""The producer's Produce requests on one stream per broker (weir.produce_streams).

A stream's answers are matched to its requests in order; a broker without the stream, or one
refusing it, gets unary Produce calls; a request past its deadline, or a stream that fails,
fails the requests on it as unary calls would fail. Scripted in-process brokers answer; every
wait is bounded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import grpc
import pytest

from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc
from tests.weir.scripted_broker import ScriptedBroker
from weir.call_threads import CallThreads
from weir.produce_streams import IDLE_STREAM_SECONDS, STREAM_REFUSED_TRAILER, ProduceStreams

WAIT_SECONDS = 10.0


def _request(partition: int) -> broker_pb2.ProduceRequest:
    return broker_pb2.ProduceRequest(
        acks=1, topics=[broker_pb2.ProduceTopicData(topic="orders", partitions=[broker_pb2.ProducePartitionData(partition=partition)])]
    )


def _answer(request: broker_pb2.ProduceRequest, base_offset: int) -> broker_pb2.ProduceResponse:
    [topic] = request.topics
    [data] = topic.partitions
    return broker_pb2.ProduceResponse(
        topics=[
            broker_pb2.ProduceTopicResponse(
                topic=topic.topic, partitions=[broker_pb2.ProducePartitionResponse(partition=data.partition, base_offset=base_offset)]
            )
        ]
    )


class StreamingBroker(ScriptedBroker):
    """A scripted broker that also serves ProduceStream: ``stream`` answers the requests of each stream."""

    def __init__(self) -> None:
        super().__init__(1)
        self.streams_opened = 0

    def stream(self, requests: Iterator[broker_pb2.ProduceRequest], context: grpc.ServicerContext) -> Iterator[broker_pb2.ProduceResponse]:
        for index, request in enumerate(requests):
            yield _answer(request, 100 + index)

    def ProduceStream(self, requests, context):  # type: ignore[no-untyped-def]
        with self._lock:
            self.streams_opened += 1
        yield from self.stream(requests, context)


class Sent:
    """The futures of the requests sent, completed by the streams' threads."""

    def __init__(self) -> None:
        self.futures: list[Future[Any]] = []
        self._done = threading.Semaphore(0)

    def on_done(self, future: Future[Any]) -> None:
        self.futures.append(future)
        self._done.release()

    def wait(self, count: int) -> list[Future[Any]]:
        for _ in range(count):
            assert self._done.acquire(timeout=WAIT_SECONDS), "no answer in time"
        return self.futures


@pytest.fixture
def calls() -> Iterator[CallThreads]:
    threads = CallThreads("test-produce-call")
    yield threads
    threads.close()


def _streams(broker: ScriptedBroker, calls: CallThreads) -> ProduceStreams:
    channel = grpc.insecure_channel(broker.address)
    stub = broker_pb2_grpc.BrokerStub(channel)
    return ProduceStreams(lambda address: stub, calls, None)


def _offset(future: Future[Any]) -> int:
    response: broker_pb2.ProduceResponse = future.result(timeout=0)
    return response.topics[0].partitions[0].base_offset


def test_requests_on_one_stream_are_answered_in_the_order_sent(calls: CallThreads) -> None:
    broker = StreamingBroker().start()
    try:
        streams = _streams(broker, calls)
        sent = Sent()
        for partition in range(3):
            streams.send(broker.address, _request(partition), WAIT_SECONDS, sent.on_done)
        answered = sent.wait(3)
        assert [(future.result(timeout=0).topics[0].partitions[0].partition, _offset(future)) for future in answered] == [(0, 100), (1, 101), (2, 102)]
        assert broker.streams_opened == 1 and broker.called("Produce") == []
        streams.close()
    finally:
        broker.stop()


def test_a_broker_without_the_stream_gets_unary_produce_calls(calls: CallThreads) -> None:
    broker = ScriptedBroker(1).start()  # ProduceStream answers UNIMPLEMENTED
    broker.answers["Produce"] = lambda request: _answer(request, 7)
    try:
        streams = _streams(broker, calls)
        sent = Sent()
        streams.send(broker.address, _request(0), WAIT_SECONDS, sent.on_done)
        streams.send(broker.address, _request(1), WAIT_SECONDS, sent.on_done)
        assert [_offset(future) for future in sent.wait(2)] == [7, 7]
        assert len(broker.called("Produce")) == 2
        streams.close()
    finally:
        broker.stop()


def test_a_refused_stream_sends_its_requests_as_unary_calls_and_no_stream_is_tried_for_a_while(calls: CallThreads) -> None:
    class Refusing(StreamingBroker):
        def stream(self, requests: Iterator[broker_pb2.ProduceRequest], context: grpc.ServicerContext) -> Iterator[broker_pb2.ProduceResponse]:
            context.set_trailing_metadata(((STREAM_REFUSED_TRAILER, "1"),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "as many produce streams as it can")
            yield from ()

    broker = Refusing().start()
    broker.answers["Produce"] = lambda request: _answer(request, 9)
    try:
        streams = _streams(broker, calls)
        sent = Sent()
        streams.send(broker.address, _request(0), WAIT_SECONDS, sent.on_done)
        assert _offset(sent.wait(1)[0]) == 9
        streams.send(broker.address, _request(1), WAIT_SECONDS, sent.on_done)
        assert _offset(sent.wait(1)[1]) == 9
        assert broker.streams_opened == 1 and len(broker.called("Produce")) == 2
        streams.close()
    finally:
        broker.stop()


def test_a_request_past_its_deadline_fails_deadline_exceeded_and_the_ones_behind_it_cancelled(calls: CallThreads) -> None:
    release = threading.Event()

    class Silent(StreamingBroker):
        def stream(self, requests: Iterator[broker_pb2.ProduceRequest], context: grpc.ServicerContext) -> Iterator[broker_pb2.ProduceResponse]:
            release.wait(WAIT_SECONDS)  # answers nothing until the test ends
            yield from ()

    broker = Silent().start()
    try:
        streams = _streams(broker, calls)
        sent = Sent()
        streams.send(broker.address, _request(0), 0.0, sent.on_done)
        streams.send(broker.address, _request(1), WAIT_SECONDS, sent.on_done)
        streams.expire(float("inf"))
        first, second = sent.wait(2)
        assert first.exception(timeout=0).code() == grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[union-attr]
        assert second.exception(timeout=0).code() == grpc.StatusCode.CANCELLED  # type: ignore[union-attr]
        streams.close()
    finally:
        release.set()
        broker.stop()


def test_a_stream_ended_by_a_request_fails_that_request_with_its_status_and_the_later_ones_cancelled(calls: CallThreads) -> None:
    both_sent = threading.Event()

    class Refusing(StreamingBroker):
        def stream(self, requests: Iterator[broker_pb2.ProduceRequest], context: grpc.ServicerContext) -> Iterator[broker_pb2.ProduceResponse]:
            next(requests)
            both_sent.wait(WAIT_SECONDS)
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "malformed request")
            yield from ()

    broker = Refusing().start()
    try:
        streams = _streams(broker, calls)
        sent = Sent()
        streams.send(broker.address, _request(0), WAIT_SECONDS, sent.on_done)
        streams.send(broker.address, _request(1), WAIT_SECONDS, sent.on_done)
        both_sent.set()
        first, second = sent.wait(2)
        assert first.exception(timeout=0).code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[union-attr]
        assert second.exception(timeout=0).code() == grpc.StatusCode.CANCELLED  # type: ignore[union-attr]
        # The next request opens a new stream.
        broker.stream = StreamingBroker.stream.__get__(broker)  # type: ignore[method-assign]
        streams.send(broker.address, _request(2), WAIT_SECONDS, sent.on_done)
        assert _offset(sent.wait(1)[2]) == 100
        assert broker.streams_opened == 2
        streams.close()
    finally:
        broker.stop()


def test_close_fails_the_requests_waiting_on_a_stream(calls: CallThreads) -> None:
    release = threading.Event()

    class Silent(StreamingBroker):
        def stream(self, requests: Iterator[broker_pb2.ProduceRequest], context: grpc.ServicerContext) -> Iterator[broker_pb2.ProduceResponse]:
            release.wait(WAIT_SECONDS)
            yield from ()

    broker = Silent().start()
    try:
        streams = _streams(broker, calls)
        sent = Sent()
        streams.send(broker.address, _request(0), WAIT_SECONDS, sent.on_done)
        streams.close()
        [future] = sent.wait(1)
        assert future.exception(timeout=0).code() == grpc.StatusCode.CANCELLED  # type: ignore[union-attr]
    finally:
        release.set()
        broker.stop()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_stream_idle_past_its_limit_is_closed_and_the_next_request_opens_a_new_one(calls: CallThreads) -> None:
    ended = threading.Event()

    class EndingBroker(StreamingBroker):
        def stream(self, requests: Iterator[broker_pb2.ProduceRequest], context: grpc.ServicerContext) -> Iterator[broker_pb2.ProduceResponse]:
            try:
                yield from super().stream(requests, context)
            finally:
                ended.set()  # the broker's thread serving the stream is free again

    broker = EndingBroker().start()
    clock = Clock()
    try:
        stub = broker_pb2_grpc.BrokerStub(grpc.insecure_channel(broker.address))
        streams = ProduceStreams(lambda address: stub, calls, None, monotonic=clock)
        sent = Sent()
        streams.send(broker.address, _request(0), WAIT_SECONDS, sent.on_done)
        sent.wait(1)
        clock.now += IDLE_STREAM_SECONDS - 0.5
        streams.expire(clock.now)  # not idle long enough: kept
        assert not ended.wait(0.2)
        clock.now += 0.5
        streams.expire(clock.now)
        assert ended.wait(WAIT_SECONDS), "the idle stream was not closed"
        streams.send(broker.address, _request(1), WAIT_SECONDS, sent.on_done)
        assert [_offset(future) for future in sent.wait(1)] == [100, 100]
        assert broker.streams_opened == 2
        streams.close()
    finally:
        broker.stop()


def test_a_stream_with_a_request_in_flight_is_not_idle(calls: CallThreads) -> None:
    release = threading.Event()

    class SlowBroker(StreamingBroker):
        def stream(self, requests: Iterator[broker_pb2.ProduceRequest], context: grpc.ServicerContext) -> Iterator[broker_pb2.ProduceResponse]:
            for index, request in enumerate(requests):
                release.wait(WAIT_SECONDS)
                yield _answer(request, 100 + index)

    broker = SlowBroker().start()
    clock = Clock()
    try:
        stub = broker_pb2_grpc.BrokerStub(grpc.insecure_channel(broker.address))
        streams = ProduceStreams(lambda address: stub, calls, None, monotonic=clock)
        sent = Sent()
        streams.send(broker.address, _request(0), 3 * IDLE_STREAM_SECONDS, sent.on_done)
        clock.now += 2 * IDLE_STREAM_SECONDS
        streams.expire(clock.now)
        release.set()
        assert [_offset(future) for future in sent.wait(1)] == [100]
        assert broker.streams_opened == 1
        streams.close()
    finally:
        broker.stop()
