"""Weir's Burrow rules against Burrow's as its evaluator documents them, over a table of commit histories.

``burrow_status`` below restates current Burrow's ``calculatePartitionStatus``
(``core/internal/evaluator/caching.go``, v1.3.7 and later with pull request 716's rewind rule)
independently of :mod:`spark_pipelines.transforms.lag_rules`: its own loops over (offset,
timestamp, lag) tuples, Burrow's order of checks. Each row of the table is a window, a ring of
end offsets, a current lag and a time; both must give the row's expected status.
"""

from __future__ import annotations

import pytest

from spark_pipelines.transforms.lag_rules import CommitEntry, LagRuleError, calculate_partition_status, evaluate_partition_status, group_status, store_commit

Window = list[tuple[int, int, int | None]]  # (offset, timestamp_ms, lag at commit)


def burrow_status(window: Window, broker_offsets: list[int], current_lag: int, now_ms: int, allowed_lag: int = 0) -> str:
    """Burrow's documented evaluation (see the module docstring), written apart from Weir's."""
    if current_lag <= allowed_lag:
        return "OK"
    offsets = [offset for offset, _, _ in window]
    first_ts, last_ts = window[0][1], window[-1][1]
    stopped = (now_ms - last_ts) > (last_ts - first_ts)
    recent_zero = False
    for end in broker_offsets:
        if end - offsets[-1] <= allowed_lag:
            recent_zero = True
    if stopped and not recent_zero:
        return "STOP"
    if _unrecovered_rewind(offsets):
        return "REWIND"
    always_lagging = True
    for _, _, lag in window:
        if lag is not None and lag <= allowed_lag:
            always_lagging = False
    if always_lagging:
        if len(set(offsets)) == 1:
            return "STALL"
        if not _lag_ever_decreases(window):
            return "WARNING"
    return "OK"


def _unrecovered_rewind(offsets: list[int]) -> bool:
    for i in range(1, len(offsets)):
        if offsets[i] < offsets[i - 1]:
            high_before = max(offsets[:i])
            recovered = False
            for later in offsets[i:]:
                if later >= high_before:
                    recovered = True
            if not recovered:
                return True
    return False


def _lag_ever_decreases(window: Window) -> bool:
    previous = None
    for _, _, lag in window:
        if lag is not None:
            if previous is not None and lag < previous:
                return True
            previous = lag
    return False


def steady(offsets: list[int], lags: list[int | None], start_ms: int = 0, step_ms: int = 10_000) -> Window:
    return [(offset, start_ms + index * step_ms, lag) for index, (offset, lag) in enumerate(zip(offsets, lags))]


# (name, window, ring of end offsets, current lag, now, allowed lag, expected)
TABLE = [
    ("caught up now", steady([10, 20, 30], [5, 5, 5]), [30], 0, 25_000, 0, "OK"),
    ("lag shrinking", steady([10, 20, 30], [9, 6, 3]), [33], 3, 25_000, 0, "OK"),
    ("lag growing: slow consumer", steady([10, 20, 30], [3, 6, 9]), [39], 9, 25_000, 0, "WARNING"),
    ("lag flat counts as not decreasing", steady([10, 20, 30], [5, 5, 5]), [35], 5, 25_000, 0, "WARNING"),
    ("same offset with lag: stalled", steady([10, 10, 10], [3, 4, 5]), [15], 5, 25_000, 0, "STALL"),
    ("stopped committing with lag", steady([10, 20, 30], [3, 3, 3]), [40], 10, 90_000, 0, "STOP"),
    ("stopped but caught up recently (ring): not STOP", steady([10, 20, 30], [3, 3, 3]), [30, 31, 40], 10, 90_000, 0, "WARNING"),
    ("stopped, caught up recently, window had zero lag", steady([10, 20, 30], [3, 0, 3]), [30, 31, 40], 10, 90_000, 0, "OK"),
    ("one commit with lag, time passed: STOP", steady([10], [4]), [14], 4, 1, 0, "STOP"),
    ("one commit with lag, no time passed: a single offset is a stall", steady([10], [4]), [14], 4, 0, 0, "STALL"),
    ("rewind after zero lag (PR 716)", steady([10, 20, 30, 20], [0, 0, 0, 10]), [40], 20, 35_000, 0, "REWIND"),
    ("rewind recovered: usual rules", steady([20, 30, 20, 30], [0, 0, 10, 15]), [45], 15, 35_000, 0, "OK"),
    ("rewind recovered, lag growing", steady([20, 30, 20, 31], [1, 2, 10, 15]), [46], 15, 35_000, 0, "WARNING"),
    ("rewind with lag throughout", steady([30, 25, 28], [2, 8, 9]), [37], 9, 25_000, 0, "REWIND"),
    ("STOP wins over REWIND", steady([30, 25], [2, 8]), [40], 15, 60_000, 0, "STOP"),
    ("unknown lags are skipped", steady([10, 20, 30], [None, 6, None]), [36], 6, 25_000, 0, "WARNING"),
    ("all lags unknown, offsets move", steady([10, 20, 30], [None, None, None]), [36], 6, 25_000, 0, "WARNING"),
    ("allowed lag: within it is OK", steady([10, 20, 30], [3, 4, 5]), [35], 5, 25_000, 5, "OK"),
    ("allowed lag: commits within it", steady([10, 20, 30], [2, 9, 9]), [39], 9, 25_000, 2, "OK"),
    ("allowed lag: ring within it holds off STOP", steady([10, 20, 30], [9, 9, 9]), [32, 45], 15, 90_000, 2, "WARNING"),
    ("allowed lag: ring beyond it, STOP", steady([10, 20, 30], [9, 9, 9]), [33, 45], 15, 90_000, 2, "STOP"),
    ("allowed lag exceeded: WARNING", steady([10, 20, 30], [3, 6, 9]), [39], 9, 25_000, 2, "WARNING"),
]


