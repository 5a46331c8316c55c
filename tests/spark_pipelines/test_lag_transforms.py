"""The lag transforms on small inline DataFrames: Burrow's rules one by one, its storage rule,
lag at commit, time lag, retention risk and the group roll-up."""

from __future__ import annotations

import pytest
from pyspark.sql import Row

from log_formats.offset_commit_records import OffsetAndMetadata, OffsetCommitKey, encode_offset_commit_key, encode_offset_commit_value
from spark_pipelines.transforms import lag
from spark_pipelines.transforms.lag_rules import (
    ERROR,
    OK,
    REWIND,
    STALL,
    STOP,
    WARNING,
    CommitEntry,
    LagRuleError,
    evaluate_partition_status,
    group_status,
    store_commit,
)

TENANT = "tn-a1"
NOW_MS = 10_000_000
SECOND = 1000


def window_rows(group: str, topic: str, entries: list[tuple[int, int, int | None]], partition: int = 0) -> list[Row]:
    """Window slots from (offset, timestamp_ms, lag_at_commit), oldest first."""
    last = max(timestamp for _, timestamp, _ in entries)
    return [
        Row(
            tenant_id=TENANT,
            group=group,
            topic=topic,
            partition=partition,
            slot=slot,
            committed_offset=offset,
            commit_timestamp_ms=timestamp,
            commit_order=100 + slot,
            lag_at_commit=lag_value,
            last_commit_ms=last,
        )
        for slot, (offset, timestamp, lag_value) in enumerate(entries)
    ]


def recent(offsets: list[int], lags: list[int | None]) -> list[tuple[int, int, int | None]]:
    """Commits 10 s apart ending 10 s before now: the window spans more than the time since, so not stopped."""
    count = len(offsets)
    return [(offset, NOW_MS - (count - index) * 10 * SECOND, lag_value) for index, (offset, lag_value) in enumerate(zip(offsets, lags))]


def stale(offsets: list[int], lags: list[int | None]) -> list[tuple[int, int, int | None]]:
    """Commits 10 s apart, the last 90 s ago: longer than the window spans, so stopped."""
    count = len(offsets)
    return [(offset, NOW_MS - 90 * SECOND - (count - 1 - index) * 10 * SECOND, lag_value) for index, (offset, lag_value) in enumerate(zip(offsets, lags))]


def offsets_row(topic: str, end: int | None, log_start: int | None = 0, partition: int = 0) -> Row:
    return Row(tenant_id=TENANT, topic=topic, partition=partition, end_offset=end, log_start_offset=log_start)


def end_offset_rows(topic: str, ends: list[int], partition: int = 0) -> list[Row]:
    return [
        Row(tenant_id=TENANT, topic=topic, partition=partition, observed_at_ms=NOW_MS - index * 60 * SECOND, end_offset=end) for index, end in enumerate(ends)
    ]


def by_group(rows: list[Row]) -> dict[str, dict]:
    return {row["group"]: row.asDict() for row in rows}


# ---------------------------------------------------------------------- Burrow's evaluation rules


# (group and topic, window, end offset now, recent end offsets, expected status, expected offset lag)
RULE_CASES = [
    ("caught-up", recent([10, 20, 30], [5, 5, 5]), 30, [30], OK, 0),  # current lag 0: never in error
    ("had-zero-lag", recent([10, 20, 30], [5, 0, 5]), 40, [40], OK, 10),  # rule 1: zero lag in the window
    ("rewind", recent([10, 30, 20], [5, 5, 5]), 40, [40], REWIND, 20),  # rule 2
    ("stopped", stale([10, 20], [5, 5]), 40, [40], STOP, 20),  # rule 3
    ("stopped-rewound", stale([30, 20], [5, 5]), 40, [40], STOP, 20),  # STOP is checked before REWIND
    ("stopped-but-caught-up-recently", stale([10, 20], [5, 5]), 40, [40, 20], WARNING, 20),  # recent lag zero delays STOP
    ("stall", recent([20, 20, 20], [5, 6, 7]), 40, [40], STALL, 20),  # rule 4
    ("slow", recent([10, 20, 30], [5, 6, 6]), 40, [40], WARNING, 10),  # rule 5: lag never decreases
    ("recovering", recent([10, 20, 30], [9, 7, 5]), 40, [40], OK, 10),
    ("unknown-lags-skipped", recent([10, 20, 30], [None, 9, 5]), 40, [40], OK, 10),  # nil lags are skipped...
    ("only-unknown-lags", recent([10, 20, 30], [None, None, None]), 40, [40], WARNING, 10),  # ...so none proves a decrease
    ("single-old-commit", [(10, NOW_MS - 5 * SECOND, 3)], 20, [20], STOP, 10),  # one commit spans 0 s
    ("committed-past-end", recent([10, 20, 30], [5, 6, 7]), 25, [25], OK, 0),  # lag never below 0
]


