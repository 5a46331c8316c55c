"""A fixed-rate schedule for the end-to-end scenario.

Record ``i`` is due at ``start + i / rate``. The sender sleeps until a record is due and stamps
the record with its *due* time, not with the time it was actually sent: when the sender falls
behind (a garbage collection, a slow call), the delay counts as latency instead of silently
vanishing from the measurement ("coordinated omission").
"""

from __future__ import annotations

import time
from collections.abc import Callable

NANOSECONDS_PER_SECOND = 1_000_000_000


class RatePacer:
    """Schedule of due times, in the nanoseconds of ``clock_ns`` (``time.monotonic_ns`` by default).

    The monotonic clock is system-wide on Linux, so a consumer in another process on the same
    machine can subtract a due time from its own reading. Not thread-safe: one sender owns it.
    """

    def __init__(self, rate_per_second: int, clock_ns: Callable[[], int] = time.monotonic_ns) -> None:
        if rate_per_second <= 0:
            raise ValueError(f"rate must be positive, got {rate_per_second}")
        self.rate_per_second = rate_per_second
        self._clock_ns = clock_ns
        self._start_ns = clock_ns()

    @property
    def start_ns(self) -> int:
        return self._start_ns

    def due_ns(self, index: int) -> int:
        """When record ``index`` (0-based) is due."""
        return self._start_ns + index * NANOSECONDS_PER_SECOND // self.rate_per_second

    def seconds_until_due(self, index: int) -> float:
        """How long the sender should wait before sending record ``index``; 0.0 when it is late."""
        remaining_ns = self.due_ns(index) - self._clock_ns()
        return remaining_ns / NANOSECONDS_PER_SECOND if remaining_ns > 0 else 0.0

    def records_in(self, seconds: float) -> int:
        """How many records the schedule holds in its first ``seconds``."""
        return max(1, int(round(seconds * self.rate_per_second)))
