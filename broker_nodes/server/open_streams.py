"""The broker's open request streams (``ProduceStream``, ``ReplicaFetchStream``), ended at once on a stop.

gRPC's graceful stop (``server.stop(grace)``) lets the calls in progress finish within the grace
and cancels the rest when it ends; a stream never finishes by itself, so without this every
stop of a broker with a producer or a follower connected took the whole grace. A handler reads
its requests through :meth:`OpenStreams.requests`: while it waits for the next one the stream is
idle, and :meth:`OpenStreams.close` cancels it (nothing of it is in progress: the client sees the
stream fail and sends its next request elsewhere or again); a stream in the middle of a request
answers it and then ends.

A stream idle for longer than the broker's ``connections.max.idle.ms`` is cancelled the same way
(:meth:`OpenStreams.end_idle`, run periodically by the broker): a client that keeps a stream open
without using it cannot hold a request thread (and one of the few stream slots) for ever. The
SDK closes its own idle streams much sooner. Thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import grpc

Request = TypeVar("Request")


class OpenStreams:
    """See the module docstring."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._lock = threading.Lock()
        # Streams waiting for their next request, by a key of their own: their context and since when they wait.
        self._idle: dict[int, tuple[grpc.ServicerContext, float]] = {}
        self._next_key = 0
        self._closing = False

    @property
    def closing(self) -> bool:
        return self._closing

    @property
    def idle_count(self) -> int:
        with self._lock:
            return len(self._idle)

    def requests(self, requests: Iterator[Request], context: grpc.ServicerContext) -> Iterator[Request]:
        """The stream's requests, until the client ends or cancels the stream or :meth:`close` ends it."""
        with self._lock:
            key = self._next_key
            self._next_key += 1
        while True:
            with self._lock:
                if self._closing:
                    return
                self._idle[key] = (context, self._monotonic())
            try:
                request = next(requests)
            except (StopIteration, grpc.RpcError):
                return  # the client ended or cancelled the stream, or close() cancelled it
            finally:
                with self._lock:
                    self._idle.pop(key, None)
            yield request

    def close(self) -> int:
        """End every stream: the idle ones are cancelled now, the busy ones end after their answer. Returns how many were cancelled."""
        with self._lock:
            self._closing = True
            idle = [context for context, _ in self._idle.values()]
            self._idle.clear()
        for context in idle:
            context.cancel()
        return len(idle)

    def end_idle(self, max_idle_seconds: float) -> int:
        """Cancel the streams that have waited for their next request for ``max_idle_seconds`` or longer; returns how many."""
        now = self._monotonic()
        with self._lock:
            expired = [key for key, (_, since) in self._idle.items() if now - since >= max_idle_seconds]
            contexts = [self._idle.pop(key)[0] for key in expired]
        for context in contexts:
            context.cancel()
        return len(contexts)