def test_partition_status_follows_each_of_burrows_rules(spark) -> None:
    windows, offsets, history = [], [], []
    for name, entries, end, broker_offsets, _, _ in RULE_CASES:
        windows += window_rows(name, name, entries)
        offsets.append(offsets_row(name, end))
        history += end_offset_rows(name, broker_offsets)
    result = lag.partition_lag(
        spark.createDataFrame(windows, lag.WINDOW_SCHEMA),
        spark.createDataFrame(offsets, lag.PARTITION_OFFSETS_SCHEMA),
        spark.createDataFrame(history, lag.END_OFFSET_SCHEMA),
        now_ms=NOW_MS,
    )
    rows = by_group(result.collect())
    assert {name: (rows[name]["status"], rows[name]["offset_lag"]) for name in rows} == {
        name: (status, offset_lag) for name, _, _, _, status, offset_lag in RULE_CASES
    }
    assert rows["rewind"]["committed_offset"] == 20 and rows["rewind"]["end_offset"] == 40 and rows["rewind"]["log_start_offset"] == 0


def test_partition_without_end_offset_has_lag_minus_one_and_is_ok(spark) -> None:
    windows = window_rows("g", "gone", stale([10, 20], [5, 5]))
    result = lag.partition_lag(
        spark.createDataFrame(windows, lag.WINDOW_SCHEMA),
        spark.createDataFrame([offsets_row("gone", None, None)], lag.PARTITION_OFFSETS_SCHEMA),
        spark.createDataFrame([], lag.END_OFFSET_SCHEMA),
        now_ms=NOW_MS,
    )
    [row] = result.collect()
    assert (row["offset_lag"], row["end_offset"], row["log_start_offset"], row["status"]) == (-1, -1, -1, OK)


def test_incomplete_window_is_ok_below_minimum_complete() -> None:
    stalled = [CommitEntry(20, NOW_MS - 20 * SECOND, 1, 5), CommitEntry(20, NOW_MS - 10 * SECOND, 2, 6)]
    assert evaluate_partition_status(stalled, [40], 20, NOW_MS, window_size=10, minimum_complete=0.0) == STALL
    assert evaluate_partition_status(stalled, [40], 20, NOW_MS, window_size=10, minimum_complete=0.5) == OK
    assert evaluate_partition_status([], [40], 20, NOW_MS) == OK
    with pytest.raises(LagRuleError):
        evaluate_partition_status(stalled, [40], 20, NOW_MS, window_size=0)


def test_group_status_counts_stop_stall_and_rewind_as_error() -> None:
    assert group_status([]) == OK
    assert group_status([OK, OK]) == OK
    assert group_status([OK, WARNING]) == WARNING
    for worst in (STOP, STALL, REWIND):
        assert group_status([WARNING, worst, OK]) == ERROR


# ---------------------------------------------------------------------- Burrow's storage rule


def test_store_commit_appends_merges_within_min_distance_and_drops_rereads() -> None:
    window = [CommitEntry(10, 1_000, 1, 4)]
    appended = store_commit(window, CommitEntry(20, 9_000, 2, 3), min_distance_ms=5_000)
    assert appended == [CommitEntry(10, 1_000, 1, 4), CommitEntry(20, 9_000, 2, 3)]
    merged = store_commit(appended, CommitEntry(25, 10_000, 3, 1), min_distance_ms=5_000)
    assert merged == [CommitEntry(10, 1_000, 1, 4), CommitEntry(25, 9_000, 3, 1)]  # the newest slot keeps its time
    assert store_commit(merged, CommitEntry(99, 99_000, 3, 0)) == merged  # order 3 is stored already
    assert window == [CommitEntry(10, 1_000, 1, 4)]  # never changed in place


