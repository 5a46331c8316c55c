"""Non-blocking unary gRPC calls without a new thread per call.

grpcio's ``.future()`` completes calls on a channel "spin" thread that exists only while the
channel has calls in flight: it exits when the last one completes and the next call starts a
new one (``grpc._channel._run_channel_spin_thread``), and the caller waits until that thread
has started. A producer at ``linger.ms=0`` or a consumer's fetch loop has one call in flight
at a time, so every Produce and every Fetch paid for starting a thread: about half a
millisecond of the sender's time and of the record's latency, more on a busy machine
(measured with ``python -m bench.latency_breakdown``).

:class:`CallThreads` makes the same calls as blocking calls on threads that stay: a call is
handed to an idle thread (one wake-up, no thread start), which completes a
:class:`concurrent.futures.Future` with the answer or the ``grpc.RpcError``, and runs its done
callbacks there, as gRPC's own future does on its spin thread. A thread is started only when
every thread is busy (up to ``max_threads``; beyond that calls queue) and leaves after
``idle_seconds`` without work or at :meth:`close`. Thread-safe.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import grpc

# Seconds an idle call thread waits for work before it exits.
IDLE_SECONDS = 10.0
# Threads per CallThreads at most: calls beyond that many in flight wait for a free thread.
MAX_THREADS = 64


class PreparedCall:
    """One unary call and the future its outcome completes."""

    __slots__ = ("method", "request", "timeout", "metadata", "future")

    def __init__(self, method: Callable[..., Any], request: Any, timeout: float | None, metadata: Sequence[tuple[str, str]] | None) -> None:
        self.method = method
        self.request = request
        self.timeout = timeout
        self.metadata = metadata
        self.future: Future[Any] = Future()

    def invoke(self) -> tuple[Any, BaseException | None]:
        """Make the call (blocking): (answer, None), or (None, the error its future's result() is to raise)."""
        try:
            return self.method(self.request, timeout=self.timeout, metadata=self.metadata), None
        except ValueError as closed:  # grpcio: "Cannot invoke RPC on closed channel!"
            return None, ChannelClosedError(str(closed))
        except BaseException as failure:  # the caller's result() raises it, as gRPC's future does
            return None, failure

    def settle(self, answer: Any, error: BaseException | None) -> None:
        """Complete the future with :meth:`invoke`'s outcome (its done callbacks run here)."""
        if error is not None:
            self.future.set_exception(error)
        else:
            self.future.set_result(answer)


class ChannelClosedError(grpc.RpcError):
    """The channel was closed before the call started (grpcio raises ValueError then): CANCELLED, as for a call in flight."""

    def __init__(self, details: str) -> None:
        super().__init__(details)
        self._details = details

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.CANCELLED

    def details(self) -> str:
        return self._details


class CallThreads:
    """A few persistent threads that make unary calls and complete futures; see the module docstring."""

    def __init__(self, name: str, max_threads: int = MAX_THREADS, idle_seconds: float = IDLE_SECONDS) -> None:
        if max_threads < 1:
            raise ValueError(f"max_threads must be at least 1, got {max_threads}")
        self._name = name
        self._max_threads = max_threads
        self._idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)
        self._calls: deque[PreparedCall] = deque()
        self._threads = 0
        # Threads not running a call: waiting for one, or done with one and about to look for the next.
        self._available = 0
        self._closed = False

    def call(
        self,
        method: Callable[..., Any],
        request: Any,
        *,
        timeout: float | None = None,
        metadata: Sequence[tuple[str, str]] | None = None,
        on_done: Callable[[Future[Any]], object] | None = None,
    ) -> Future[Any]:
        """Start ``method(request, timeout=..., metadata=...)`` (a blocking unary multi-callable); its future.

        ``on_done(future)`` runs on the call thread once the call ended. Pass it here rather than
        to ``add_done_callback`` afterwards: a call that ends before that runs the callback on the
        caller's thread, inside whatever lock the caller holds.
        """
        prepared = self.prepare(method, request, timeout=timeout, metadata=metadata, on_done=on_done)
        self.start(prepared)
        return prepared.future

    def prepare(
        self,
        method: Callable[..., Any],
        request: Any,
        *,
        timeout: float | None = None,
        metadata: Sequence[tuple[str, str]] | None = None,
        on_done: Callable[[Future[Any]], object] | None = None,
    ) -> PreparedCall:
        """The call :meth:`call` would start, not started: :meth:`start` starts it on a call thread."""
        prepared = PreparedCall(method, request, timeout, metadata)
        if on_done is not None:
            prepared.future.add_done_callback(on_done)
        return prepared

    def start(self, prepared: PreparedCall) -> None:
        """Make ``prepared`` on a call thread (an idle one, else a new one up to ``max_threads``, else the next one free).

        Raises RuntimeError once closed.
        """
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._name}: the call threads are closed")
            self._calls.append(prepared)
            if self._available >= len(self._calls):
                self._work.notify()  # an available thread checks the queue before it waits
                return
            if self._threads >= self._max_threads:
                return  # a busy thread takes it when done
            self._claim_new_thread_locked()
        self._start_thread()

    def _claim_new_thread_locked(self) -> None:
        self._threads += 1
        self._available += 1

    def _start_thread(self) -> None:
        try:
            threading.Thread(target=self._run, name=self._name, daemon=True).start()
        except BaseException:
            with self._lock:
                self._threads -= 1
                self._available -= 1
            raise

    def close(self) -> None:
        """Let every thread exit once the calls queued now are done; later calls are refused."""
        with self._lock:
            self._closed = True
            self._work.notify_all()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called: :meth:`start` raises from then on."""
        return self._closed

    @property
    def threads(self) -> int:
        with self._lock:
            return self._threads

    def _run(self) -> None:
        while True:
            with self._lock:
                # Bounded: each wait ends after idle_seconds, and the thread leaves when no call came.
                while not self._calls:
                    if self._closed or (not self._work.wait(self._idle_seconds) and not self._calls):
                        self._threads -= 1
                        self._available -= 1
                        return
                work = self._calls.popleft()
                self._available -= 1
            if not work.future.set_running_or_notify_cancel():
                with self._lock:
                    self._available += 1
                continue
            outcome = work.invoke()
            # Available before the callbacks run: a call they (or the waiting caller) make next reuses this thread.
            with self._lock:
                self._available += 1
            work.settle(*outcome)
