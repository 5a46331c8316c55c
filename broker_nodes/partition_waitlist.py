"""Threads parked on partitions until something happens there: the mechanism both purgatories share.

A waiter is registered under one or more partitions; events on a partition reach the waiters
registered there; :meth:`PartitionWaitlist.wake_partition` and :meth:`PartitionWaitlist.close`
wake them whatever they wait for. Long-polling fetches (``server.fetch_purgatory``) and acks=all
produces (``replication.purgatory``) are the two kinds of waiters. Thread-safe: the map changes
under one lock; notifiers read ``_waiters`` without it first (a dictionary membership test is
atomic) so that partitions nobody waits on cost no locking.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Generic, Protocol, TypeVar

PartitionKey = tuple[str, int]


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