def test_update_windows_keeps_the_newest_commits_merges_and_forgets_on_tombstones(spark) -> None:
    previous = window_rows("g", "orders", [(10, 1_000, 4)]) + window_rows("quiet", "orders", [(5, 1_000, 1)])
    commits = [
        # group g: 11 more commits 10 s apart (the oldest fall out of a window of 10), one 1 s after the last (merged),
        # and a re-read of order 100, already stored
        *[
            Row(
                tenant_id=TENANT,
                group="g",
                topic="orders",
                partition=0,
                committed_offset=20 + index,
                commit_timestamp_ms=11_000 + index * 10_000,
                commit_order=200 + index,
                lag_at_commit=7,
            )
            for index in range(11)
        ],
        Row(tenant_id=TENANT, group="g", topic="orders", partition=0, committed_offset=99, commit_timestamp_ms=112_000, commit_order=300, lag_at_commit=2),
        Row(tenant_id=TENANT, group="g", topic="orders", partition=0, committed_offset=1, commit_timestamp_ms=500, commit_order=100, lag_at_commit=2),
        # group deleted: a commit then a tombstone; group reborn: a tombstone then a commit
        Row(tenant_id=TENANT, group="deleted", topic="orders", partition=0, committed_offset=3, commit_timestamp_ms=5_000, commit_order=400, lag_at_commit=1),
        Row(
            tenant_id=TENANT,
            group="deleted",
            topic="orders",
            partition=0,
            committed_offset=None,
            commit_timestamp_ms=None,
            commit_order=401,
            lag_at_commit=None,
        ),
        Row(
            tenant_id=TENANT, group="reborn", topic="orders", partition=0, committed_offset=None, commit_timestamp_ms=None, commit_order=500, lag_at_commit=None
        ),
        Row(tenant_id=TENANT, group="reborn", topic="orders", partition=0, committed_offset=8, commit_timestamp_ms=6_000, commit_order=501, lag_at_commit=None),
    ]
    updated = lag.update_windows(
        spark.createDataFrame(previous, lag.WINDOW_SCHEMA), spark.createDataFrame(commits, lag.COMMIT_WITH_LAG_SCHEMA), window_size=10, min_distance_ms=5_000
    )
    slots: dict[str, list[tuple]] = {}
    for row in sorted(updated.collect(), key=lambda row: (row["group"], row["slot"])):
        slots.setdefault(row["group"], []).append(
            (row["committed_offset"], row["commit_timestamp_ms"], row["commit_order"], row["lag_at_commit"], row["last_commit_ms"])
        )
    assert set(slots) == {"g", "quiet", "reborn"}
    assert slots["quiet"] == [(5, 1_000, 100, 1, 1_000)]  # no new commit: unchanged
    assert slots["reborn"] == [(8, 6_000, 501, None, 6_000)]
    g = slots["g"]
    assert len(g) == 10
    # the old slot and commit 0 fell out; the last slot holds offset 99 at commit 10's time, with its own lag
    assert [entry[0] for entry in g] == [21, 22, 23, 24, 25, 26, 27, 28, 29, 99]
    assert g[-1] == (99, 111_000, 300, 2, 112_000)
    assert g[0] == (21, 21_000, 201, 7, 112_000)


def test_forget_partitions_drops_the_windows_of_deleted_topics_only(spark) -> None:
    windows = spark.createDataFrame(
        window_rows("g", "gone", [(1, 1_000, 0)]) + window_rows("g", "kept", [(2, 1_000, 0)]) + window_rows("g", "gone", [(3, 1_000, 0)], partition=1),
        lag.WINDOW_SCHEMA,
    )
    deleted = spark.createDataFrame([(TENANT, "gone", 0), ("tn-other", "kept", 0)], "tenant_id STRING, topic STRING, partition INT")
    assert sorted((row["topic"], row["partition"]) for row in lag.forget_partitions(windows, deleted).collect()) == [("gone", 1), ("kept", 0)]


# ---------------------------------------------------------------------- decoding


