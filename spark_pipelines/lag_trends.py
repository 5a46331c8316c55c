"""Beyond Burrow: how fast a group-partition's lag moves, when it catches up, and when retention
deletes what it has not read yet. Pure functions over one window; the evaluator
(:mod:`spark_pipelines.lag_book`) calls them for every group-partition it evaluates.

- :func:`lag_rate`: records per second the lag grows (> 0) or shrinks (< 0), the least-squares
  slope of the lag over the window: each commit's lag at its time, plus the current lag now.
  None with fewer than two known points or when they all share one instant.
- :func:`catch_up_seconds`: 0 without lag; lag / -rate while the lag shrinks; None (never, at
  this rate) while it grows or holds.
- :func:`retention_seconds`: until retention deletes the group's next unconsumed record. Time
  retention deletes a segment once its newest record is ``retention.ms`` old, so the next
  unconsumed record (timestamp ``t``) is gone by ``t + retention.ms`` at the latest; that
  bound is what is reported (it may go a segment later, never earlier than the bound says
  for a record alone in its segment). 0 once the committed offset is below the log start
  (records never read were deleted). None without time retention (``retention.ms`` -1) or
  without the record's timestamp.
- :func:`retention_status`: ``LOST`` (below the log start), ``AT_RISK`` (lagging, and retention
  comes within ``horizon_seconds``, or before the group catches up at its current rate), else
  ``OK`` (a group that is not catching up becomes AT_RISK ``horizon_seconds`` before the
  loss). The alert fires on AT_RISK, before data is lost, not after.
"""

from __future__ import annotations

from collections.abc import Sequence

RETENTION_OK = "OK"
RETENTION_AT_RISK = "AT_RISK"
RETENTION_LOST = "LOST"
RETENTION_STATUSES = (RETENTION_OK, RETENTION_AT_RISK, RETENTION_LOST)
DEFAULT_RISK_HORIZON_SECONDS = 3600.0


def lag_rate(points: Sequence[tuple[int, int]]) -> float | None:
    """Records per second over (time_ms, lag) ``points`` (any order): the least-squares slope."""
    count = len(points)
    if count < 2:
        return None
    origin = points[0][0]  # times relative to the first point keep the sums small
    sum_t = sum_lag = sum_tt = sum_tl = 0.0
    for time_ms, lag in points:
        t = time_ms - origin
        sum_t += t
        sum_lag += lag
        sum_tt += t * t
        sum_tl += t * lag
    spread = sum_tt - sum_t * sum_t / count
    if spread <= 0:
        return None
    return (sum_tl - sum_t * sum_lag / count) / spread * 1000.0


def catch_up_seconds(current_lag: int, rate: float | None) -> float | None:
    """Seconds until the lag reaches 0 at ``rate`` (see the module docstring)."""
    if current_lag <= 0:
        return 0.0
    if rate is None or rate >= 0:
        return None
    return current_lag / -rate


def retention_seconds(
    *, committed_offset: int, log_start_offset: int | None, next_record_timestamp_ms: int | None, retention_ms: int | None, now_ms: int
) -> float | None:
    """Seconds until retention deletes the next unconsumed record (see the module docstring)."""
    if log_start_offset is not None and committed_offset < log_start_offset:
        return 0.0
    if retention_ms is None or retention_ms < 0 or next_record_timestamp_ms is None:
        return None
    return max((next_record_timestamp_ms + retention_ms - now_ms) / 1000.0, 0.0)


def retention_status(
    *, offset_lag: int, committed_offset: int, log_start_offset: int | None, seconds_left: float | None, catch_up: float | None, horizon_seconds: float
) -> str:
    """LOST, AT_RISK or OK (see the module docstring)."""
    if log_start_offset is not None and committed_offset < log_start_offset:
        return RETENTION_LOST
    if offset_lag <= 0 or seconds_left is None:
        return RETENTION_OK
    if seconds_left <= horizon_seconds or (catch_up is not None and catch_up >= seconds_left):
        return RETENTION_AT_RISK
    return RETENTION_OK
