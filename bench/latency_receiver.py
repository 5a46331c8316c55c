"""The consuming half of the end-to-end scenario, run in a separate process.

A consumer in the producer's process would share its interpreter lock: every latency would
then include waiting for the producer's thread to let go (up to the 5 ms switch interval).
Real producers and consumers are separate processes, so the benchmark's are too.

The child imports ``spec.module``, calls ``spec.function(expected=..., deadline_ns=...,
on_ready=..., **spec.arguments)``, which returns an ``array('q')`` of latencies in
nanoseconds (monotonic receipt time minus the due time stamped in each value), and sends it
back through a pipe.
"""

from __future__ import annotations

import importlib
import multiprocessing
import time
from array import array
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any

from server_runtime.malloc_tuning import tune_this_process

NANOSECONDS_PER_SECOND = 1_000_000_000


class ReceiverError(RuntimeError):
    """The receiving process failed, or did not become ready or answer in time."""

    retriable = False


@dataclass(frozen=True)
class ReceiverSpec:
    """Where the receive function lives and the (picklable) arguments it needs."""

    module: str
    function: str
    arguments: dict[str, Any] = field(default_factory=dict)


def _receive_in_child(spec: ReceiverSpec, expected: int, seconds_limit: float, ready: Any, results: Connection) -> None:
    tune_this_process()
    try:
        receive = getattr(importlib.import_module(spec.module), spec.function)
        deadline_ns = time.monotonic_ns() + int(seconds_limit * NANOSECONDS_PER_SECOND)
        latencies = receive(expected=expected, deadline_ns=deadline_ns, on_ready=ready.set, **spec.arguments)
        results.send(("latencies", latencies.tobytes()))
    except BaseException as error:  # Everything goes back to the parent, which reports it.
        results.send(("error", f"{type(error).__name__}: {error}"))
        ready.set()
    finally:
        results.close()


class LatencyReceiver:
    """A receiving process for one end-to-end run. Use as a context manager; one thread owns it."""

    def __init__(self, spec: ReceiverSpec, expected: int, seconds_limit: float, ready_timeout: float = 30.0) -> None:
        self.spec = spec
        self.expected = expected
        self.seconds_limit = seconds_limit
        self.ready_timeout = ready_timeout
        # Spawn, not fork: gRPC and asyncio state must not be copied into a child.
        context = multiprocessing.get_context("spawn")
        self._ready = context.Event()
        self._results, child_end = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_receive_in_child,
            args=(spec, expected, seconds_limit, self._ready, child_end),
            name=f"bench-receiver-{spec.module.rsplit('.', 1)[-1]}",
            daemon=True,
        )
        self._child_end = child_end
        # (kind, payload) as the child sent it, once received.
        self._answer: tuple[str, Any] | None = None

    def __enter__(self) -> LatencyReceiver:
        self._process.start()
        self._child_end.close()
        deadline = time.monotonic() + self.ready_timeout
        # Bounded by the deadline; short waits so that a child that died is noticed at once.
        while not self._ready.wait(0.1):
            if not self._process.is_alive():
                raise ReceiverError(f"receiver process exited with status {self._process.exitcode} before it was ready")
            if time.monotonic() > deadline:
                raise ReceiverError(f"receiver did not become ready in {self.ready_timeout}s")
        if self._results.poll():
            # Either the child failed while starting (it sets ready to say so), or it is
            # already done; keep the answer for latencies() and raise a failure now.
            self._answer = self._results.recv()
            if self._answer[0] == "error":
                raise ReceiverError(f"receiver failed: {self._answer[1]}")
        return self

    def latencies(self, timeout: float) -> array:
        """The latencies the child measured; waits up to ``timeout`` seconds for it to finish."""
        if self._answer is None:
            if not self._results.poll(timeout):
                raise ReceiverError(f"receiver sent no result within {timeout}s")
            self._answer = self._results.recv()
        kind, payload = self._answer
        if kind == "error":
            raise ReceiverError(f"receiver failed: {payload}")
        latencies = array("q")
        latencies.frombytes(payload)
        return latencies

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None) -> None:
        self._process.join(timeout=5)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(timeout=5)
        self._results.close()