def test_decode_offset_records_tells_commits_tombstones_group_records_and_garbage_apart(spark) -> None:
    def key(group: str, topic: str, partition: int) -> bytes:
        return encode_offset_commit_key(OffsetCommitKey(group, topic, partition))

    value = encode_offset_commit_value(OffsetAndMetadata(42, 3, "", 1_700_000_000_000))
    records = [
        (key("tn-a1~billing", "tn-a1~orders", 2), value, 0, 10),
        (key("tn-a1~billing", "tn-a1~orders", 3), None, 0, 11),
        (b"\x00\x02\x00\x01g", b"members", 0, 12),  # classic group metadata (key version 2)
        (b"\x00\x05\x00\x01g\x00\x01m", b"\x00\x00", 1, 13),  # a KIP-848 member record (key version 5)
        (b"\x00\x01\x00", value, 1, 14),  # truncated key
        (key("standalone", "orders", 0), value, 1, 15),  # no tenant
    ]
    frame = spark.createDataFrame(records, "key binary, value binary, partition int, offset long")
    decoded = {row["source_offset"]: row.asDict() for row in lag.decode_offset_records(frame).collect()}
    assert {offset: row["kind"] for offset, row in decoded.items()} == {
        10: lag.KIND_COMMIT,
        11: lag.KIND_TOMBSTONE,
        12: lag.KIND_GROUP_RECORD,
        13: lag.KIND_GROUP_RECORD,
        14: lag.KIND_UNDECODABLE,
        15: lag.KIND_COMMIT,
    }
    assert "past the end" in decoded[14]["problem"]
    events = sorted(lag.commit_events(lag.decode_offset_records(frame)).collect(), key=lambda row: row["commit_order"])
    assert [row.asDict() for row in events] == [
        {
            "tenant_id": "tn-a1",
            "group": "billing",
            "topic": "orders",
            "partition": 2,
            "committed_offset": 42,
            "commit_timestamp_ms": 1_700_000_000_000,
            "commit_order": 10,
        },
        {
            "tenant_id": "tn-a1",
            "group": "billing",
            "topic": "orders",
            "partition": 3,
            "committed_offset": None,
            "commit_timestamp_ms": None,
            "commit_order": 11,
        },
    ]


# ---------------------------------------------------------------------- end offsets and lag at commit


def test_append_end_offsets_keeps_the_newest_observations_per_partition(spark) -> None:
    history = spark.createDataFrame(end_offset_rows("orders", [50, 40, 30]) + end_offset_rows("other", [7]), lag.END_OFFSET_SCHEMA)
    observed = spark.createDataFrame(
        [Row(tenant_id=TENANT, topic="orders", partition=0, observed_at_ms=NOW_MS + 60 * SECOND, end_offset=60)], lag.END_OFFSET_SCHEMA
    )
    kept = lag.append_end_offsets(history, observed, window_size=3).collect()
    assert sorted((row["topic"], row["end_offset"]) for row in kept) == [("orders", 40), ("orders", 50), ("orders", 60), ("other", 7)]


def test_lag_at_commit_interpolates_the_end_offset_at_the_commit_time(spark) -> None:
    history = [
        Row(tenant_id=TENANT, topic="orders", partition=0, observed_at_ms=60_000, end_offset=100),
        Row(tenant_id=TENANT, topic="orders", partition=0, observed_at_ms=120_000, end_offset=160),
    ]

    def commit(order: int, offset: int | None, timestamp: int | None, topic: str = "orders") -> Row:
        return Row(tenant_id=TENANT, group="g", topic=topic, partition=0, committed_offset=offset, commit_timestamp_ms=timestamp, commit_order=order)

    commits = [
        commit(1, 80, 90_000),  # halfway: end 130, lag 50
        commit(2, 90, 30_000),  # before the first observation: end 100
        commit(3, 200, 150_000),  # after the last: end 160; committed past it: lag 0
        commit(4, None, None),  # tombstone
        commit(5, 5, 90_000, topic="unobserved"),
    ]
    result = lag.lag_at_commit(spark.createDataFrame(commits, lag.COMMIT_SCHEMA), spark.createDataFrame(history, lag.END_OFFSET_SCHEMA))
    assert {row["commit_order"]: row["lag_at_commit"] for row in result.collect()} == {1: 50, 2: 10, 3: 0, 4: None, 5: None}


# ---------------------------------------------------------------------- time lag and retention


def partition_row(group: str, committed: int, end: int, log_start: int, offset_lag: int, status: str = OK, topic: str = "orders", partition: int = 0) -> Row:
    return Row(
        tenant_id=TENANT,
        group=group,
        topic=topic,
        partition=partition,
        committed_offset=committed,
        end_offset=end,
        log_start_offset=log_start,
        offset_lag=offset_lag,
        status=status,
        last_commit_ms=NOW_MS,
        next_offset=max(committed, log_start),
    )


