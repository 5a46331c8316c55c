"""The usage job: new ``__usage`` records -> hourly and daily usage per tenant and topic, in
the control-plane database (``webapp.metering.writer.write_usage``) and in Parquet.

``python -m spark_pipelines.jobs.usage`` (what the launcher runs); tests call :func:`run`.
The figures are defined in :mod:`spark_pipelines.transforms.usage`. Under
``<output_dir>/usage/`` (``WEIR_PIPELINE_DIR``):

=====================  =================================================================
``raw/date=D/``        every usage row read, deduplicated by identity (D: UTC date of
                       the window start); the source of truth the buckets are computed from
``hourly/date=D/``     hour buckets of day D (``bucket_start`` UTC timestamps)
``daily/date=D/``      the day bucket of day D
``rejected/``          records that are not valid ``weir.usage/1`` rows, with their
                       ``__usage`` partition, offset, text and what is wrong (kept, counted
                       in the result as ``rejected``, never counted in a bucket)
=====================  =================================================================

One run, in this order:

1. Load the cursor (``load_state("usage")``): per ``__usage`` partition, the next offset to
   read (a partition it does not name is read from its log start).
2. Pin the end: ``resolve_offsets`` asks the brokers for every partition's end offset now.
   The run reads exactly ``[cursor, end)``, however much the brokers append meanwhile.
3. Read that range (``format("weir")``, internal token), parse it, set invalid records
   aside (``rejected/``), drop duplicates by identity.
4. Append to ``raw/`` the rows whose identity is not stored yet in their date partitions.
5. Recompute every hour and day bucket of the dates the rows READ in step 3 fall on, from
   ``raw/`` (all runs' rows of those dates).
6. Upsert the hour buckets the read rows fall in and the day buckets into the database;
   overwrite those dates' partitions of ``hourly/`` and ``daily/`` (dynamic overwrite).
7. Save the cursor: the pinned end.

Why a run that dies anywhere needs nothing but the next run:

- Until step 7 the saved cursor is the old one, so the next run reads the same records
  again (and perhaps more). Nothing is skipped.
- Step 4 adds only identities not stored yet, so reading records again adds nothing twice,
  whatever part of an earlier append reached the disk (Parquet files appear whole: each is
  written aside and renamed into place).
- Step 5 recomputes whole buckets from everything stored and never adds to a stored figure:
  a bucket whose rows arrive over several runs (several brokers' reports of a window, a
  window re-sent late) comes out right, and a repeated recomputation gives the same
  figures. The buckets recomputed are those of every row read, not only of the rows added,
  so a run that died after step 4 has its buckets computed by the next one.
- Step 6 upserts rows and replaces partitions: repeating it leaves the same state.
- The cursor moves last, once everything it covers is stored.

Precondition: one run at a time (the launcher keeps at most one RUNNING run per pipeline).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from log_formats.usage_records import USAGE_TOPIC
from spark_pipelines.jobs.entrypoint import run_job
from spark_pipelines.parquet_store import append_new_rows, in_values, overwrite_partitions, read_partitions
from spark_pipelines.read_range import Offsets, nothing_to_read, pending_range
from spark_pipelines.settings import PipelineSettings, internal_source_options
from spark_pipelines.source import resolve_offsets
from spark_pipelines.transforms.usage import (
    DATE_COLUMN,
    IDENTITY_COLUMNS,
    MILLISECONDS_PER_HOUR,
    RAW_COLUMNS,
    RAW_SCHEMA_DDL,
    deduplicate_usage_rows,
    parse_usage_records,
    usage_aggregates,
    usage_problems,
    valid_usage_rows,
    window_usage,
)
from webapp.metering import writer

PIPELINE = "usage"
STATE_VERSION = 1  # the shape of the saved state: {"version": 1, "offsets": {"__usage": {"0": 42}}}
REJECTED_SCHEMA_DDL = "source_partition INT, source_offset BIGINT, source_value STRING, problem STRING"
REJECTED_KEYS = ("source_partition", "source_offset")
# Up to this many rejected records are named in the result (all are in rejected/).
REJECTED_NAMED = 5
# Runtime settings the job's plans need, set on the session it is given.
SESSION_CONF = {
    # Timestamps as Parquet's standard TIMESTAMP(MICROS), not Spark's legacy INT96.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # Let adaptive execution size the shuffles under the persisted frames too (off by default):
    # otherwise every run writes spark.sql.shuffle.partitions (200) small files per date.
    "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
}
# Columns of the aggregates handed to the writer (bucket_start is rebuilt from the millis).
WRITER_COLUMNS = (
    "tenant_id",
    "topic",
    "bytes_in",
    "bytes_out",
    "records_in",
    "records_out",
    "produce_requests",
    "fetch_requests",
    "throttle_time_ms",
    "storage_bytes_avg",
    "storage_bytes_peak",
    "partition_hours",
)

WriteUsage = Callable[[str, list[dict[str, Any]]], int]  # webapp.metering.writer.write_usage


class InvalidUsageStateError(ValueError):
    """The saved state of the usage pipeline is not what this job writes; ``state`` is it."""

    def __init__(self, state: object, problem: str) -> None:
        super().__init__(f"the saved state of pipeline {PIPELINE!r} is unusable ({problem}): {json.dumps(state, default=str)[:500]}")
        self.state = state
        self.problem = problem


class MissingRawRowsError(RuntimeError):
    """The raw rows of dates just read are not found under ``raw/`` (removed while the job ran?)."""

    def __init__(self, raw: Path, dates: list[date]) -> None:
        super().__init__(f"no stored usage rows under {raw} for {', '.join(str(day) for day in dates)} right after storing them")
        self.raw = raw
        self.dates = dates


@dataclass(frozen=True)
class UsagePaths:
    """The job's Parquet datasets under ``<output_dir>/usage``."""

    root: Path

    @classmethod
    def under(cls, output_dir: Path) -> UsagePaths:
        return cls(Path(output_dir) / "usage")

    @property
    def raw(self) -> Path:
        return self.root / "raw"

    @property
    def hourly(self) -> Path:
        return self.root / "hourly"

    @property
    def daily(self) -> Path:
        return self.root / "daily"

    @property
    def rejected(self) -> Path:
        return self.root / "rejected"


