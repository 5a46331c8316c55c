"""Metering windows: wall-clock intervals aligned to multiples of ``metering.interval.ms``.

Window k is ``[k*I, (k+1)*I)`` in epoch milliseconds, the same on every broker, so that
readers can line up the brokers' windows. :class:`WindowSchedule` hands out consecutive
windows: each starts where the previous one ended, so no moment is in two windows and none
is in none. The first window of a process starts at the aligned boundary before it started;
a window closed late (the emitter was held up past one or more boundaries) ends at the last
boundary passed and so covers several intervals; a window closed early (clean shutdown) ends
at that moment and the next one starts there.

Time is read from the injected clock by the caller; this module does arithmetic only. Not
thread-safe (owned by the emitter).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Window:
    start_ms: int
    end_ms: int


def aligned_start(now_ms: int, interval_ms: int) -> int:
    """The boundary at or before ``now_ms``: ``floor(now / I) * I``."""
    return now_ms - now_ms % interval_ms


class WindowSchedule:
    """The open window and when it closes. See the module docstring."""

    def __init__(self, interval_ms: int, now_ms: int) -> None:
        if interval_ms <= 0:
            raise ValueError(f"the metering interval must be positive, not {interval_ms} ms")
        self.interval_ms = interval_ms
        self._start_ms = aligned_start(now_ms, interval_ms)

    @property
    def open_since_ms(self) -> int:
        return self._start_ms

    def next_boundary_ms(self) -> int:
        """When the open window is due to close: the first boundary after its start."""
        return aligned_start(self._start_ms, self.interval_ms) + self.interval_ms

    def close_due(self, now_ms: int) -> Window | None:
        """The window to close when a boundary has passed (ending at the last one passed), else None."""
        if now_ms < self.next_boundary_ms():
            return None
        window = Window(self._start_ms, aligned_start(now_ms, self.interval_ms))
        self._start_ms = window.end_ms
        return window

    def close_early(self, now_ms: int) -> Window:
        """Close the open window at ``now_ms`` (clean shutdown); the next one starts there.

        A clock that went backwards gives an empty window rather than a negative one.
        """
        window = Window(self._start_ms, max(now_ms, self._start_ms))
        self._start_ms = window.end_ms
        return window
