"""The usage transforms on small inline DataFrames: parsing, duplicates, every aggregate,
windows on both sides of hour and day boundaries, tenants and topics kept apart.

Record values are written with the brokers' own codec (``log_formats.usage_records.encode``, the
binary encoding; ``encode_json`` for the JSON rows brokers wrote before), so a change of the
format on one side shows here.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from log_formats.usage_records import PartitionRow, TrafficRow, UsageRow, encode, encode_json
from spark_pipelines.transforms.usage import (
    AGGREGATE_COLUMNS,
    COPIES_COLUMN,
    RAW_COLUMNS,
    UNUSABLE_COLUMNS,
    UnknownGranularityError,
    bucket_starts,
    daily_usage,
    days_from_hours,
    deduplicate_usage_records,
    deduplicate_usage_rows,
    hourly_usage,
    parse_usage_records,
    usable_rows,
    usage_aggregates,
    usage_problems,
    usage_sums,
    valid_usage_rows,
    window_usage,
)

RECORDS_DDL = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
INTERVAL_MS = 60_000
DAY = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
DAY_MS = int(DAY.timestamp() * 1000)
HOUR_MS = 3_600_000
NEXT_DAY = dt.date(2026, 3, 2)
TRAFFIC_SUMS = ("bytes_in", "bytes_out", "records_in", "records_out", "produce_requests", "fetch_requests", "throttle_time_ms")


def traffic(
    window: int,
    *,
    tenant: str = "tn-a",
    topic: str = "orders",
    partition: int = 0,
    node: int = 1,
    incarnation: str = "i1",
    sequence: int | None = None,
    **counters: int,
) -> TrafficRow:
    """A traffic row of window number ``window`` (minutes since DAY) with ``counters`` (others 0)."""
    start = DAY_MS + window * INTERVAL_MS
    return TrafficRow(node, incarnation, window if sequence is None else sequence, start, start + INTERVAL_MS, tenant, topic, partition, **counters)


def partition(
    window: int,
    size: int,
    *,
    tenant: str = "tn-a",
    topic: str = "orders",
    number: int = 0,
    node: int = 1,
    incarnation: str = "i1",
    length_ms: int = INTERVAL_MS,
) -> PartitionRow:
    """A partition row of window number ``window`` reporting ``size`` bytes of log."""
    start = DAY_MS + window * INTERVAL_MS
    return PartitionRow(node, incarnation, window, start, start + length_ms, tenant, topic, number, size, 0, 10, 10, 0)


def records(spark: SparkSession, values: list[UsageRow | bytes]) -> DataFrame:
    """``__usage`` records as the weir source returns them, offsets 0.. in partition 0."""
    encoded = [value if isinstance(value, bytes) else encode(value) for value in values]
    return spark.createDataFrame([(None, value, "__usage", 0, offset, None, 0) for offset, value in enumerate(encoded)], RECORDS_DDL)


def usage_rows(spark: SparkSession, values: list[UsageRow | bytes]) -> DataFrame:
    return deduplicate_usage_rows(valid_usage_rows(parse_usage_records(records(spark, values))))


def sums(**given: int) -> dict[str, int]:
    return {name: given.get(name, 0) for name in TRAFFIC_SUMS}


def test_parse_reads_every_field_the_broker_codec_writes(spark: SparkSession) -> None:
    written = [
        traffic(1439, bytes_in=100, records_in=2, bytes_out=50, records_out=1, produce_requests=1, fetch_requests=3, throttle_time_ms=7),
        partition(2, 4096),
    ]
    parsed = parse_usage_records(records(spark, written))
    rows = {row["kind"]: row.asDict() for row in valid_usage_rows(parsed).collect()}
    assert usage_problems(parsed).count() == 0
    assert list(valid_usage_rows(parsed).columns) == [*RAW_COLUMNS, "date", "hour"]
    assert rows["traffic"] == {
        "schema": "weir.usage/1",
        "kind": "traffic",
        "node_id": 1,
        "incarnation": "i1",
        "sequence": 1439,
        "window_start_ms": DAY_MS + 1439 * INTERVAL_MS,
        "window_end_ms": DAY_MS + 1440 * INTERVAL_MS,
        "tenant_id": "tn-a",
        "topic": "orders",
        "partition": 0,
        "bytes_in": 100,
        "records_in": 2,
        "bytes_out": 50,
        "records_out": 1,
        "produce_requests": 1,
        "fetch_requests": 3,
        "throttle_time_ms": 7,
        "log_size_bytes": None,
        "log_start_offset": None,
        "log_end_offset": None,
        "high_watermark": None,
        "leader_epoch": None,
        "date": DAY.date(),  # the window starts at 23:59 and ends at midnight: the date of its start
        "hour": 23,  # and the hour of its start (the raw rows' second partition column)
    }
    assert rows["partition"]["log_size_bytes"] == 4096 and rows["partition"]["bytes_in"] is None and rows["partition"]["date"] == DAY.date()


def test_parse_names_the_record_and_the_problem_of_every_unusable_value(spark: SparkSession) -> None:
    good = json.loads(encode_json(traffic(0, bytes_in=1)))
    without_counter = {key: value for key, value in good.items() if key != "bytes_in"}
    partition_without_size = {key: value for key, value in json.loads(encode_json(partition(0, 5))).items() if key != "log_size_bytes"}
    values: list[UsageRow | bytes] = [
        traffic(0, bytes_in=1),
        b"not json at all",
        json.dumps({**good, "schema": "weir.usage/2"}).encode(),
        json.dumps({**good, "kind": "billing"}).encode(),
        json.dumps(without_counter).encode(),
        json.dumps({**good, "window_end_ms": good["window_start_ms"] - 1}).encode(),
        json.dumps(partition_without_size).encode(),
        json.dumps({**good, "incarnation": None}).encode(),
    ]
    parsed = parse_usage_records(records(spark, values))
    problems = {row["source_offset"]: row["problem"] for row in usage_problems(parsed).collect()}
    assert sorted(problems) == [1, 2, 3, 4, 5, 6, 7]
    assert "neither a binary row nor a JSON object" in problems[1]
    assert problems[2] == "unknown schema weir.usage/2"
    assert "billing" in problems[3]
    assert "bytes_in" in problems[4]
    assert "ends before it starts" in problems[5]
    assert "log_size_bytes" in problems[6]
    assert "identity" in problems[7]
    assert valid_usage_rows(parsed).count() == 1


def test_parse_names_the_problem_of_a_malformed_binary_row(spark: SparkSession) -> None:
    good = encode(traffic(0, bytes_in=1))
    values: list[UsageRow | bytes] = [
        good[:60],
        good + b"!",
        good[:1] + b"\x09" + good[2:],
        good[:-2] + b"\xc3\x28",  # the topic's last two bytes: not UTF-8
    ]
    parsed = parse_usage_records(records(spark, values))
    problems = {row["source_offset"]: (row["problem"], row["source_value"]) for row in usage_problems(parsed).collect()}
    assert sorted(problems) == [0, 1, 2, 3]
    assert problems[0][0] == "a binary row of 60 bytes is shorter than its 100-byte header"
    assert problems[1][0] == f"a binary row of {len(good) + 1} bytes, its header says {len(good)}"
    assert problems[2][0] == "kind is neither traffic nor partition: code 9"
    assert problems[3][0] == "topic of a binary row is not UTF-8"
    assert problems[1][1] == "0x" + (good + b"!").hex().upper()  # the bytes, as hex digits


def test_binary_and_json_rows_give_the_same_rows_and_buckets(spark: SparkSession) -> None:
    written: list[UsageRow] = [
        traffic(0, bytes_in=100, records_in=2, bytes_out=50, records_out=1, produce_requests=1, fetch_requests=3, throttle_time_ms=7),
        traffic(59, tenant="tn-é", topic="commandes", partition=3, node=2, bytes_in=2**40, records_out=5),
        traffic(61, bytes_in=9),
        partition(0, 4096),
        partition(61, 2**45, number=2),
        PartitionRow(3, "i3", 5, DAY_MS, DAY_MS + INTERVAL_MS, "tn-a", "orders", 1, 0, -1, -1, -1, -1),  # an empty log
    ]
    binary = records(spark, [encode(row) for row in written])
    as_json = records(spark, [encode_json(row) for row in written])
    # Half of each encoding in one batch too: a topic's records change encoding when its brokers are upgraded.
    mixed = records(spark, [encode(row) if index % 2 else encode_json(row) for index, row in enumerate(written)])
    expected_rows = deduplicate_usage_rows(valid_usage_rows(parse_usage_records(as_json)))
    assert expected_rows.count() == len(written)
    for frame in (binary, mixed):
        parsed = parse_usage_records(frame)
        assert usage_problems(parsed).count() == 0
        rows = deduplicate_usage_rows(valid_usage_rows(parsed))
        assertDataFrameEqual(rows, expected_rows)
        assertDataFrameEqual(hourly_usage(rows), hourly_usage(expected_rows))
        assertDataFrameEqual(daily_usage(rows), daily_usage(expected_rows))


def test_a_row_resent_in_the_other_encoding_is_still_one_row(spark: SparkSession) -> None:
    row = traffic(0, bytes_in=10, records_in=1)
    deduplicated = usage_rows(spark, [encode_json(row), encode(row)])
    assert [(found["bytes_in"], found["records_in"]) for found in deduplicated.collect()] == [(10, 1)]


def test_deduplication_keeps_one_row_per_identity(spark: SparkSession) -> None:
    resent = traffic(0, bytes_in=10, records_in=1)
    values: list[UsageRow | bytes] = [
        resent,
        resent,
        resent,  # a window re-sent twice after lost acknowledgements
        traffic(1, bytes_in=20, records_in=2),  # the next window: another sequence
        traffic(0, partition=1, bytes_in=40, records_in=4),  # another partition, same sequence
        traffic(0, incarnation="i2", bytes_in=80, records_in=8),  # the broker restarted: a new incarnation
        partition(0, 100),  # the same window as kind partition
    ]
    rows = usage_rows(spark, values)
    assert rows.count() == 5
    [hour] = hourly_usage(rows).collect()
    assert (hour["bytes_in"], hour["records_in"], hour["storage_bytes_peak"]) == (150, 15, 100)


def test_one_aggregation_deduplicates_valid_records_counts_every_record_and_keeps_each_unusable_one_apart(spark: SparkSession) -> None:
    resent = traffic(0, bytes_in=10, records_in=1)
    values: list[UsageRow | bytes] = [resent, b"not json", resent, partition(0, 100), b"not json", resent]
    parsed = parse_usage_records(records(spark, values))
    rows = deduplicate_usage_records(parsed)
    unusable = sorted(tuple(row) for row in rows.where(f"{UNUSABLE_COLUMNS[0]} IS NOT NULL").select(*UNUSABLE_COLUMNS, COPIES_COLUMN).collect())
    assert unusable == [(0, 1, 1), (0, 4, 1)]  # the same bad text twice is two records set aside
    assert rows.agg({COPIES_COLUMN: "sum"}).first()[0] == len(values)
    assertDataFrameEqual(usable_rows(rows), deduplicate_usage_rows(valid_usage_rows(parsed)))


def test_traffic_is_summed_per_tenant_and_topic_over_partitions_and_brokers(spark: SparkSession) -> None:
    values: list[UsageRow | bytes] = [
        traffic(0, partition=0, node=1, bytes_in=100, records_in=1, produce_requests=1),
        traffic(
            0,
            partition=1,
            node=2,
            incarnation="j1",
            bytes_in=200,
            records_in=2,
            produce_requests=1,
            bytes_out=300,
            records_out=3,
            fetch_requests=2,
            throttle_time_ms=5,
        ),
        traffic(5, partition=0, node=1, bytes_out=1000, records_out=10, fetch_requests=4),
        traffic(0, topic="payments", bytes_in=7, records_in=1, produce_requests=1),
        traffic(0, tenant="tn-b", bytes_in=11, records_in=1, produce_requests=1),  # another tenant's topic of the same name
    ]
    hourly = hourly_usage(usage_rows(spark, values)).select("tenant_id", "topic", "bucket_start_ms", *TRAFFIC_SUMS)
    assertDataFrameEqual(
        hourly,
        [
            Row(
                tenant_id="tn-a",
                topic="orders",
                bucket_start_ms=DAY_MS,
                **sums(bytes_in=300, records_in=3, produce_requests=2, bytes_out=1300, records_out=13, fetch_requests=6, throttle_time_ms=5),
            ),
            Row(tenant_id="tn-a", topic="payments", bucket_start_ms=DAY_MS, **sums(bytes_in=7, records_in=1, produce_requests=1)),
            Row(tenant_id="tn-b", topic="orders", bucket_start_ms=DAY_MS, **sums(bytes_in=11, records_in=1, produce_requests=1)),
        ],
    )


def test_windows_fall_into_the_hour_and_day_of_their_start(spark: SparkSession) -> None:
    values: list[UsageRow | bytes] = [
        traffic(59, bytes_in=1, records_in=1),  # 00:59-01:00
        traffic(60, bytes_in=2, records_in=1),  # 01:00-01:01
        traffic(1439, bytes_in=4, records_in=1),  # 23:59-24:00
        traffic(1440, bytes_in=8, records_in=1),  # 00:00 of the next day
    ]
    rows = usage_rows(spark, values)
    hourly = hourly_usage(rows).select("bucket_start_ms", "date", "bytes_in", "records_in")
    assertDataFrameEqual(
        hourly,
        [
            Row(bucket_start_ms=DAY_MS, date=DAY.date(), bytes_in=1, records_in=1),
            Row(bucket_start_ms=DAY_MS + HOUR_MS, date=DAY.date(), bytes_in=2, records_in=1),
            Row(bucket_start_ms=DAY_MS + 23 * HOUR_MS, date=DAY.date(), bytes_in=4, records_in=1),
            Row(bucket_start_ms=DAY_MS + 24 * HOUR_MS, date=NEXT_DAY, bytes_in=8, records_in=1),
        ],
    )
    daily = daily_usage(rows).select("bucket_start_ms", "date", "bytes_in", "records_in")
    assertDataFrameEqual(
        daily,
        [
            Row(bucket_start_ms=DAY_MS, date=DAY.date(), bytes_in=7, records_in=3),
            Row(bucket_start_ms=DAY_MS + 24 * HOUR_MS, date=NEXT_DAY, bytes_in=8, records_in=1),
        ],
    )
    assert sorted(row["bucket_start_ms"] for row in bucket_starts(rows, "day").collect()) == [DAY_MS, DAY_MS + 24 * HOUR_MS]
    assert sorted(row["bucket_start_ms"] for row in bucket_starts(rows, "hour").collect()) == [
        DAY_MS,
        DAY_MS + HOUR_MS,
        DAY_MS + 23 * HOUR_MS,
        DAY_MS + 24 * HOUR_MS,
    ]


def test_storage_is_the_topic_size_per_window_averaged_and_peaked_over_the_bucket(spark: SparkSession) -> None:
    values: list[UsageRow | bytes] = [
        partition(0, 100, number=0),
        partition(0, 50, number=1),  # window 0: 150
        partition(1, 130, number=0),
        partition(1, 80, number=1),  # window 1: 210
        partition(2, 301, number=0),  # window 2: 301 (partition 1's leader did not report)
        partition(60, 1000, number=0),  # 01:00: the next hour
        partition(0, 9, tenant="tn-b"),  # another tenant's topic of the same name
    ]
    windows = window_usage(usage_rows(spark, values))
    hourly = usage_aggregates(windows, "hour").select("tenant_id", "bucket_start_ms", "storage_bytes_avg", "storage_bytes_peak")
    assertDataFrameEqual(
        hourly,
        [
            Row(tenant_id="tn-a", bucket_start_ms=DAY_MS, storage_bytes_avg=220, storage_bytes_peak=301),  # (150+210+301)/3 = 220.33
            Row(tenant_id="tn-a", bucket_start_ms=DAY_MS + HOUR_MS, storage_bytes_avg=1000, storage_bytes_peak=1000),
            Row(tenant_id="tn-b", bucket_start_ms=DAY_MS, storage_bytes_avg=9, storage_bytes_peak=9),
        ],
    )
    daily = usage_aggregates(windows, "day").select("tenant_id", "storage_bytes_avg", "storage_bytes_peak")
    # The day's mean is over its windows (150, 210, 301, 1000), not over the hours' means.
    assertDataFrameEqual(
        daily, [Row(tenant_id="tn-a", storage_bytes_avg=415, storage_bytes_peak=1000), Row(tenant_id="tn-b", storage_bytes_avg=9, storage_bytes_peak=9)]
    )
    # The job rolls a day up from its stored hours: the same figures as from the windows.
    assertDataFrameEqual(days_from_hours(usage_sums(windows, "hour")).select(*AGGREGATE_COLUMNS), usage_aggregates(windows, "day"))


def test_a_partition_reported_by_two_leaders_in_one_window_counts_once(spark: SparkSession) -> None:
    values: list[UsageRow | bytes] = [
        partition(0, 100, number=0, node=1),  # the old leader's last report
        partition(0, 120, number=0, node=2, incarnation="j1"),  # the new leader's, same window
        partition(0, 40, number=1, node=2, incarnation="j1"),
    ]
    [hour] = hourly_usage(usage_rows(spark, values)).collect()
    assert (hour["storage_bytes_avg"], hour["storage_bytes_peak"]) == (160, 160)
    assert hour["partition_hours"] == pytest.approx(2 * INTERVAL_MS / HOUR_MS)


def test_partition_hours_are_distinct_partition_windows_times_their_length(spark: SparkSession) -> None:
    full_hour = [partition(window, 10, number=number) for window in range(60) for number in range(3)]
    early_end = partition(60, 10, number=0, length_ms=30_000)  # the last window before a clean shutdown
    rows = usage_rows(spark, [*full_hour, early_end])
    hourly = {row["bucket_start_ms"]: row["partition_hours"] for row in hourly_usage(rows).collect()}
    assert hourly == {DAY_MS: pytest.approx(3.0), DAY_MS + HOUR_MS: pytest.approx(30 / 3600)}
    [day] = daily_usage(rows).collect()
    assert day["partition_hours"] == pytest.approx(3.0 + 30 / 3600)


def test_topics_with_only_traffic_or_only_storage_get_zeros_for_the_rest(spark: SparkSession) -> None:
    values: list[UsageRow | bytes] = [traffic(0, topic="busy", bytes_in=5, records_in=1), partition(0, 77, topic="idle")]
    hourly = hourly_usage(usage_rows(spark, values)).select(*AGGREGATE_COLUMNS).drop("bucket_start", "date")
    assertDataFrameEqual(
        hourly,
        [
            Row(
                tenant_id="tn-a",
                topic="busy",
                bucket_start_ms=DAY_MS,
                **sums(bytes_in=5, records_in=1),
                storage_bytes_avg=0,
                storage_bytes_peak=0,
                partition_hours=0.0,
            ),
            Row(
                tenant_id="tn-a",
                topic="idle",
                bucket_start_ms=DAY_MS,
                **sums(),
                storage_bytes_avg=77,
                storage_bytes_peak=77,
                partition_hours=INTERVAL_MS / HOUR_MS,
            ),
        ],
    )


def test_buckets_and_dates_are_utc_whatever_the_session_time_zone(spark: SparkSession) -> None:
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")  # UTC+05:30: 23:59 UTC is the next day there
    try:
        rows = usage_rows(spark, [traffic(1439, bytes_in=1, records_in=1)])
        [raw] = rows.select("date").collect()
        [day] = daily_usage(rows).select("bucket_start_ms", "date").collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    assert (raw["date"], day["bucket_start_ms"], day["date"]) == (DAY.date(), DAY_MS, DAY.date())


def test_unknown_granularity_is_refused_by_name(spark: SparkSession) -> None:
    rows = usage_rows(spark, [traffic(0, bytes_in=1)])
    with pytest.raises(UnknownGranularityError, match="'week'"):
        usage_aggregates(window_usage(rows), "week")  # type: ignore[arg-type]
