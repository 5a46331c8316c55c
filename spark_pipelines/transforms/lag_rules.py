"""Burrow's consumer status rules over one partition's window of commits, as plain functions.

LinkedIn's Burrow (github.com/linkedin/Burrow) judges a consumer without thresholds: it keeps
the last ``intervals`` (default 10) commits of each group and partition, each with the lag
the partition had when the commit arrived, and evaluates that sliding window against a ring
of the partition's recent end offsets (one per offset refresh, as many as ``intervals``). The
functions follow current Burrow (v1.3.7 and later: ``core/internal/evaluator/caching.go``,
``calculatePartitionStatus`` and the rules it calls, same names in snake case, with the
rewind rule of Burrow pull request 716) and the storage rule of
``core/internal/storage/inmemory.go`` (``addConsumerOffset``, ``mergeFrequentCommitIntoPrevious``).
This is the ONE implementation: the continuous evaluator (:mod:`spark_pipelines.lag_book`)
calls it, and ``tests/spark_pipelines/test_lag_rules_table.py`` runs it beside the rules as
Burrow documents them.

Evaluation (:func:`calculate_partition_status`), for a window ordered oldest first, in
Burrow's order; "lag" below means lag above ``allowed_lag`` (0 by default: any lag):

1. the current lag (latest end offset - last committed offset, never below 0) is none: OK;
2. STOP when :func:`check_if_offsets_stopped` (the time since the last commit is longer than
   the window spans: now - last > last - first) and not :func:`check_if_recent_lag_zero` (no
   end offset of the ring at or below the last commit);
3. REWIND when :func:`check_if_offsets_rewind`: an offset lower than the one before it from
   which the consumer has not *recovered* (no later commit of the window reached the highest
   offset committed before the rewind). Checked before the zero-lag rule, since a consumer
   caught up a minute ago can still rewind;
4. only when :func:`is_lag_always_not_zero` (no commit of the window had lag; unknown lags do
   not count): STALL (:func:`check_if_offsets_stalled`, every offset the same), else WARNING
   (:func:`check_if_lag_not_decreasing`, the known lags never decrease);
5. OK otherwise.

``allowed_lag`` (Weir's ``WEIR_LAG_ALLOWED_LAG``, Burrow's ``allowed-lag``): a lag of at most
this many records counts as no lag, in the current lag, the commits' lags and the ring's
recent-lag-zero test, so a consumer that always trails by a few in-flight records is OK.

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
  live in one ``__consumer_offsets`` partition read in offset order, so a commit not newer
  than the window's newest (by ``commit_order``, Burrow's ``Order``: the record's offset in
  ``__consumer_offsets``) is dropped. That is also Kafka's rule for a transactional commit
  made visible by its COMMIT marker after a later plain commit of the same key.
- Burrow drops a commit whose partition has no broker offset yet; the evaluator instead
  holds it until the partition's first end offset is observed and gives it the lag against
  that one (an upper bound: a new partition's first evaluation is never optimistic).
- Time is in milliseconds throughout (Burrow takes "now" in whole seconds).

Everything here is pure and thread-safe: no Spark, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

# The status names and their order are shared with the control plane's writer and gauges.
from log_formats.lag_statuses import (  # noqa: F401  (re-exported for the evaluator)
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


def _has_lag(lag: int, allowed_lag: int) -> bool:
    return lag > allowed_lag


def is_lag_always_not_zero(entries: Sequence[CommitEntry], allowed_lag: int = 0) -> bool:
    """Rule 1: False when some commit of the window had no lag (at most ``allowed_lag``); unknown lags do not count."""
    return not any(entry.lag is not None and not _has_lag(entry.lag, allowed_lag) for entry in entries)


def check_if_offsets_rewind(entries: Sequence[CommitEntry]) -> bool:
    """Rule 2 (Burrow PR 716): an offset lower than the one before it, not recovered from.

    Recovered: a commit at or after the rewind reached the highest offset committed before it.
    """
    offsets = [entry.offset for entry in entries]
    return any(offsets[index] < offsets[index - 1] and max(offsets[index:]) < max(offsets[:index]) for index in range(1, len(offsets)))


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


def check_if_recent_lag_zero(entries: Sequence[CommitEntry], broker_offsets: Sequence[int], allowed_lag: int = 0) -> bool:
    """True when a recent end offset of the ring is at (or within ``allowed_lag`` of) the last commit: caught up recently."""
    _require_entries(entries)
    last_offset = entries[-1].offset
    return any(not _has_lag(end_offset - last_offset, allowed_lag) for end_offset in broker_offsets)


def calculate_partition_status(entries: Sequence[CommitEntry], broker_offsets: Sequence[int], current_lag: int, now_ms: int, *, allowed_lag: int = 0) -> str:
    """Burrow's ``calculatePartitionStatus``: OK, WARNING, STOP, STALL or REWIND (see the module docstring).

    ``entries`` is the window oldest first (at least one); ``broker_offsets`` the ring of recent
    end offsets of the partition; ``current_lag`` >= 0.
    """
    _require_entries(entries)
    if allowed_lag < 0:
        raise LagRuleError(f"allowed-lag must not be negative, got {allowed_lag}")
    if not _has_lag(current_lag, allowed_lag):
        return OK
    if check_if_offsets_stopped(entries, now_ms) and not check_if_recent_lag_zero(entries, broker_offsets, allowed_lag):
        return STOP
    if check_if_offsets_rewind(entries):
        return REWIND
    if is_lag_always_not_zero(entries, allowed_lag):
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
    allowed_lag: int = 0,
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
    return calculate_partition_status(entries, broker_offsets, current_lag, now_ms, allowed_lag=allowed_lag)


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