def cursor_offsets(state: Mapping[str, Any]) -> Offsets:
    """The cursor of a saved state (``{}`` before the first run); InvalidUsageStateError when malformed."""
    if not state:
        return {}
    if state.get("version") != STATE_VERSION or not isinstance(state.get("offsets"), dict):
        raise InvalidUsageStateError(state, f"expected version {STATE_VERSION} with an 'offsets' object")
    offsets: Offsets = {}
    for topic, partitions in state["offsets"].items():
        if not isinstance(partitions, dict) or not all(
            str(partition).isdigit() and isinstance(offset, int) and offset >= 0 for partition, offset in partitions.items()
        ):
            raise InvalidUsageStateError(state, f"offsets of {topic!r} must map partition numbers to offsets >= 0")
        offsets[str(topic)] = {str(partition): offset for partition, offset in partitions.items()}
    return offsets


def run(spark: SparkSession, settings: PipelineSettings) -> dict[str, Any]:
    """One incremental run (see the module docstring); returns the result for the launcher."""
    source_options = {**internal_source_options(settings), "subscribe": USAGE_TOPIC}
    cursor = cursor_offsets(writer.load_state(PIPELINE))
    starting, ending = pending_range(cursor, resolve_offsets(source_options, "latest"))
    result: dict[str, Any] = {"rows": 0, "records_read": 0, "rejected": 0, "raw_rows_added": 0, "hour_rows": 0, "day_rows": 0, "dates": [], "offsets": ending}
    if nothing_to_read(starting, ending):
        return result
    reader = spark.read.format("weir").options(**source_options).option("endingOffsets", json.dumps(ending))
    if starting:
        reader = reader.option("startingOffsets", json.dumps(starting))
    usage_partitions = sorted(int(partition) for partition in ending[USAGE_TOPIC])
    result.update(store_and_aggregate(spark, reader.load(), usage_partitions, UsagePaths.under(settings.output_dir), writer.write_usage))
    writer.save_state(PIPELINE, {"version": STATE_VERSION, "offsets": ending})
    return result


