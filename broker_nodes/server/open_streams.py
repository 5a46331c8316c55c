"""The broker's open request streams (``ProduceStream``, ``ReplicaFetchStream``), ended at once on a stop.

gRPC's graceful stop (``server.stop(grace)``) lets the calls in progress finish within the grace
and cancels the rest when it ends; a stream never finishes by itself, so without this every
stop of a broker with a producer or a follower connected took the whole grace. A handler reads
its requests through :meth:`OpenStreams.requests`: while it waits for the next one the stream is
idle, and :meth:`OpenStreams.close` cancels it (nothing of it is in progress: the client sees the
stream fail and sends its next request elsewhere or again); a stream in the middle of a request
answers it and then ends. Thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TypeVar

import grpc

Request = TypeVar("Request")


class OpenStreams:
    """See the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[int, grpc.ServicerContext] = {}  # streams waiting for their next request, by a key of their own
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
                self._idle[key] = context
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
            idle = list(self._idle.values())
            self._idle.clear()
        for context in idle:
            context.cancel()
        return len(idle)
