"""Where long-polling fetches wait for data: appends wake them, nobody busy-waits.

A Fetch that finds fewer than ``min_bytes`` parks a :class:`FetchWaiter` on every partition
it reads. Each append reports its size to the waiters of its partition; a waiter whose
partitions received at least the bytes it still needs sets its wake signal, and its owner
reads again. The append path costs one dictionary lookup when nobody waits.

One long poll is a :class:`LongPoll` (a ``partition_waitlist.Pending``): its steps (read,
park, re-read after a wake-up) are the same whether a thread blocks between them
(:meth:`FetchPurgatory.long_poll`, the gRPC servicer and followers' replica fetches) or the
Kafka listener's event loop waits for the signal and holds no thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from broker_nodes.partition_waitlist import PartitionKey, PartitionWaitlist, WakeSignal, wait_blocking

Results = TypeVar("Results")
Read = Callable[[], tuple[Results, int, bool]]  # -> (results, bytes read, whether any partition failed)


class FetchWaiter:
    """One parked fetch. Its counters change only under the purgatory's lock."""

    __slots__ = ("signal", "_bytes_needed", "_bytes_seen", "keys")

    def __init__(self, keys: tuple[PartitionKey, ...], bytes_needed: int) -> None:
        self.signal = WakeSignal()
        self._bytes_needed = bytes_needed
        self._bytes_seen = 0
        self.keys = keys

    def wait(self, timeout_seconds: float) -> bool:
        """Block until woken or ``timeout_seconds`` pass; True when woken."""
        return self.signal.wait(timeout_seconds)

    def rearm(self, bytes_needed: int) -> None:
        """Wait again for ``bytes_needed`` more bytes (after a wake-up that read too little)."""
        self.signal.clear()
        self._bytes_needed = bytes_needed
        self._bytes_seen = 0

    def _on_append(self, size: int) -> None:
        self._bytes_seen += size
        if self._bytes_seen >= self._bytes_needed:
            self.signal.set()

    def _wake(self) -> None:
        self.signal.set()


class LongPoll(Generic[Results]):
    """One fetch's long poll as steps: read; if too little, park and re-read after each wake-up until done.

    :meth:`advance` returns True once :attr:`results` is the answer: enough bytes (``min_bytes``),
    a partition failed, ``max_wait_ms`` is 0, the purgatory is full or closed, or the deadline
    passed (then the last read is the answer, as Kafka answers a long poll at its max wait).
    Not thread-safe: one owner drives it; appends reach it only through its waiter's signal.
    """

    def __init__(
        self,
        purgatory: FetchPurgatory,
        keys: Iterable[PartitionKey],
        read: Read[Results],
        *,
        min_bytes: int,
        max_wait_ms: int,
        monotonic: Callable[[], float],
        holds_thread: bool,
    ) -> None:
        self._purgatory = purgatory
        self._holds_thread = holds_thread
        self._keys = tuple(keys)
        self._read = read
        self._min_bytes = min_bytes
        self._max_wait_ms = max_wait_ms
        self._monotonic = monotonic
        self._deadline = 0.0
        self._waiter: FetchWaiter | None = None
        self._released = False
        self._total = 0
        self.results: Results | None = None
        # Until a waiter is parked the signal is one nobody sets: an owner never waits before the
        # first advance. Made only if asked for: most fetches are answered by their first read or
        # park (a wake signal is an Event, a lock and a condition), and one per fetch is enough.
        self._idle_signal: WakeSignal | None = None

    @property
    def signal(self) -> WakeSignal:
        if self._waiter is not None:
            return self._waiter.signal
        if self._idle_signal is None:
            self._idle_signal = WakeSignal()
        return self._idle_signal

    def remaining_seconds(self) -> float:
        return self._deadline - self._monotonic()

    def advance(self) -> bool:
        """Read (first call) or re-read after a wake-up; True when :attr:`results` is the answer."""
        if self._waiter is None:
            return self._start()
        if not self._waiter.signal.is_set():
            return True  # the deadline passed without a wake-up: the last read is the answer
        self._waiter.rearm(self._min_bytes - self._total)
        return self._read_again()

    def wait_longer(self, max_wait_ms: int) -> bool:
        """Keep waiting after :meth:`advance` gave an answer, for at most ``max_wait_ms`` from now.

        For an owner that reads an answer as "not yet" after all (a follower's fetch that lingers
        after a high watermark move): the waiter stays parked, so no wake-up since the last read
        is lost and nothing is read again until the next one. True when :attr:`results` stays the
        answer (no time left, the purgatory full or closed); False: wait for :attr:`signal` and
        :meth:`advance` again.
        """
        if max_wait_ms <= 0 or not self._keys:
            return True
        self._deadline = self._monotonic() + max_wait_ms / 1000.0
        if self._waiter is not None:
            return self._purgatory.closed
        # The first read answered before parking: park now, and read again so that an append
        # between that read and the parking is seen.
        self._waiter = self._purgatory.park(self._keys, self._min_bytes - self._total, holds_thread=self._holds_thread)
        if self._waiter is None:
            return True
        return self._read_again()

    def _start(self) -> bool:
        self.results, self._total, failed = self._read()
        if failed or self._total >= self._min_bytes or self._max_wait_ms <= 0 or not self._keys:
            return True
        self._deadline = self._monotonic() + self._max_wait_ms / 1000.0
        self._waiter = self._purgatory.park(self._keys, self._min_bytes - self._total, holds_thread=self._holds_thread)
        if self._waiter is None:
            return True
        return self._read_again()

    def _read_again(self) -> bool:
        # Re-read after (re)arming, so that an append between the last read and the arming is
        # either seen by this read or counted by the waiter.
        self.results, self._total, failed = self._read()
        return failed or self._total >= self._min_bytes or self._purgatory.closed or self.remaining_seconds() <= 0

    def release(self) -> None:
        """Unregister the waiter (idempotent; always call it, also when the owner gives up)."""
        if self._waiter is not None and not self._released:
            self._released = True
            self._waiter.signal.subscribe(None)
            self._purgatory.release(self._waiter, holds_thread=self._holds_thread)


