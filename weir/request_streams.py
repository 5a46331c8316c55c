"""A client's requests of one kind on one bidi stream per broker instead of unary calls (Produce, Fetch).

Why: a grpcio sync server hands every unary call between its threads (the polling thread
hands the call to a pool thread, which waits for the polling thread to read the request); on a
stream the one thread serving it reads each request itself. ``python -m bench.rpc_floor
--modes unary,stream`` measured about 450 against 245 us of server CPU per exchange; the
producer's Produce requests (:mod:`weir.produce_streams`) and the consumer's Fetch requests
(:mod:`weir.fetch_streams`) go this way.

How: :meth:`RequestStreams.send` puts the request on the broker's stream (opened on first use)
and returns a future that its answer completes: the broker answers a stream's requests in the
order sent, so answers are matched to requests first in, first out. A reader thread per stream
takes the answers and completes the futures, whose done callbacks run on it, as they run on a
call thread for a unary call. A request keeps its own deadline: :meth:`RequestStreams.expire`
(called by the client's loop every round) ends a stream whose oldest request has waited longer,
and its requests fail DEADLINE_EXCEEDED, as a unary call would.

When a stream fails, its oldest request fails with the stream's status (the error a unary call
would have met) and every later one with CANCELLED (a transport failure: the client retries
them); the next request opens a new stream. A broker that refuses the stream (one without the
stream method, UNIMPLEMENTED, or one serving as many streams as it can, which says so in the
trailing metadata) before answering anything gets the stream's requests as unary calls
instead, and every request for a while (:data:`REFUSED_SECONDS`). Thread-safe.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import Message

from grpc_protos.weir.v1 import broker_pb2_grpc
from weir.call_threads import CallThreads, ChannelClosedError

logger = logging.getLogger(__name__)

# Seconds a broker that refused a stream gets unary calls before the next stream is tried.
REFUSED_SECONDS = 60.0
# Seconds a stream with nothing in flight stays open: a stream holds one of the broker's request
# threads (it serves only a few of them), so a client that has gone quiet gives its slot back to
# the clients that are sending; its next request opens a new stream.
IDLE_STREAM_SECONDS = 10.0

StubFunction = Callable[[str], broker_pb2_grpc.BrokerStub]


@dataclass(frozen=True, slots=True)
class StreamKind:
    """Which requests a :class:`RequestStreams` carries: the Broker methods and the broker's refusal trailer."""

    name: str  # in thread names and messages: "produce", "fetch"
    client: str  # who owns the streams, in messages: "producer", "consumer"
    stream_method: str  # "ProduceStream"
    unary_method: str  # "Produce": what a refused stream's requests are sent as
    refused_trailer: str  # trailing metadata key of the broker's refusal to open one more stream


