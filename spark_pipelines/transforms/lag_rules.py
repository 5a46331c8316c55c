"""Burrow's consumer status rules over one partition's window of commits, as plain functions.

LinkedIn's Burrow (github.com/linkedin/Burrow) judges a consumer without thresholds: it keeps
the last ``intervals`` (default 10) commits of each group and partition, each with the lag
the partition had when the commit arrived, and evaluates that sliding window. The functions
here follow ``core/internal/evaluator/caching.go`` (``calculatePartitionStatus`` and the
rules it calls, same names in snake case) and the storage rule of
``core/internal/storage/inmemory.go`` (``addConsumerOffset``, ``mergeFrequentCommitIntoPrevious``):

Evaluation (:func:`calculate_partition_status`), for a window ordered oldest first:

- the current lag (latest end offset - last committed offset, never below 0) is 0: OK;
- otherwise STOP when :func:`check_if_offsets_stopped` (the time since the last commit is
  longer than the window spans: now - last > last - first) and not
  :func:`check_if_recent_lag_zero` (no recent end offset at or below the last commit);
- otherwise, only when :func:`is_lag_always_not_zero` (no commit of the window had lag 0;
  unknown lags do not count), the first of: REWIND (:func:`check_if_offsets_rewind`, an
  offset lower than the one before), STALL (:func:`check_if_offsets_stalled`, every offset
  the same), WARNING (:func:`check_if_lag_not_decreasing`, the known lags never decrease);
- OK otherwise.

Burrow never gives a partition ERROR: ERROR is a group status (:func:`group_status`: the
worst partition status, with STOP, STALL and REWIND counted as ERROR). ``evaluatePartitionStatus``
also reports a partition OK while its window is less complete (filled slots / window size)
than ``minimum-complete`` (default 0: always evaluated).

Storage (:func:`store_commit`): a commit is appended to the window, dropping the oldest
beyond ``window_size``; but a commit that follows the window's newest by less than
``min_distance_ms`` (Burrow's ``min-distance``, default 0) replaces the newest instead,
keeping the newest's timestamp, so that frequent commits cannot push the whole window into a
few seconds while a consumer committing faster than min-distance still ages its window.

Deliberate differences, each because of how Weir hands over the commits:

- Burrow inserts commits that arrive out of order (its "backfill"); here one group's commits
  live in one ``__consumer_offsets`` partition read in offset order from a saved cursor, so
  a commit not newer than the window's newest (by ``commit_order``, Burrow's ``Order``: the
  record's offset in ``__consumer_offsets``) can only be a re-read and is dropped.
- Burrow drops a commit whose partition has no broker offset yet; here it is kept with an
  unknown lag (None), which the rules skip exactly as Burrow skips a nil lag.
- Time is in milliseconds throughout (Burrow takes "now" in whole seconds).

Everything here is pure and thread-safe: no Spark, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

# The status names and their order are shared with the control plane's writer and gauges.
from log_formats.lag_statuses import (  # noqa: F401  (re-exported: the lag transform imports them from here)
    ERROR,
    GROUP_STATUSES,
    OK,
    PARTITION_STATUSES,
    REWIND,
    SEVERITY,
    STALL,
    STOP,
    WARNING,
)

DEFAULT_WINDOW_SIZE = 10  # Burrow's storage.intervals default
DEFAULT_MIN_DISTANCE_MS = 0  # Burrow's storage.min-distance default (unset: 0 seconds)
DEFAULT_MINIMUM_COMPLETE = 0.0  # Burrow's evaluator.minimum-complete default (unset: 0)


class LagRuleError(ValueError):
    """Arguments a rule cannot work with (an empty window, a window size below 1...)."""

    retriable = False


@dataclass(frozen=True, slots=True)
class CommitEntry:
    """One slot of a window: Burrow's ``ConsumerOffset``.

    ``lag`` is the partition's lag when the commit arrived (end offset then - ``offset``, never
    below 0), None when no end offset was known; ``commit_order`` orders commits (the
    record's offset in ``__consumer_offsets``).
    """

    offset: int
    timestamp_ms: int
    commit_order: int
    lag: int | None


def _require_entries(entries: Sequence[CommitEntry]) -> None:
    if not entries:
        raise LagRuleError("a window to evaluate needs at least one commit")


# ---------------------------------------------------------------------- Burrow's rules


def is_lag_always_not_zero(entries: Sequence[CommitEntry]) -> bool:
    """Rule 1: False when some commit of the window had lag 0 (the period is OK); unknown lags do not count."""
    return not any(entry.lag is not None and entry.lag == 0 for entry in entries)


def check_if_offsets_rewind(entries: Sequence[CommitEntry]) -> bool:
    """Rule 2: a committed offset lower than the one before it (REWIND)."""
    return any(later.offset < earlier.offset for earlier, later in pairwise(entries))


def check_if_offsets_stopped(entries: Sequence[CommitEntry], now_ms: int) -> bool:
    """Rule 3: the time since the last commit exceeds the time the window spans (STOP)."""
    _require_entries(entries)
    first, last = entries[0].timestamp_ms, entries[-1].timestamp_ms
    return (now_ms - last) > (last - first)


def check_if_offsets_stalled(entries: Sequence[CommitEntry]) -> bool:
    """Rule 4: every commit of the window has the same offset (STALL; rule 1 has shown there is lag)."""
    return all(later.offset == earlier.offset for earlier, later in pairwise(entries))


def check_if_lag_not_decreasing(entries: Sequence[CommitEntry]) -> bool:
    """Rule 5: the known lags never decrease from one commit to the next (WARNING: the consumer is slow)."""
    known = [entry.lag for entry in entries if entry.lag is not None]
    return not any(later < earlier for earlier, later in pairwise(known))


def check_if_recent_lag_zero(entries: Sequence[CommitEntry], broker_offsets: Sequence[int]) -> bool:
    """True when a recent end offset is at or below the last commit: the consumer was caught up recently."""
    _require_entries(entries)
    last_offset = entries[-1].offset
    return any(end_offset <= last_offset for end_offset in broker_offsets)


def calculate_partition_status(entries: Sequence[CommitEntry], broker_offsets: Sequence[int], current_lag: int, now_ms: int) -> str:
    """Burrow's ``calculatePartitionStatus``: OK, WARNING, STOP, STALL or REWIND (see the module docstring).

    ``entries`` is the window oldest first (at least one); ``broker_offsets`` the recent end
    offsets of the partition; ``current_lag`` >= 0.
    """
    _require_entries(entries)
    if current_lag > 0:
        if check_if_offsets_stopped(entries, now_ms) and not check_if_recent_lag_zero(entries, broker_offsets):
            return STOP
        if is_lag_always_not_zero(entries):
            if check_if_offsets_rewind(entries):
                return REWIND
            if check_if_offsets_stalled(entries):
                return STALL
            if check_if_lag_not_decreasing(entries):
                return WARNING
    return OK


def evaluate_partition_status(
    entries: Sequence[CommitEntry],
    broker_offsets: Sequence[int],
    current_lag: int,
    now_ms: int,
    *,
    window_size: int = DEFAULT_WINDOW_SIZE,
    minimum_complete: float = DEFAULT_MINIMUM_COMPLETE,
) -> str:
    """Burrow's ``evaluatePartitionStatus``: OK for an empty window or one less complete than
    ``minimum_complete`` (filled slots / ``window_size``), else :func:`calculate_partition_status`."""
    if window_size < 1:
        raise LagRuleError(f"the window size must be at least 1, got {window_size}")
    if not entries:
        return OK
    complete = min(len(entries) / window_size, 1.0)
    if complete < minimum_complete:
        return OK
    return calculate_partition_status(entries, broker_offsets, current_lag, now_ms)


def group_status(partition_statuses: Sequence[str]) -> str:
    """Burrow's group status: the worst partition status, where STOP, STALL and REWIND count as ERROR; OK for none."""
    worst = max((SEVERITY[status] for status in partition_statuses), default=SEVERITY[OK])
    return ERROR if worst >= SEVERITY[ERROR] else next(status for status, rank in SEVERITY.items() if rank == worst)


# ---------------------------------------------------------------------- Burrow's storage rule


def lag_at(end_offset: int | None, committed_offset: int) -> int | None:
    """The lag a commit had against an end offset: never below 0 (Burrow: the broker offset it
    knows may be older than the commit); None when the end offset is unknown."""
    if end_offset is None:
        return None
    return max(end_offset - committed_offset, 0)


def store_commit(
    window: Sequence[CommitEntry], commit: CommitEntry, *, window_size: int = DEFAULT_WINDOW_SIZE, min_distance_ms: int = DEFAULT_MIN_DISTANCE_MS
) -> list[CommitEntry]:
    """The window (oldest first) after ``commit`` arrives; ``window`` itself is left unchanged.

    A commit not newer than the newest entry (by ``commit_order``) is a re-read: dropped. One
    less than ``min_distance_ms`` after the newest replaces it, keeping the newest's timestamp.
    Any other is appended and the oldest entries beyond ``window_size`` are dropped.
    """
    if window_size < 1:
        raise LagRuleError(f"the window size must be at least 1, got {window_size}")
    if min_distance_ms < 0:
        raise LagRuleError(f"min-distance must not be negative, got {min_distance_ms} ms")
    entries = list(window)
    if entries and commit.commit_order <= entries[-1].commit_order:
        return entries
    if entries and (commit.timestamp_ms - entries[-1].timestamp_ms) < min_distance_ms:
        entries[-1] = replace(commit, timestamp_ms=entries[-1].timestamp_ms)
        return entries
    entries.append(commit)
    return entries[-window_size:]