class FetchPurgatory(PartitionWaitlist[FetchWaiter]):
    """Parked fetches by partition.

    Two caps bound it. A fetch that blocks its thread while parked (the gRPC servicer's, a
    follower's) counts against ``max_parked``: the cap keeps threads free for produce and every
    other call (the gRPC thread pool is sized above it). A fetch that parks without a thread (a
    Kafka client's, waiting on the listener's event loop) counts against
    ``max_parked_without_thread``, which bounds memory only: one waiter and one request's parsed
    partitions each, and a Kafka connection has at most one request in progress, so the
    broker's ``max.connections`` is the natural value. A fetch that finds no free slot answers
    at once with what it has. Thread-safe; after :meth:`close` nothing parks and every waiter
    is woken.
    """

    def __init__(self, max_parked: int, max_parked_without_thread: int = 0) -> None:
        super().__init__()
        self._parked = 0
        self._parked_without_thread = 0
        self._max_parked = max_parked
        self._max_parked_without_thread = max_parked_without_thread

    @property
    def parked(self) -> int:
        """Fetches parked now, with or without a thread."""
        return self._parked + self._parked_without_thread

    def park(self, keys: Iterable[PartitionKey], bytes_needed: int, *, holds_thread: bool = True) -> FetchWaiter | None:
        """Register a waiter on ``keys``; None when the purgatory is full (for that kind of waiter) or closed."""
        waiter = FetchWaiter(tuple(keys), max(bytes_needed, 1))
        with self._lock:
            if self._closed:
                return None
            if holds_thread:
                if self._parked >= self._max_parked:
                    return None
                self._parked += 1
            else:
                if self._parked_without_thread >= self._max_parked_without_thread:
                    return None
                self._parked_without_thread += 1
            self._register_locked(waiter, waiter.keys)
        return waiter

    def start_long_poll(
        self,
        keys: Iterable[PartitionKey],
        read: Read[Results],
        *,
        min_bytes: int,
        max_wait_ms: int,
        monotonic: Callable[[], float],
        holds_thread: bool,
    ) -> LongPoll[Results]:
        """A long poll of ``keys`` not yet started: its owner drives it (see :class:`LongPoll`).

        ``holds_thread``: whether its owner blocks a thread between the steps (which cap it counts against).
        """
        return LongPoll(self, keys, read, min_bytes=min_bytes, max_wait_ms=max_wait_ms, monotonic=monotonic, holds_thread=holds_thread)

    def long_poll(
        self,
        keys: Iterable[PartitionKey],
        read: Read[Results],
        *,
        min_bytes: int,
        max_wait_ms: int,
        monotonic: Callable[[], float],
    ) -> Results:
        """Run ``read`` (-> results, bytes read, any partition failed) until it has ``min_bytes``, blocking this thread.

        Returns at once when enough bytes are there, when a partition failed or when
        ``max_wait_ms`` is 0; otherwise parks on ``keys`` and reads again after each wake-up
        until enough bytes arrived, the deadline passed or the purgatory closed. Consumers'
        fetches (gRPC) and followers' replica fetches both wait here.
        """
        poll = self.start_long_poll(keys, read, min_bytes=min_bytes, max_wait_ms=max_wait_ms, monotonic=monotonic, holds_thread=True)
        wait_blocking(poll)
        assert poll.results is not None
        return poll.results

    def release(self, waiter: FetchWaiter, *, holds_thread: bool = True) -> None:
        """Unregister a waiter parked with the same ``holds_thread`` (always call it, in a ``finally``)."""
        with self._lock:
            if holds_thread:
                self._parked -= 1
            else:
                self._parked_without_thread -= 1
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
