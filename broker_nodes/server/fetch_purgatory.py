"""Where long-polling fetches wait for data: appends wake them, nobody busy-waits.

A Fetch that finds fewer than ``min_bytes`` parks a :class:`FetchWaiter` on every partition
it reads. Each append reports its size to the waiters of its partition; a waiter whose
partitions received at least the bytes it still needs wakes its thread, which reads again.
The append path costs one dictionary lookup when nobody waits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

from broker_nodes.partition_waitlist import PartitionKey, PartitionWaitlist

Results = TypeVar("Results")


class FetchWaiter:
    """One parked fetch. Its counters change only under the purgatory's lock."""

    __slots__ = ("_event", "_bytes_needed", "_bytes_seen", "keys")

    def __init__(self, keys: tuple[PartitionKey, ...], bytes_needed: int) -> None:
        self._event = threading.Event()
        self._bytes_needed = bytes_needed
        self._bytes_seen = 0
        self.keys = keys

    def wait(self, timeout_seconds: float) -> bool:
        """Block until woken or ``timeout_seconds`` pass; True when woken."""
        return self._event.wait(timeout_seconds)

    def rearm(self, bytes_needed: int) -> None:
        """Wait again for ``bytes_needed`` more bytes (after a wake-up that read too little)."""
        self._event.clear()
        self._bytes_needed = bytes_needed
        self._bytes_seen = 0

    def _on_append(self, size: int) -> None:
        self._bytes_seen += size
        if self._bytes_seen >= self._bytes_needed:
            self._event.set()

    def _wake(self) -> None:
        self._event.set()


class FetchPurgatory(PartitionWaitlist[FetchWaiter]):
    """Parked fetches by partition.

    At most ``max_parked`` fetches wait at once: a waiting fetch holds a request thread, and
    the cap keeps threads free for produce and every other call (the server's thread pool is
    sized above the cap). A fetch that finds no free slot answers at once with what it has.
    Thread-safe; after :meth:`close` nothing parks and every waiter is woken.
    """

    def __init__(self, max_parked: int) -> None:
        super().__init__()
        self._parked = 0
        self._max_parked = max_parked

    @property
    def parked(self) -> int:
        return self._parked

    def park(self, keys: Iterable[PartitionKey], bytes_needed: int) -> FetchWaiter | None:
        """Register a waiter on ``keys``; None when the purgatory is full or closed."""
        waiter = FetchWaiter(tuple(keys), max(bytes_needed, 1))
        with self._lock:
            if self._closed or self._parked >= self._max_parked:
                return None
            self._parked += 1
            self._register_locked(waiter, waiter.keys)
        return waiter

    def long_poll(
        self,
        keys: Iterable[PartitionKey],
        read: Callable[[], tuple[Results, int, bool]],
        *,
        min_bytes: int,
        max_wait_ms: int,
        monotonic: Callable[[], float],
    ) -> Results:
        """Run ``read`` (-> results, bytes read, any partition failed) until it has ``min_bytes``.

        Returns at once when enough bytes are there, when a partition failed or when
        ``max_wait_ms`` is 0; otherwise parks on ``keys`` and reads again after each wake-up
        until enough bytes arrived, the deadline passed or the purgatory closed. Consumers'
        fetches and followers' replica fetches both wait here.
        """
        keys = tuple(keys)
        results, total, failed = read()
        if failed or total >= min_bytes or max_wait_ms <= 0 or not keys:
            return results
        deadline = monotonic() + max_wait_ms / 1000.0
        waiter = self.park(keys, min_bytes - total)
        if waiter is None:
            return results
        try:
            while True:
                # Re-read after (re)arming, so that an append between the last read and the
                # arming is either seen by this read or counted by the waiter.
                results, total, failed = read()
                if failed or total >= min_bytes or self._closed:
                    return results
                remaining = deadline - monotonic()
                if remaining <= 0 or not waiter.wait(remaining):
                    return results
                waiter.rearm(min_bytes - total)
        finally:
            self.release(waiter)

    def release(self, waiter: FetchWaiter) -> None:
        """Unregister a waiter (always call it, in a ``finally``)."""
        with self._lock:
            self._parked -= 1
            self._unregister_locked(waiter, waiter.keys)

    def notify_append(self, topic: str, partition: int, size_bytes: int) -> None:
        """Report ``size_bytes`` appended to a partition; wakes waiters that now have enough."""
        key = (topic, partition)
        # Unlocked fast path: when no fetch waits on this partition (the common case on a busy
        # producer) the lock is not taken. A waiter registered concurrently re-reads the log
        # after registering, so it cannot miss this append.
        if key not in self._waiters:
            return
        with self._lock:
            for waiter in self._waiters.get(key, ()):
                waiter._on_append(size_bytes)
