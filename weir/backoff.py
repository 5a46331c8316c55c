"""Exponential backoff, stated once for the SDK's retries, the control plane's jobs and `make up`'s restarts.

Each caller keeps its own loop, clock and stop condition (a retried call, a Celery countdown,
a supervisor's wait that a stop interrupts); what they share is the delay itself: ``first``
doubled once per earlier attempt, never above ``longest``. The doublings are capped so that a
caller counting failures for days never computes a float from an enormous integer.
"""

from __future__ import annotations

MAX_DOUBLINGS = 30  # 2**30 times any positive first delay is past every cap in use


def exponential_backoff(first: float, attempt: int, longest: float) -> float:
    """Seconds (or whatever unit ``first`` is in) to wait before retry number ``attempt``
    (0 = the first retry): ``first * 2**attempt``, at most ``longest``; a negative attempt counts as 0."""
    return min(first * (1 << min(max(attempt, 0), MAX_DOUBLINGS)), longest)
