"""A broker's open streams end at once when it stops (broker_nodes.server.open_streams).

A real gRPC server with a stream handler reading through OpenStreams: close() cancels a stream
waiting for its next request, lets a stream in the middle of a request answer it and end, and
a server stopped with a long grace stops as soon as its streams are closed. Every wait is bounded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures

import grpc
import pytest

from broker_nodes.server.open_streams import OpenStreams

WAIT_SECONDS = 10.0
METHOD = "/test.Echo/Stream"


def _identity(value: bytes) -> bytes:
    return value


class EchoServer:
    """Echoes each request of a stream; a request of b"slow" waits for ``release`` first."""

    def __init__(self) -> None:
        self.streams = OpenStreams()
        self.release = threading.Event()
        self.serving = threading.Event()
        self.ended = threading.Event()
        handler = grpc.method_handlers_generic_handler(
            "test.Echo", {"Stream": grpc.stream_stream_rpc_method_handler(self._stream, request_deserializer=_identity, response_serializer=_identity)}
        )
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def _stream(self, requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
        try:
            for request in self.streams.requests(requests, context):
                if request == b"slow":
                    self.serving.set()
                    self.release.wait(WAIT_SECONDS)
                yield request
        finally:
            self.ended.set()


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    yield server
    server.release.set()
    server.server.stop(0)


def _open(echo: EchoServer) -> tuple[grpc.Channel, Callable[[bytes | None], None], Iterator[bytes]]:
    channel = grpc.insecure_channel(f"127.0.0.1:{echo.port}")
    outgoing: list[bytes | None] = []
    condition = threading.Condition()

    def requests() -> Iterator[bytes]:
        while True:
            with condition:
                condition.wait_for(lambda: bool(outgoing), timeout=WAIT_SECONDS)
                if not outgoing:
                    return
                item = outgoing.pop(0)
            if item is None:
                return
            yield item

    def send(item: bytes | None) -> None:
        with condition:
            outgoing.append(item)
            condition.notify()

    call = channel.stream_stream(METHOD, request_serializer=_identity, response_deserializer=_identity)(requests())
    return channel, send, call


def test_an_idle_stream_is_cancelled_by_close(echo: EchoServer) -> None:
    channel, send, answers = _open(echo)
    send(b"one")
    assert next(answers) == b"one"
    deadline = time.monotonic() + WAIT_SECONDS
    while echo.streams.idle_count != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert echo.streams.idle_count == 1
    assert echo.streams.close() == 1
    assert echo.ended.wait(WAIT_SECONDS), "the handler did not end"
    with pytest.raises(grpc.RpcError) as failed:
        next(answers)
    assert failed.value.code() == grpc.StatusCode.CANCELLED
    send(None)
    channel.close()


def test_a_stream_in_the_middle_of_a_request_answers_it_then_ends(echo: EchoServer) -> None:
    channel, send, answers = _open(echo)
    send(b"slow")
    assert echo.serving.wait(WAIT_SECONDS)
    assert echo.streams.close() == 0  # busy: not cancelled
    echo.release.set()
    assert next(answers) == b"slow"
    assert echo.ended.wait(WAIT_SECONDS)
    with pytest.raises(StopIteration):
        next(answers)  # ended with OK after its answer
    send(None)
    channel.close()


def test_a_stream_opened_after_close_ends_at_once(echo: EchoServer) -> None:
    echo.streams.close()
    channel, send, answers = _open(echo)
    send(b"late")
    with pytest.raises(StopIteration):
        next(answers)
    send(None)
    channel.close()


def test_a_graceful_stop_with_an_open_stream_ends_when_the_streams_are_closed(echo: EchoServer) -> None:
    channel, send, answers = _open(echo)
    send(b"one")
    assert next(answers) == b"one"
    stopped = echo.server.stop(60.0)  # a long grace that the open stream would hold to its end
    echo.streams.close()
    assert stopped.wait(WAIT_SECONDS), "the server waited for the open stream"
    send(None)
    channel.close()


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _wait_for_idle(echo: EchoServer, count: int) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while echo.streams.idle_count != count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert echo.streams.idle_count == count


def test_a_stream_idle_for_the_limit_is_cancelled_and_a_newer_or_busy_one_is_not(echo: EchoServer) -> None:
    clock = FakeMonotonic()
    echo.streams = OpenStreams(clock)
    old_channel, send_old, old_answers = _open(echo)
    send_old(b"old")
    assert next(old_answers) == b"old"
    _wait_for_idle(echo, 1)
    clock.now += 50.0
    new_channel, send_new, new_answers = _open(echo)
    send_new(b"new")
    assert next(new_answers) == b"new"
    _wait_for_idle(echo, 2)
    busy_channel, send_busy, busy_answers = _open(echo)
    send_busy(b"slow")
    assert echo.serving.wait(WAIT_SECONDS)
    clock.now += 20.0  # the old stream has been idle 70 s, the new one 20 s, the busy one is answering

    assert echo.streams.end_idle(60.0) == 1
    with pytest.raises(grpc.RpcError) as failed:
        next(old_answers)
    assert failed.value.code() == grpc.StatusCode.CANCELLED
    send_new(b"still open")
    assert next(new_answers) == b"still open"
    echo.release.set()
    assert next(busy_answers) == b"slow"
    for send, channel in ((send_old, old_channel), (send_new, new_channel), (send_busy, busy_channel)):
        send(None)
        channel.close()