@pytest.mark.parametrize(("name", "window", "ring", "current_lag", "now_ms", "allowed_lag", "expected"), TABLE, ids=[row[0] for row in TABLE])
def test_weir_and_burrow_agree(name: str, window: Window, ring: list[int], current_lag: int, now_ms: int, allowed_lag: int, expected: str) -> None:
    entries = [CommitEntry(offset, timestamp, order, lag) for order, (offset, timestamp, lag) in enumerate(window)]
    assert burrow_status(window, ring, current_lag, now_ms, allowed_lag) == expected
    assert calculate_partition_status(entries, ring, current_lag, now_ms, allowed_lag=allowed_lag) == expected


def test_stop_follows_within_minutes_once_the_ring_has_moved_on() -> None:
    """Commits every 10 s then none: with a ring of the last 10 end offsets (one per 3 s refresh),
    the partition turns STOP once the window's span has passed and the ring no longer holds an
    end offset at the last commit, not after the ring's 30-minute-old values age out."""
    entries = [CommitEntry(100 + index * 10, index * 10_000, index, 0) for index in range(10)]  # caught up at every commit
    last_commit_ms = entries[-1].timestamp_ms
    ring_when_caught_up = [190] * 10
    assert calculate_partition_status(entries, ring_when_caught_up, 5, last_commit_ms + 100_000) == "OK"
    ring_after_producing_on = [195 + index for index in range(10)]  # 30 s of refreshes, all beyond the last commit
    assert calculate_partition_status(entries, ring_after_producing_on, 15, last_commit_ms + 91_000) == "STOP"


def test_minimum_complete_and_window_checks() -> None:
    entries = [CommitEntry(10, 0, 0, 5)]
    assert evaluate_partition_status(entries, [], 5, 1, window_size=10, minimum_complete=0.5) == "OK"
    assert evaluate_partition_status(entries, [], 5, 1, window_size=10, minimum_complete=0.1) == "STOP"
    with pytest.raises(LagRuleError, match="allowed-lag"):
        calculate_partition_status(entries, [], 5, 1, allowed_lag=-1)
    assert group_status(["OK", "REWIND"]) == "ERROR" and group_status(["OK", "WARNING"]) == "WARNING" and group_status([]) == "OK"


def test_storage_rule_drops_re_reads_and_merges_close_commits() -> None:
    window = store_commit([], CommitEntry(10, 1_000, 5, 0))
    assert store_commit(window, CommitEntry(12, 2_000, 5, 0)) == window  # same order: a re-read
    merged = store_commit(window, CommitEntry(12, 1_500, 6, 1), min_distance_ms=1_000)
    assert merged == [CommitEntry(12, 1_000, 6, 1)]
    full = []
    for order in range(12):
        full = store_commit(full, CommitEntry(order, order * 1_000, order, 0), window_size=10)
    assert [entry.offset for entry in full] == list(range(2, 12))
