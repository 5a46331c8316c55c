"""Where acks=all produces wait for the in-sync replicas: high-watermark moves wake them.

A produce with acks=-1 appends first, then parks one :class:`AcksWaiter` per partition with
the offset the high watermark must reach (the batch's last offset + 1); the waiters of one
request share one wake signal. Each high-watermark move of a partition wakes the waiters it
satisfies. One request's wait is an :class:`AcksWait` (a ``partition_waitlist.Pending``): a
gRPC produce blocks its own thread between its steps, a Kafka client's produce waits on the
listener's event loop and holds no thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from broker_nodes.partition_waitlist import PartitionKey, PartitionWaitlist, WakeSignal


class AcksWaiter:
    """One parked acks=all produce on one partition."""

    __slots__ = ("key", "required_offset", "signal")

    def __init__(self, key: PartitionKey, required_offset: int, signal: WakeSignal | None = None) -> None:
        self.key = key
        self.required_offset = required_offset
        self.signal = signal if signal is not None else WakeSignal()

    def wait(self, timeout_seconds: float) -> bool:
        """Block until woken or ``timeout_seconds`` pass; True when woken."""
        return self.signal.wait(timeout_seconds)

    def rearm(self) -> None:
        """Wait again (after a wake-up that did not satisfy the produce); re-check the high watermark afterwards."""
        self.signal.clear()

    def _wake(self) -> None:
        self.signal.set()


@dataclass(frozen=True, slots=True)
class AcksTarget:
    """One partition an acks=all produce waits for.

    ``check`` answers whether the in-sync replicas have the batch (True), not yet (False), or
    raises the partition's error (leadership moved, ISR too small); ``timed_out`` is the error
    when the deadline passes first.
    """

    key: PartitionKey
    required_offset: int
    check: Callable[[], bool]
    timed_out: Callable[[], Exception]


class AcksWait:
    """One request's acks=all wait on all its partitions: :attr:`errors` holds each target's failure, None when replicated.

    :meth:`advance` re-arms the shared signal, then checks every target still waiting; True
    when none is left (replicated, failed, or failed at the deadline). The purgatory closing
    wakes it, and each target's check then fails it (NOT_LEADER_OR_FOLLOWER).
    """

    def __init__(self, purgatory: AcksPurgatory, targets: Sequence[AcksTarget], deadline: float, monotonic: Callable[[], float]) -> None:
        self._purgatory = purgatory
        self._targets = list(targets)
        self._deadline = deadline
        self._monotonic = monotonic
        self._signal = WakeSignal()
        self._waiters = [purgatory.park(target.key, target.required_offset, self._signal) for target in self._targets]
        self._open = set(range(len(self._targets)))
        self.errors: list[Exception | None] = [None] * len(self._targets)

    @property
    def signal(self) -> WakeSignal:
        return self._signal

    def remaining_seconds(self) -> float:
        return self._deadline - self._monotonic()

    def advance(self) -> bool:
        self._signal.clear()
        for index in sorted(self._open):
            target = self._targets[index]
            try:
                done = target.check()
            except Exception as error:  # this partition's answer, mapped by server.errors
                self.errors[index] = error
                done = True
            if done:
                self._open.discard(index)
        if self._open and self.remaining_seconds() <= 0:
            for index in self._open:
                self.errors[index] = self._targets[index].timed_out()
            self._open.clear()
        return not self._open

    def release(self) -> None:
        """Unregister every waiter (idempotent)."""
        self._signal.subscribe(None)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            self._purgatory.release(waiter)


class AcksPurgatory(PartitionWaitlist[AcksWaiter]):
    """Parked acks=all produces by partition. Thread-safe; after :meth:`close` every waiter is woken at once."""

    def park(self, key: PartitionKey, required_offset: int, signal: WakeSignal | None = None) -> AcksWaiter:
        """Register a waiter (with ``signal``, one a request's waiters share); the caller re-checks the high
        watermark after parking (so no move is missed) and always calls :meth:`release` in a ``finally``."""
        waiter = AcksWaiter(key, required_offset, signal)
        with self._lock:
            if self._closed:
                waiter._wake()
            self._register_locked(waiter, (key,))
        return waiter

    def wait(self, targets: Sequence[AcksTarget], deadline: float, monotonic: Callable[[], float]) -> AcksWait:
        """Park one request's wait on ``targets`` until ``deadline`` (on ``monotonic``'s scale); its owner drives it."""
        return AcksWait(self, targets, deadline, monotonic)

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

    @property
    def parked(self) -> int:
        """How many partition waiters are registered now (tests and metrics)."""
        with self._lock:
            return sum(len(waiters) for waiters in self._waiters.values())