def test_time_lag_is_the_age_of_the_next_unconsumed_record(spark) -> None:
    partitions = spark.createDataFrame(
        [
            partition_row("lagging", 10, 50, 0, 40),
            partition_row("other-group-same-offset", 10, 50, 0, 40),
            partition_row("behind-log-start", 3, 50, 20, 47, partition=1),
            partition_row("caught-up", 50, 50, 0, 0),
            partition_row("no-end-offset", 10, -1, -1, -1, partition=2),
            partition_row("not-fetched", 30, 50, 0, 20, partition=3),
        ]
    )
    requests = lag.time_lag_requests(partitions, limit=2).collect()
    assert [(row["partition"], row["offset"]) for row in requests] == [(1, 20), (0, 10)]  # largest lag first, shared offset once
    timestamps = spark.createDataFrame(
        [
            Row(tenant_id=TENANT, topic="orders", partition=0, offset=10, timestamp_ms=NOW_MS - 30 * SECOND),
            Row(tenant_id=TENANT, topic="orders", partition=1, offset=20, timestamp_ms=NOW_MS - 2 * SECOND),
        ],
        lag.RECORD_TIMESTAMP_SCHEMA,
    )
    result = {row["group"]: row["time_lag_seconds"] for row in lag.with_time_lag(partitions, timestamps, now_ms=NOW_MS).collect()}
    assert result == {"lagging": 30.0, "other-group-same-offset": 30.0, "behind-log-start": 2.0, "caught-up": 0.0, "no-end-offset": None, "not-fetched": None}


def test_retention_risk_flags_lost_records_and_the_oldest_part_of_the_log(spark) -> None:
    partitions = spark.createDataFrame(
        [
            partition_row("lost", 5, 1000, 100, 995),  # below the log start: already deleted
            partition_row("oldest-tenth", 150, 1000, 100, 850),  # 50 < 0.1 * 900
            partition_row("just-outside", 190, 1000, 100, 810),  # 90 = 0.1 * 900: not below
            partition_row("at-the-end", 1000, 1000, 1000, 0),  # nothing unread
            partition_row("unknown", 5, -1, -1, -1),
        ]
    )
    result = {row["group"]: row["retention_risk"] for row in lag.with_retention_risk(partitions, 0.1).collect()}
    assert result == {"lost": True, "oldest-tenth": True, "just-outside": False, "at-the-end": False, "unknown": False}
    with pytest.raises(ValueError):
        lag.with_retention_risk(partitions, 1.5)


# ---------------------------------------------------------------------- groups


def test_group_lag_rolls_up_burrows_group_status_and_the_lag_figures(spark) -> None:
    def row(group: str, partition: int, status: str, offset_lag: int, time_lag: float | None, risk: bool) -> Row:
        return Row(
            tenant_id=TENANT,
            group=group,
            topic="orders",
            partition=partition,
            status=status,
            offset_lag=offset_lag,
            time_lag_seconds=time_lag,
            retention_risk=risk,
        )

    partitions = spark.createDataFrame(
        [
            row("healthy", 0, OK, 0, 0.0, False),
            row("healthy", 1, OK, 3, 1.5, False),
            row("slow", 0, WARNING, 5, 4.0, False),
            row("slow", 1, OK, 9, None, True),
            row("broken", 0, WARNING, 50, 10.0, False),
            row("broken", 1, STALL, 7, 3.0, False),
            row("broken", 2, OK, -1, None, False),
            row("broken", 3, REWIND, 2, None, False),
        ]
    )
    groups = {row["group"]: row.asDict() for row in lag.group_lag(partitions).collect()}
    summary = {
        name: (
            g["status"],
            g["max_lag"],
            g["total_lag"],
            g["max_time_lag_seconds"],
            g["partition_count"],
            g["retention_risk"],
            g["worst_partition"],
            g["worst_status"],
        )
        for name, g in groups.items()
    }
    assert summary == {
        "healthy": (OK, 3, 3, 1.5, 2, False, 1, OK),  # worst of equals: the largest lag
        "slow": (WARNING, 9, 14, 4.0, 2, True, 0, WARNING),
        "broken": (ERROR, 50, 59, 10.0, 4, False, 3, REWIND),  # REWIND is worse than STALL; lag -1 is left out
    }
