"""Requests parked on partitions until something happens there: the mechanism both purgatories share.

A waiter is registered under one or more partitions; events on a partition reach the waiters
registered there; :meth:`PartitionWaitlist.wake_partition` and :meth:`PartitionWaitlist.close`
wake them whatever they wait for. Long-polling fetches (``server.fetch_purgatory``) and acks=all
produces (``replication.purgatory``) are the two kinds of waiters. Thread-safe: the map changes
under one lock; notifiers read ``_waiters`` without it first (a dictionary membership test is
atomic) so that partitions nobody waits on cost no locking.

A wake-up is a :class:`WakeSignal`: a flag a blocked thread waits on, plus at most one callback
an event loop subscribes. So one waiting request is a :class:`Pending` — "try now" steps run on
any thread, between them a wait for the signal or a deadline — and both front doors share its
steps: the gRPC servicer blocks its own thread in :func:`wait_blocking`; the Kafka listener
subscribes a callback that completes an asyncio future (``loop.call_soon_threadsafe``), arms a
loop timer for the deadline and holds no thread while the request waits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Generic, Protocol, TypeVar

PartitionKey = tuple[str, int]


class WakeSignal:
    """A waiter's wake-up: a flag (for a blocked thread) and at most one subscribed callback (for an event loop).

    :meth:`set` may run on any thread, under a purgatory's lock: the callback must be quick and
    must not block (the Kafka listener's hands the wake-up to its loop). It may be called more
    than once for one wait (a wake racing a subscription); subscribers ignore the repeats.
    """

    __slots__ = ("_event", "_callback")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._callback: Callable[[], None] | None = None

    def set(self) -> None:
        self._event.set()
        callback = self._callback
        if callback is not None:
            callback()

    def clear(self) -> None:
        """Arm for the next wait (before re-checking the condition, so that no wake-up is lost)."""
        self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout_seconds: float) -> bool:
        """Block this thread until set or ``timeout_seconds`` pass; True when set."""
        return self._event.wait(max(timeout_seconds, 0.0))

    def subscribe(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` at the next :meth:`set` (at once when already set); None unsubscribes."""
        self._callback = callback
        if callback is not None and self._event.is_set():
            callback()


class Pending(Protocol):
    """A request that may have to wait, as steps both front doors share.

    The owner calls :meth:`advance` (on a worker thread: it reads, checks, re-arms the signal)
    until it returns True; between two calls it waits until :attr:`signal` is set or
    :meth:`remaining_seconds` pass, whichever comes first, and it always calls :meth:`release`
    at the end (also when it gives up: a client gone, a shutdown), which unregisters every
    waiter. After the last :meth:`advance`, the request's own object holds the result.
    """

    @property
    def signal(self) -> WakeSignal: ...

    def advance(self) -> bool: ...

    def remaining_seconds(self) -> float: ...

    def release(self) -> None: ...


def wait_blocking(pending: Pending, *, started: bool = False) -> None:
    """Run ``pending`` to its end on this thread (the blocking flavour, for gRPC), releasing it always.

    ``started``: its first :meth:`Pending.advance` already ran and returned False, so wait first.
    """
    try:
        if started:
            pending.signal.wait(pending.remaining_seconds())
        while not pending.advance():
            pending.signal.wait(pending.remaining_seconds())
    finally:
        pending.release()


class Wakeable(Protocol):
    def _wake(self) -> None: ...


Waiter = TypeVar("Waiter", bound=Wakeable)


class PartitionWaitlist(Generic[Waiter]):
    """Waiters by partition, woken by their owner's events, by :meth:`wake_partition` or by :meth:`close`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[PartitionKey, list[Waiter]] = {}
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def _register_locked(self, waiter: Waiter, keys: Iterable[PartitionKey]) -> None:
        for key in keys:
            self._waiters.setdefault(key, []).append(waiter)

    def _unregister_locked(self, waiter: Waiter, keys: Iterable[PartitionKey]) -> None:
        for key in keys:
            waiters = self._waiters.get(key)
            if waiters is None:
                continue
            waiters.remove(waiter)
            if not waiters:
                del self._waiters[key]

    def has_waiters(self, topic: str, partition: int) -> bool:
        """Whether any waiter is parked on the partition now (unlocked: a waiter re-checks its condition after parking)."""
        return (topic, partition) in self._waiters

    def wake_partition(self, topic: str, partition: int) -> None:
        """Wake every waiter of a partition whatever it needs (leadership moved, ISR shrank, partition deleted)."""
        with self._lock:
            for waiter in self._waiters.get((topic, partition), ()):
                waiter._wake()

    def close(self) -> None:
        """Wake every waiter; from now on new waiters are woken at once or refused (graceful shutdown)."""
        with self._lock:
            self._closed = True
            for waiters in self._waiters.values():
                for waiter in waiters:
                    waiter._wake()
