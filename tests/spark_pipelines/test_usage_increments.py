"""The usage job's buckets over several runs are those of all the rows at once: windows
split across runs, a leader change reporting a partition twice, rows re-sent in a later run,
JSON rows beside binary ones; and a run over rows already stored adds nothing.

Calls the job's own code (``store_and_aggregate``) on inline records, without brokers or the
database (the writer is a function collecting the rows it is given).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.testing import assertDataFrameEqual

from log_formats.usage_records import PartitionRow, TrafficRow, UsageRow, encode, encode_json
from spark_pipelines.jobs.usage import UsagePaths, store_and_aggregate
from spark_pipelines.transforms.usage import daily_usage, deduplicate_usage_rows, hourly_usage, parse_usage_records, valid_usage_rows, window_usage

RECORDS_DDL = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
INTERVAL_MS = 60_000
ROLLUP = ("storage_bytes_sum", "storage_windows", "partition_ms")
DAY_MS = int(dt.datetime(2026, 3, 1, tzinfo=dt.UTC).timestamp() * 1000)


def traffic(node: int, window: int, partition: int, bytes_in: int, topic: str = "orders") -> TrafficRow:
    start = DAY_MS + window * INTERVAL_MS
    return TrafficRow(node, f"inc{node}", window, start, start + INTERVAL_MS, "tn-a", topic, partition, bytes_in=bytes_in, records_in=1, produce_requests=1)


def size(node: int, window: int, partition: int, log_size: int, topic: str = "orders") -> PartitionRow:
    start = DAY_MS + window * INTERVAL_MS
    return PartitionRow(node, f"inc{node}", window, start, start + INTERVAL_MS, "tn-a", topic, partition, log_size, 0, 5, 5, 0)


# Windows 58-61 straddle 01:00; node 2 takes partition 1 over in window 60 (both report it).
ROWS: list[UsageRow] = [
    *(traffic(1, window, 0, 100 + window) for window in (58, 59, 60, 61)),
    *(size(1, window, 0, 1000 * window) for window in (58, 59, 60, 61)),
    *(size(1, window, 1, 10 * window) for window in (58, 59, 60)),
    *(traffic(2, window, 1, 7 * window, "payments") for window in (59, 60, 61)),
    *(size(2, window, 1, 10 * window + 3) for window in (60, 61)),
]


def records(spark: SparkSession, rows: list[UsageRow], *, first_offset: int = 0, json_every: int = 0) -> DataFrame:
    values = [encode_json(row) if json_every and index % json_every == 0 else encode(row) for index, row in enumerate(rows)]
    return spark.createDataFrame([(None, value, "__usage", 0, first_offset + index, None, 0) for index, value in enumerate(values)], RECORDS_DDL)


class Runs:
    """The job's runs into one output directory, with the latest rows each bucket was written with."""

    def __init__(self, spark: SparkSession, root: Path) -> None:
        self.spark = spark
        self.paths = UsagePaths.under(root)
        self.database: dict[tuple[Any, ...], dict[str, Any]] = {}

    def run(self, frame: DataFrame) -> dict[str, Any]:
        def write_usage(granularity: str, rows: list[dict[str, Any]]) -> int:
            for row in rows:
                self.database[(granularity, row["tenant_id"], row["topic"], row["bucket_start"])] = row
            return len(rows)

        return store_and_aggregate(self.spark, frame, [0], self.paths, write_usage)

    def stored(self, name: str) -> list[tuple[Any, ...]]:
        return sorted((tuple(row) for row in self.spark.read.parquet(str(getattr(self.paths, name))).collect()), key=repr)


# Four runs of the job: under load more than the default 300 s (a timeout cutting a py4j call
# breaks the session for every later Spark test).
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_buckets_over_several_runs_are_those_of_all_the_rows_and_a_repeated_run_adds_nothing(spark: SparkSession, tmp_path: Path) -> None:
    # The runs' ranges cut broker windows in two (node 1's windows 58 and 59, node 2's 60), a
    # re-sent row arrives a run later, and some rows are still JSON (written before an upgrade).
    first, second, third = ROWS[:6], ROWS[6:14], ROWS[14:]
    split = Runs(spark, tmp_path / "split")
    split.run(records(spark, first, json_every=2))
    added = split.run(records(spark, [*second, ROWS[1]], first_offset=6))
    assert added["raw_rows_added"] == len(second), "the re-sent row of the first run is not stored again"
    split.run(records(spark, third, first_offset=15, json_every=3))

    # What the transforms give for all the rows at once.
    every_row = deduplicate_usage_rows(valid_usage_rows(parse_usage_records(records(spark, ROWS))))
    stored = {name: spark.read.parquet(str(getattr(split.paths, name))) for name in ("windows", "hourly", "daily")}
    assertDataFrameEqual(stored["windows"].drop("date", "hour"), window_usage(every_row))
    assertDataFrameEqual(stored["hourly"].drop(*ROLLUP), hourly_usage(every_row).drop("bucket_start_ms"))
    assertDataFrameEqual(stored["daily"].drop(*ROLLUP), daily_usage(every_row).drop("bucket_start_ms"))
    # Partition 1 of window 60, reported by both leaders, counts once (the larger report).
    windows = {row["window_start_ms"]: row for row in stored["windows"].where("topic = 'orders'").collect()}
    assert (windows[DAY_MS + 60 * INTERVAL_MS]["storage_bytes"], windows[DAY_MS + 60 * INTERVAL_MS]["partition_ms"]) == (60_000 + 603, 2 * INTERVAL_MS)
    assert len(split.database) == len(stored["hourly"].collect()) + len(stored["daily"].collect())

    before = {name: split.stored(name) for name in ("raw", "sent_windows", "windows", "hourly", "daily")}
    database = dict(split.database)
    again = split.run(records(spark, [*second, *third], first_offset=6))
    assert again["raw_rows_added"] == 0
    assert {name: split.stored(name) for name in before} == before
    assert split.database == database