class StreamFailedError(grpc.RpcError):
    """A request that was on a stream when it failed behind an earlier one: CANCELLED (or DEADLINE_EXCEEDED)."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self._code = code
        self._details = details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


class _Exchange:
    """One request on a stream: the request, its deadline, and the future its answer completes."""

    __slots__ = ("request", "deadline", "future")

    def __init__(self, request: Message, deadline: float) -> None:
        self.request = request
        self.deadline = deadline
        self.future: Future[Any] = Future()
        self.future.set_running_or_notify_cancel()


class _Stream:
    """One open stream call and its requests waiting for answers."""

    def __init__(
        self,
        stub: broker_pb2_grpc.BrokerStub,
        kind: StreamKind,
        metadata: Sequence[tuple[str, str]] | None,
        on_refused: Callable[[list[_Exchange]], None],
        now: float,
    ) -> None:
        self.stub = stub
        self._kind = kind
        self._lock = threading.Lock()
        self._last_used = now  # when a request was last sent (monotonic seconds)
        self._waiting: deque[_Exchange] = deque()
        self._outgoing: queue.SimpleQueue[Message | None] = queue.SimpleQueue()
        self._answered = False
        self._failed = False
        self._on_refused = on_refused
        self._call = getattr(stub, kind.stream_method)(self._requests(), metadata=metadata)
        threading.Thread(target=self._read, name=f"weir-{kind.name}-stream", daemon=True).start()

    @property
    def failed(self) -> bool:
        return self._failed

    def send(self, exchange: _Exchange, now: float) -> bool:
        """Queue ``exchange`` on the stream; False when the stream has failed (nothing queued)."""
        with self._lock:
            if self._failed:
                return False
            self._last_used = now
            self._waiting.append(exchange)
            self._outgoing.put(exchange.request)
        return True

    def overdue(self, now: float) -> bool:
        with self._lock:
            return bool(self._waiting) and self._waiting[0].deadline <= now

    def idle(self, now: float) -> bool:
        """Nothing in flight and nothing sent for :data:`IDLE_STREAM_SECONDS`."""
        with self._lock:
            return not self._waiting and now - self._last_used >= IDLE_STREAM_SECONDS

    def fail(self, error: grpc.RpcError) -> None:
        """End the stream: the oldest request fails with ``error``, the later ones CANCELLED."""
        with self._lock:
            if self._failed:
                return
            self._failed = True
            waiting = list(self._waiting)
            self._waiting.clear()
            refused = not self._answered and _refused(error, self._kind.refused_trailer)
        self._outgoing.put(None)
        self._call.cancel()
        if refused:
            self._on_refused(waiting)
            return
        for index, exchange in enumerate(waiting):
            if index == 0:
                exchange.future.set_exception(error)
            else:
                exchange.future.set_exception(
                    StreamFailedError(grpc.StatusCode.CANCELLED, f"the {self._kind.name} stream failed before this request's answer: {error}")
                )

    def _requests(self) -> Iterator[Message]:
        while True:
            request = self._outgoing.get()
            if request is None:
                return
            yield request

    def _read(self) -> None:
        try:
            for response in self._call:
                with self._lock:
                    self._answered = True
                    exchange = self._waiting.popleft() if self._waiting else None
                if exchange is None:
                    self.fail(StreamFailedError(grpc.StatusCode.INTERNAL, f"the broker answered a request never sent on the {self._kind.name} stream"))
                    return
                exchange.future.set_result(response)
        except grpc.RpcError as error:
            self.fail(error)
            return
        except Exception as error:  # a bug must not leave the requests waiting for ever
            logger.exception("%s stream reader failed", self._kind.name)
            self.fail(StreamFailedError(grpc.StatusCode.INTERNAL, f"{self._kind.name} stream reader: {error!r}"))
            return
        self.fail(StreamFailedError(grpc.StatusCode.UNAVAILABLE, f"the broker ended the {self._kind.name} stream"))


def _refused(error: grpc.RpcError, refused_trailer: str) -> bool:
    """Whether ``error`` is a broker's refusal of the stream itself (not of a request on it)."""
    code = error.code() if hasattr(error, "code") else None
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return True
    if code != grpc.StatusCode.RESOURCE_EXHAUSTED or not hasattr(error, "trailing_metadata"):
        return False
    trailers: Iterable[tuple[str, str | bytes]] | None
    try:
        # grpc-stubs types the entries as a plain class; grpc's _Metadatum is a (key, value) namedtuple.
        trailers = error.trailing_metadata()  # type: ignore[assignment]
    except Exception:  # a call that failed before reaching the broker may have none to give
        return False
    return any(key == refused_trailer for key, _ in trailers or ())


