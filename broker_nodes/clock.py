"""Injected time. Storage, retention, flush policy and request purgatories read the clock
through this interface so that tests can move time without sleeping."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def milliseconds(self) -> int:
        """Wall-clock time in ms since the epoch (timestamps, retention)."""

    def monotonic(self) -> float:
        """Monotonic seconds (timeouts, intervals)."""


class SystemClock:
    """The real clock. Thread-safe."""

    def milliseconds(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that moves only when told to; for tests. Thread-safe."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._lock = threading.Lock()
        self._now_ms = start_ms
        self._monotonic = 1000.0

    def milliseconds(self) -> int:
        with self._lock:
            return self._now_ms

    def monotonic(self) -> float:
        with self._lock:
            return self._monotonic

    def advance(self, milliseconds: int) -> None:
        with self._lock:
            self._now_ms += milliseconds
            self._monotonic += milliseconds / 1000.0


SYSTEM_CLOCK = SystemClock()
