"""Where acks=all produces wait for the in-sync replicas: high-watermark moves wake them.

A produce with acks=-1 appends first, then parks one :class:`AcksWaiter` per partition with
the offset the high watermark must reach (the batch's last offset + 1). Each high-watermark
move of a partition wakes the waiters it satisfies. A waiting produce holds only its own
request thread; every other request goes on being served by the rest of the pool.
"""

from __future__ import annotations

import threading

from broker_nodes.partition_waitlist import PartitionKey, PartitionWaitlist


class AcksWaiter:
    """One parked acks=all produce on one partition."""

    __slots__ = ("key", "required_offset", "_event")

    def __init__(self, key: PartitionKey, required_offset: int) -> None:
        self.key = key
        self.required_offset = required_offset
        self._event = threading.Event()

    def wait(self, timeout_seconds: float) -> bool:
        """Block until woken or ``timeout_seconds`` pass; True when woken."""
        return self._event.wait(max(timeout_seconds, 0.0))

    def rearm(self) -> None:
        """Wait again (after a wake-up that did not satisfy the produce); re-check the high watermark afterwards."""
        self._event.clear()

    def _wake(self) -> None:
        self._event.set()


class AcksPurgatory(PartitionWaitlist[AcksWaiter]):
    """Parked acks=all produces by partition. Thread-safe; after :meth:`close` every waiter is woken at once."""

    def park(self, key: PartitionKey, required_offset: int) -> AcksWaiter:
        """Register a waiter; the caller re-checks the high watermark after parking (so no move is missed)
        and always calls :meth:`release` in a ``finally``."""
        waiter = AcksWaiter(key, required_offset)
        with self._lock:
            if self._closed:
                waiter._wake()
            self._register_locked(waiter, (key,))
        return waiter

    def release(self, waiter: AcksWaiter) -> None:
        with self._lock:
            self._unregister_locked(waiter, (waiter.key,))

    def on_high_watermark(self, topic: str, partition: int, high_watermark: int) -> None:
        """The partition's high watermark reached ``high_watermark``: wake the waiters it satisfies."""
        key = (topic, partition)
        # Unlocked fast path: acks=1 traffic and idle partitions never take the lock. A waiter
        # registered concurrently re-reads the high watermark after parking.
        if key not in self._waiters:
            return
        with self._lock:
            for waiter in self._waiters.get(key, ()):
                if waiter.required_offset <= high_watermark:
                    waiter._wake()