class RequestStreams:
    """A client's streams of one kind, one per broker address; see the module docstring."""

    def __init__(
        self,
        kind: StreamKind,
        stub: StubFunction,
        calls: CallThreads,
        metadata: Sequence[tuple[str, str]] | None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._kind = kind
        self._stub = stub
        self._calls = calls
        self._metadata = metadata
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._streams: dict[str, _Stream] = {}
        self._unary_until: dict[str, float] = {}
        self._closed = False

    def send(self, address: str, request: Message, timeout: float, on_done: Callable[[Future[Any]], object]) -> None:
        """Send ``request`` to ``address``; ``on_done(future)`` runs once it is answered or failed."""
        now = self._monotonic()
        exchange = _Exchange(request, now + timeout)
        exchange.future.add_done_callback(on_done)
        try:
            stub = self._stub(address)
        except Exception as error:  # closed client: fail as a unary call would
            exchange.future.set_exception(ChannelClosedError(str(error)))
            return
        for _ in range(2):  # a stream found failed is replaced once (unless it was refused)
            if now < self._unary_until.get(address, 0.0):
                break
            try:
                stream = self._stream(address, stub)
            except ValueError as closed:  # grpcio: "Cannot invoke RPC on closed channel!"
                stream = None
                reason = str(closed)
            else:
                reason = f"the {self._kind.client} was closed"
            if stream is None:
                exchange.future.set_exception(ChannelClosedError(reason))
                return
            if stream.send(exchange, now):
                return
        self._send_unary(address, [exchange])

    def expire(self, now: float) -> None:
        """End every stream whose oldest request is past its deadline (DEADLINE_EXCEEDED), and
        close the streams idle for :data:`IDLE_STREAM_SECONDS`."""
        with self._lock:
            overdue = [stream for stream in self._streams.values() if stream.overdue(now)]
            idle = {address: stream for address, stream in self._streams.items() if stream.idle(now)}
            for address in idle:
                del self._streams[address]
        for stream in overdue:
            stream.fail(StreamFailedError(grpc.StatusCode.DEADLINE_EXCEEDED, f"no answer on the {self._kind.name} stream within its deadline"))
        for stream in idle.values():
            # Nothing is in flight on it; a request sent meanwhile fails CANCELLED and is retried.
            stream.fail(StreamFailedError(grpc.StatusCode.CANCELLED, f"the {self._kind.name} stream was idle"))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            streams = list(self._streams.values())
            self._streams.clear()
        for stream in streams:
            stream.fail(StreamFailedError(grpc.StatusCode.CANCELLED, f"the {self._kind.client} was closed"))

    def _stream(self, address: str, stub: broker_pb2_grpc.BrokerStub) -> _Stream | None:
        with self._lock:
            if self._closed:
                return None
            stream = self._streams.get(address)
            if stream is not None and not stream.failed and stream.stub is stub:
                return stream
            stream = _Stream(stub, self._kind, self._metadata, lambda waiting: self._refused(address, waiting), self._monotonic())
            self._streams[address] = stream
            return stream

    def _refused(self, address: str, waiting: list[_Exchange]) -> None:
        logger.debug("%s refused a %s stream: unary %s calls for %.0f s", address, self._kind.name, self._kind.unary_method, REFUSED_SECONDS)
        self._unary_until[address] = self._monotonic() + REFUSED_SECONDS
        self._send_unary(address, waiting)

    def _send_unary(self, address: str, exchanges: list[_Exchange]) -> None:
        for exchange in exchanges:
            try:
                self._calls.call(
                    getattr(self._stub(address), self._kind.unary_method),
                    exchange.request,
                    timeout=max(exchange.deadline - self._monotonic(), 0.0),
                    metadata=self._metadata,
                    on_done=_copying_to(exchange.future),
                )
            except Exception as error:  # closed meanwhile
                exchange.future.set_exception(ChannelClosedError(str(error)))


def _copying_to(target: Future[Any]) -> Callable[[Future[Any]], None]:
    """A done callback that completes ``target`` with the outcome of the future it is called with."""

    def copy(source: Future[Any]) -> None:
        error = source.exception()
        if error is not None:
            target.set_exception(error)
        else:
            target.set_result(source.result())

    return copy
