"""How a follower's parked session fetch is woken: at once by records and errors, by a high watermark move only after the linger.

A high watermark move alone is answered to a follower after at most the linger (the manager's
``HIGH_WATERMARK_LINGER_MS``), so that it rides with the records that usually follow. Waking the
parked fetch at the move itself only to find that out costs a thread wake-up and a read of its
session, and on the acks=all round trip it comes at the worst moment: the move is made by the
other follower's fetch, which also wakes the acks=all produce waiting for it, and the two woken
threads then take turns with the interpreter lock before the produce can answer (about one
wake-up and one session read per acknowledged record, on the leader).

So the manager marks the wake-ups it makes for a move (:func:`high_watermark_moves`), and a
follower's long poll waits on a :class:`FollowerFetchWake` subscribed to its wake signal:
the signal itself is set by every wake-up as before, but only the unmarked ones wake the
fetcher's thread. A parked fetch that is not lingering yet waits in slices of the linger; one
that ends with its signal set (a move came meanwhile) reads and answers the move then, at most
one linger after it, as a linger started at the move would have. A lingering fetch (and a full
one, which answers no move alone) ignores moves: its linger, or records, end its wait.
Consumers' fetches parked on the same partitions have no such subscription and are woken at
every move, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from broker_nodes.partition_waitlist import WakeSignal

_marking = threading.local()


@contextmanager
def high_watermark_moves() -> Iterator[None]:
    """Mark the wake-ups made on this thread meanwhile as those of a high watermark move."""
    _marking.active = True
    try:
        yield
    finally:
        _marking.active = False


def _is_move() -> bool:
    return getattr(_marking, "active", False)


class FollowerFetchWake:
    """The wait between two reads of one follower's session long poll (see the module docstring).

    :meth:`wait` runs on the fetch's own thread; :meth:`on_signal` on any waker's thread, under
    the fetch purgatory's lock (it only sets an event). ``lingering`` is set by the owner when
    the fetch starts lingering (or is a full one).
    """

    __slots__ = ("_event", "_linger_seconds", "lingering")

    def __init__(self, linger_seconds: float, *, lingering: bool) -> None:
        self._event = threading.Event()
        self._linger_seconds = linger_seconds
        self.lingering = lingering

    def on_signal(self) -> None:
        """The long poll's wake signal was set: wake the fetch unless that was a high watermark move (and there is a linger)."""
        if self._linger_seconds <= 0 or not _is_move():
            self._event.set()

    def wait(self, signal: WakeSignal, remaining_seconds: Callable[[], float]) -> bool:
        """Block until the long poll should read again (its signal is set) or its deadline passed.

        Returns True when the wait ended on a move that waited out the linger (answer it now);
        False otherwise. ``signal`` is the long poll's, ``remaining_seconds`` its time left.
        """
        signal.subscribe(self.on_signal)
        while True:
            remaining = remaining_seconds()
            if remaining <= 0:
                return False
            if self.lingering or self._linger_seconds <= 0:
                woken = self._event.wait(remaining)
            else:
                woken = self._event.wait(min(remaining, self._linger_seconds))
            self._event.clear()
            if signal.is_set():
                # A wake-up this thread was woken for, or a move that came during a slice (at most a linger ago).
                return not woken and not self.lingering
            # Woken without the signal (a wake-up an earlier read already saw) or a quiet slice: wait on.