def store_and_aggregate(spark: SparkSession, records: DataFrame, usage_partitions: list[int], paths: UsagePaths, write_usage: WriteUsage) -> dict[str, Any]:
    """Steps 3 to 6 of the module docstring for ``records`` (``__usage`` records as the weir
    source returns them, from partitions among ``usage_partitions``). ``write_usage`` is
    :func:`webapp.metering.writer.write_usage` in the job. Returns the counts of the result."""
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, value)
    # Decoded once: the records are read (from the brokers) and parsed a single time.
    parsed = parse_usage_records(records).persist(StorageLevel.MEMORY_AND_DISK)
    batch: DataFrame | None = None
    windows: DataFrame | None = None
    try:
        result: dict[str, Any] = {"records_read": parsed.count()}
        result.update(_set_rejected_aside(spark, usage_problems(parsed), usage_partitions, paths))
        batch = deduplicate_usage_rows(valid_usage_rows(parsed)).persist(StorageLevel.MEMORY_AND_DISK)
        dates, hours = _affected_buckets(batch)
        if dates:
            result["raw_rows_added"] = append_new_rows(spark, batch, paths.raw, RAW_SCHEMA_DDL, DATE_COLUMN, dates, IDENTITY_COLUMNS)
            stored = read_partitions(spark, paths.raw, RAW_SCHEMA_DDL, DATE_COLUMN, dates)
            if stored is None:
                raise MissingRawRowsError(paths.raw, dates)
            windows = window_usage(stored.select(*RAW_COLUMNS)).persist(StorageLevel.MEMORY_AND_DISK)
            result.update(_write_aggregates(windows, hours, paths, write_usage))
            result["dates"] = [str(day) for day in dates]
    finally:
        for frame in (windows, batch, parsed):
            if frame is not None:
                frame.unpersist()
    return result


def _set_rejected_aside(spark: SparkSession, problems: DataFrame, partitions: list[int], paths: UsagePaths) -> dict[str, Any]:
    """Store the unusable records in ``rejected/`` (once each, partitioned by their ``__usage``
    partition, all of which are in ``partitions``); their count and the first few named."""
    rejected = problems.count()
    if not rejected:
        return {}
    append_new_rows(spark, problems, paths.rejected, REJECTED_SCHEMA_DDL, "source_partition", partitions, REJECTED_KEYS)
    named = problems.orderBy(*REJECTED_KEYS).limit(REJECTED_NAMED).collect()
    print(
        f"usage job: {rejected} unusable {USAGE_TOPIC} records, kept in {paths.rejected}; "
        + "; ".join(f"partition {row['source_partition']} offset {row['source_offset']}: {row['problem']}" for row in named),
        file=sys.stderr,
    )
    return {
        "rejected": rejected,
        "rejected_examples": [{"partition": row["source_partition"], "offset": row["source_offset"], "problem": row["problem"]} for row in named],
    }


def _affected_buckets(batch: DataFrame) -> tuple[list[date], list[int]]:
    """The dates and the hour starts (epoch ms) the batch's rows fall in, sorted."""
    hour = (F.floor(F.col("window_start_ms") / MILLISECONDS_PER_HOUR).cast("long") * MILLISECONDS_PER_HOUR).alias("hour_ms")
    pairs = batch.select(DATE_COLUMN, hour).distinct().collect()
    return sorted({row[DATE_COLUMN] for row in pairs}), sorted({row["hour_ms"] for row in pairs})


def _write_aggregates(windows: DataFrame, hours: list[int], paths: UsagePaths, write_usage: WriteUsage) -> dict[str, int]:
    """Upsert the affected buckets into the database, then replace the dates' Parquet partitions."""
    hourly = usage_aggregates(windows, "hour")
    daily = usage_aggregates(windows, "day")
    hour_rows = write_usage("hour", writer_rows(hourly.where(in_values("bucket_start_ms", hours))))
    day_rows = write_usage("day", writer_rows(daily))
    overwrite_partitions(hourly.drop("bucket_start_ms"), paths.hourly, DATE_COLUMN)
    overwrite_partitions(daily.drop("bucket_start_ms"), paths.daily, DATE_COLUMN)
    return {"rows": hour_rows + day_rows, "hour_rows": hour_rows, "day_rows": day_rows}


def writer_rows(aggregates: DataFrame) -> list[dict[str, Any]]:
    """Aggregate rows as ``write_usage`` takes them: ``bucket_start`` an aware UTC datetime.

    Built from ``bucket_start_ms``: a collected Spark timestamp would be a naive datetime in
    the Python process's local time zone.
    """
    rows = []
    for row in aggregates.select(*WRITER_COLUMNS, "bucket_start_ms").collect():
        values = row.asDict()
        values["bucket_start"] = datetime.fromtimestamp(values.pop("bucket_start_ms") / 1000, tz=UTC)
        rows.append(values)
    return rows


def main() -> int:
    return run_job(PIPELINE, run)


if __name__ == "__main__":
    sys.exit(main())
