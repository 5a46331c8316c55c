"""A long-lived call's client going away while one of its requests waits (a long poll on a stream).

A unary long poll ends by itself within its ``max_wait_ms``; a stream's handler, though, holds
a request thread and one of the broker's few stream slots for as long as it runs, so when its
client cancels the stream (or its connection dies) the request waiting in a purgatory is given
up at once instead of at its deadline: the transport calls :meth:`Departure.leave` (gRPC's
``context.add_callback``), which wakes the request it finds waiting, and :meth:`Departure.wait`
then releases it (its waiter leaves the purgatory) and reports that nobody is there to answer.

Thread-safe: :meth:`leave` runs on a transport thread, :meth:`wait` on the request's own thread.
"""

from __future__ import annotations

from broker_nodes.partition_waitlist import Pending, WakeSignal


class Departure:
    """See the module docstring. One per stream; it watches one waiting request at a time."""

    __slots__ = ("_gone", "_watched")

    def __init__(self) -> None:
        self._gone = False
        self._watched: WakeSignal | None = None  # the signal the request's thread waits on now

    @property
    def gone(self) -> bool:
        return self._gone

    def leave(self) -> None:
        """The client went away: wake the waiting request, if any (from any thread; idempotent)."""
        self._gone = True
        watched = self._watched
        if watched is not None:
            watched.set()

    def wait(self, pending: Pending) -> bool:
        """Run ``pending`` to its end on this thread, as ``partition_waitlist.wait_blocking``, unless the client leaves.

        True when ``pending`` has its answer; False when the client left first (nothing to answer).
        ``pending`` is released either way.
        """
        try:
            while not pending.advance():
                # The signal is watched before the flag is read: a leave() that comes after this read
                # finds the signal and sets it, so the wait below cannot miss it.
                self._watched = signal = pending.signal
                if self._gone:
                    return False
                signal.wait(pending.remaining_seconds())
            return not self._gone
        finally:
            self._watched = None
            pending.release()
