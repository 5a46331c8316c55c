"""The usage job: new ``__usage`` records -> hourly and daily usage per tenant and topic, in
the control-plane database (``webapp.metering.writer.write_usage``) and in Parquet.

``python -m spark_pipelines.jobs.usage`` (what the launcher runs); tests call :func:`run`.
The figures are defined in :mod:`spark_pipelines.transforms.usage`. Under
``<output_dir>/usage/`` (``WEIR_PIPELINE_DIR``):

=========================  =============================================================
``raw/date=D/hour=H/``     every usage row read, deduplicated by identity (D, H: UTC date
                           and hour of day of the window start): the record of what was
                           counted, and what a window is recomputed from when needed
``sent_windows/date=D/``   the broker windows (node, incarnation, sequence) with rows in
                           ``raw/``, and their start: what a new row can collide with
``windows/date=D/hour=H/`` per tenant, topic and window: the window's traffic sums,
                           topic size and partition-milliseconds (``window_usage``); what
                           the hour buckets are summed from
``hourly/date=D/``         hour buckets of day D (``bucket_start`` UTC timestamps), with the
                           sums a day is rolled up from (``storage_bytes_sum``,
                           ``storage_windows``, ``partition_ms``)
``daily/date=D/``          the day bucket of day D, rolled up from ``hourly/date=D/``
``rejected/``              records that are not valid ``weir.usage/1`` rows (either
                           encoding), with their ``__usage`` partition, offset, text and
                           what is wrong (kept, counted in the result as ``rejected``, never
                           counted in a bucket)
=========================  =============================================================

One run, in this order:

1. Load the cursor (``load_state("usage")``): per ``__usage`` partition, the next offset to
   read (a partition it does not name is read from its log start).
2. Pin the end: ``resolve_offsets`` asks the brokers for every partition's end offset now.
   The run reads exactly ``[cursor, end)``, however much the brokers append meanwhile.
3. Read that range (``format("weir")``, internal token, at least one task per core), decode
   it (binary rows with numpy over whole Arrow batches, JSON rows with ``from_json``), set invalid records
   aside (``rejected/``), drop duplicates by identity within the batch.
4. Record the batch's broker windows in ``sent_windows/`` (those not there yet), then append
   to ``raw/`` the batch's rows not stored yet. A row can be stored already only if its broker
   window is in ``sent_windows/``: only those windows' rows are compared (an anti-join with
   the stored rows of the same broker windows); the rows of new broker windows are appended
   as they are.
5. The figures of every window the batch has rows in: from the batch's rows for a window with
   no stored rows before this run (the common case), from all its ``raw/`` rows otherwise (a
   window whose rows came over several runs, or a run that died); they replace those windows'
   figures in ``windows/``. The hour buckets of the batch's hours are summed from those hours'
   window figures, the day buckets of their dates from the dates' hour buckets (the stored
   ones of the other hours and the new ones). A run reads no stored raw row unless one of its
   windows had some: its cost follows its new rows, plus a few window figures per tenant-topic
   of the hours it touches.
6. Upsert the hour and day buckets of the tenants and topics the read rows belong to into
   the database; overwrite those dates' partitions of ``hourly/`` and ``daily/`` (dynamic
   overwrite).
7. Save the cursor: the pinned end.

Why a run that dies anywhere needs nothing but the next run:

- Until step 7 the saved cursor is the old one, so the next run reads the same records
  again (and perhaps more). Nothing is skipped.
- ``sent_windows/`` is written before ``raw/``, so every broker window with stored rows is
  named there; step 4 compares the rows of those windows with the stored ones and adds only
  identities not stored yet, so reading records again adds nothing twice, whatever part of
  an earlier append reached the disk (Parquet files appear whole: each is written aside and
  renamed into place).
- Step 5 never adds to a stored figure: a window with stored rows is recomputed from all of
  them, and an hour is summed from all its windows. The windows recomputed are those of every
  row read, not only of the rows added, so a run that died after step 4 has its windows and
  buckets computed by the next one. Hours stored by an earlier version of the job (rows in
  ``raw/``, none in ``windows/``) have all their windows computed from ``raw/`` once.
- Step 6 upserts rows and replaces partitions: repeating it leaves the same state.
- The cursor moves last, once everything it covers is stored.

Precondition: one run at a time (the launcher keeps at most one RUNNING run per pipeline).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from log_formats.usage_records import USAGE_TOPIC
from spark_pipelines.jobs.entrypoint import run_job
from spark_pipelines.parquet_store import append_new_rows, in_values, overwrite_partitions, read_partitions, stored_partitions
from spark_pipelines.read_range import Offsets, nothing_to_read, pending_range
from spark_pipelines.settings import PipelineSettings, internal_source_options
from spark_pipelines.source import resolve_offsets
from spark_pipelines.transforms.usage import (
    COPIES_COLUMN,
    DATE_COLUMN,
    HOUR_COLUMN,
    IDENTITY_COLUMNS,
    MILLISECONDS_PER_DAY,
    MILLISECONDS_PER_HOUR,
    RAW_COLUMNS,
    RAW_SCHEMA_DDL,
    STORED_AGGREGATE_SCHEMA_DDL,
    TRAFFIC_COLUMNS,
    UNUSABLE_COLUMNS,
    days_from_hours,
    deduplicate_usage_records,
    parse_usage_records,
    usable_rows,
    usage_problems,
    usage_sums,
    window_usage,
)
from webapp.metering import writer

PIPELINE = "usage"
STATE_VERSION = 1  # the shape of the saved state: {"version": 1, "offsets": {"__usage": {"0": 42}}}
REJECTED_SCHEMA_DDL = "source_partition INT, source_offset BIGINT, source_value STRING, problem STRING"
REJECTED_KEYS = ("source_partition", "source_offset")
RAW_PARTITIONING = (DATE_COLUMN, HOUR_COLUMN)  # raw/date=D/hour=H/, windows/date=D/hour=H/
# A broker's window: the rows a broker sent for one window carry the same (node, incarnation, sequence).
BROKER_WINDOW_COLUMNS = ("node_id", "incarnation", "sequence")
SENT_WINDOWS_SCHEMA_DDL = f"node_id BIGINT, incarnation STRING, sequence BIGINT, window_start_ms BIGINT, {HOUR_COLUMN} INT, {DATE_COLUMN} DATE"
WINDOW_KEYS = ("tenant_id", "topic", "window_start_ms")
WINDOWS_SCHEMA_DDL = (
    "tenant_id STRING, topic STRING, window_start_ms BIGINT, "
    + ", ".join(f"{name} BIGINT" for name in TRAFFIC_COLUMNS)
    + f", storage_bytes BIGINT, partition_ms BIGINT, {DATE_COLUMN} DATE, {HOUR_COLUMN} INT"
)
# Up to this many rejected records are named in the result (all are in rejected/).
REJECTED_NAMED = 5
# Runtime settings the job's plans need, set on the session it is given.
SESSION_CONF = {
    # Timestamps as Parquet's standard TIMESTAMP(MICROS), not Spark's legacy INT96.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # Let adaptive execution size the shuffles under the persisted frames too (off by default):
    # otherwise every run writes spark.sql.shuffle.partitions (200) small files per date.
    "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
    # Write the rows of several date/hour partitions of a task through open files side by side
    # rather than sorting the task's rows by partition first (the sort is the fallback past this
    # many files per task, one day's hours; a run touches an hour or two): the sort was half the
    # CPU of storing the raw rows. Spark plans the sort itself unless planned writes are off.
    "spark.sql.optimizer.plannedWrite.enabled": "false",
    "spark.sql.maxConcurrentOutputFileWriters": "24",
}
# Set only while the records are deduplicated: nearly every row is its own group, so Spark's
# partial aggregation before the shuffle reduces nothing and costs a third of that step's CPU.
# The other aggregations of the job reduce many rows to few and keep it.
DEDUPLICATION_CONF = {"spark.sql.execution.bypassPartialAggregation": "true"}
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

    @property
    def windows(self) -> Path:
        return self.root / "windows"

    @property
    def sent_windows(self) -> Path:
        return self.root / "sent_windows"


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
    # At least a range per core: a few __usage partitions are read by as many tasks as Spark has cores.
    reader = reader.option("minPartitions", str(spark.sparkContext.defaultParallelism))
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
    # One pass over the records (read from the brokers once): parsed, deduplicated, counted and
    # kept, in one aggregation. Kept as a local checkpoint rather than a cached DataFrame: building
    # Spark's compressed columnar cache of every row cost about as much CPU as parsing them.
    with session_conf(spark, DEDUPLICATION_CONF):
        deduplicated = deduplicate_usage_records(parse_usage_records(records)).localCheckpoint(eager=True)
    [counts] = deduplicated.agg(F.sum(COPIES_COLUMN).alias("read"), F.count(UNUSABLE_COLUMNS[0]).alias("rejected")).collect()
    result: dict[str, Any] = {"records_read": counts["read"] or 0}
    if counts["rejected"]:
        # Rare, so the records are read and parsed again for the text and problem of the unusable
        # ones rather than carrying text through the aggregation (which would sort every row).
        result.update(_set_rejected_aside(spark, usage_problems(parse_usage_records(records)), counts["rejected"], usage_partitions, paths))
    batch = usable_rows(deduplicated)
    sent = [tuple(row) for row in batch.select(*BROKER_WINDOW_COLUMNS, "window_start_ms", HOUR_COLUMN, DATE_COLUMN).distinct().collect()]
    if sent:
        hours = sorted({(day, hour) for *_window, hour, day in sent})
        result["raw_rows_added"], recompute = _store_new_rows(spark, batch, sent, hours, paths)
        result.update(_update_buckets(spark, batch, recompute, hours, paths, write_usage))
        result["dates"] = [str(day) for day in sorted({day for day, _hour in hours})]
    return result


@contextmanager
def session_conf(spark: SparkSession, conf: Mapping[str, str]) -> Iterator[None]:
    """Runtime settings ``conf`` on ``spark`` for the actions run inside, then as they were."""
    before = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, previous in before.items():
            if previous is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, previous)


def _set_rejected_aside(spark: SparkSession, problems: DataFrame, rejected: int, partitions: list[int], paths: UsagePaths) -> dict[str, Any]:
    """Store the ``rejected`` unusable records in ``rejected/`` (once each, partitioned by their
    ``__usage`` partition, all of which are in ``partitions``); their count and the first few named."""
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


SentWindow = tuple[int, str, int, int, int, date]  # BROKER_WINDOW_COLUMNS, window_start_ms, hour, date


@dataclass(frozen=True)
class Recompute:
    """The windows whose figures are recomputed from the stored raw rows rather than taken from
    the batch: those that had raw rows before this run (``window_starts``), and every window of
    the hours stored before the window figures were (``hours``)."""

    window_starts: list[int]
    hours: list[tuple[date, int]]


def _store_new_rows(spark: SparkSession, batch: DataFrame, sent: list[SentWindow], hours: list[tuple[date, int]], paths: UsagePaths) -> tuple[int, Recompute]:
    """Step 4: record the batch's broker windows in ``sent_windows/``, then append to ``raw/`` the
    batch's rows that are not stored yet; returns how many, and what :func:`_update_buckets` must
    recompute from ``raw/``.

    A row can only be stored already when its broker window is (an earlier run read part of it, or
    all of it before dying): only the rows of those broker windows are compared with the stored
    rows, and only with the stored rows of the same broker windows. ``sent_windows/`` is written
    before ``raw/``, so it names every broker window with raw rows, whatever a dead run left.
    """
    dates = sorted({day for day, _hour in hours})
    known = {tuple(row) for row in _stored_frame(spark, paths.sent_windows, SENT_WINDOWS_SCHEMA_DDL, DATE_COLUMN, dates)}
    # Hours stored by a version of the job without sent_windows/ and windows/: their broker
    # windows are read from raw/ (once: they are recorded now) and their figures recomputed.
    legacy_hours = [
        hour for hour in hours if stored_partitions(paths.raw, RAW_PARTITIONING, [hour]) and not stored_partitions(paths.windows, RAW_PARTITIONING, [hour])
    ]
    legacy = read_partitions(spark, paths.raw, RAW_SCHEMA_DDL, RAW_PARTITIONING, legacy_hours)
    if legacy is not None:
        known |= {tuple(row) for row in legacy.select(*BROKER_WINDOW_COLUMNS, "window_start_ms", HOUR_COLUMN, DATE_COLUMN).distinct().collect()}
    new_windows = sorted(set(sent) - known)
    if new_windows:
        spark.createDataFrame(new_windows, SENT_WINDOWS_SCHEMA_DDL).coalesce(1).write.mode("append").partitionBy(DATE_COLUMN).parquet(str(paths.sent_windows))
    known_broker_windows = {window[:3] for window in known}
    colliding = sorted({window for window in sent if window[:3] in known_broker_windows})
    starts_stored = {window[3] for window in known}
    recompute = Recompute(sorted({window[3] for window in sent} & starts_stored), legacy_hours)
    if not colliding:
        return _append_rows(batch, paths.raw), recompute
    colliding_frame = F.broadcast(spark.createDataFrame([window[:3] for window in colliding], "node_id BIGINT, incarnation STRING, sequence BIGINT"))
    stored = read_partitions(spark, paths.raw, RAW_SCHEMA_DDL, RAW_PARTITIONING, sorted({(window[5], window[4]) for window in colliding}))
    if stored is None:
        return _append_rows(batch, paths.raw), recompute
    stored_keys = stored.join(colliding_frame, list(BROKER_WINDOW_COLUMNS), "left_semi").select(*IDENTITY_COLUMNS)
    new_rows = batch.join(F.broadcast(stored_keys), list(IDENTITY_COLUMNS), "left_anti").select(*batch.columns)
    return _append_rows(new_rows, paths.raw), recompute


def _stored_frame(spark: SparkSession, root: Path, schema_ddl: str, columns: str, values: list[date]) -> list[Any]:
    frame = read_partitions(spark, root, schema_ddl, columns, values)
    if frame is None:
        return []
    return frame.select(*(name.split()[0] for name in schema_ddl.split(", "))).collect()


def _append_rows(rows: DataFrame, root: Path) -> int:
    """Append ``rows`` to ``root`` (partitioned by date and hour); how many."""
    count = rows.count()
    if count:
        rows.write.mode("append").partitionBy(*RAW_PARTITIONING).parquet(str(root))
    return count


def _update_buckets(
    spark: SparkSession, batch: DataFrame, recompute: Recompute, hours: list[tuple[date, int]], paths: UsagePaths, write_usage: WriteUsage
) -> dict[str, int]:
    """Steps 5 and 6: the figures of the batch's windows (from the batch, or from ``raw/`` for the
    windows of ``recompute``) replace theirs in ``windows/``; the hour buckets of ``hours`` are
    summed from their windows' figures, the day buckets of their dates from the dates' hour buckets;
    the batch's tenant-topic buckets are upserted into the database and the dates' partitions of
    ``hourly/`` and ``daily/`` replaced."""
    again_rows = in_values("window_start_ms", recompute.window_starts)
    for day, hour in recompute.hours:
        again_rows = again_rows | ((F.col(DATE_COLUMN) == F.lit(day)) & (F.col(HOUR_COLUMN) == F.lit(hour)))
    again_hours = sorted({_hour_of(start) for start in recompute.window_starts} | set(recompute.hours))
    figures = _with_hour(window_usage(batch.where(~again_rows) if again_hours else batch))
    if again_hours:
        raw = read_partitions(spark, paths.raw, RAW_SCHEMA_DDL, RAW_PARTITIONING, again_hours)
        if raw is None:
            raise MissingRawRowsError(paths.raw, sorted({day for day, _hour in again_hours}))
        figures = figures.unionByName(_with_hour(window_usage(raw.where(again_rows).select(*RAW_COLUMNS))))
    # The windows' figures are kept (a local checkpoint: they are written, summed and compared below).
    figures = figures.localCheckpoint(eager=True)
    touched_starts = [row[0] for row in figures.select("window_start_ms").distinct().collect()]
    kept = read_partitions(spark, paths.windows, WINDOWS_SCHEMA_DDL, RAW_PARTITIONING, hours)
    hour_windows = figures
    if kept is not None:
        hour_windows = kept.where(~in_values("window_start_ms", touched_starts)).unionByName(figures).localCheckpoint(eager=True)
    overwrite_partitions(hour_windows, paths.windows, RAW_PARTITIONING)
    new_hours = usage_sums(hour_windows.drop(DATE_COLUMN, HOUR_COLUMN), "hour")
    keys = figures.select(
        "tenant_id", "topic", (F.floor(F.col("window_start_ms") / MILLISECONDS_PER_HOUR).cast("long") * MILLISECONDS_PER_HOUR).alias("hour_start_ms")
    ).distinct()
    dates = sorted({day for day, _hour in hours})
    hour_starts = [_hour_start_ms(day, hour) for day, hour in hours]
    kept_hours = read_partitions(spark, paths.hourly, STORED_AGGREGATE_SCHEMA_DDL, DATE_COLUMN, dates)
    day_hours = new_hours
    if kept_hours is not None:
        # The dates' other hours as stored; materialised below, before their partitions are replaced.
        others = kept_hours.withColumn("bucket_start_ms", F.unix_millis("bucket_start")).where(~in_values("bucket_start_ms", hour_starts))
        day_hours = others.unionByName(new_hours)
    day_hours = day_hours.localCheckpoint(eager=True)
    days = days_from_hours(day_hours)
    hour_rows = write_usage("hour", writer_rows(_touched(day_hours, keys, MILLISECONDS_PER_HOUR)))
    day_rows = write_usage("day", writer_rows(_touched(days, keys, MILLISECONDS_PER_DAY)))
    overwrite_partitions(day_hours.drop("bucket_start_ms"), paths.hourly, DATE_COLUMN)
    overwrite_partitions(days.drop("bucket_start_ms"), paths.daily, DATE_COLUMN)
    return {"rows": hour_rows + day_rows, "hour_rows": hour_rows, "day_rows": day_rows}


def _with_hour(windows: DataFrame) -> DataFrame:
    """Window figures with the date and hour of day of their start (``windows/``' partition columns)."""
    start = F.col("window_start_ms")
    return windows.withColumn(DATE_COLUMN, F.date_from_unix_date(F.floor(start / MILLISECONDS_PER_DAY).cast("int"))).withColumn(
        HOUR_COLUMN, (F.floor(start / MILLISECONDS_PER_HOUR) % 24).cast("int")
    )


def _hour_of(window_start_ms: int) -> tuple[date, int]:
    moment = datetime.fromtimestamp(window_start_ms / 1000, tz=UTC)
    return moment.date(), moment.hour


def _hour_start_ms(day: date, hour: int) -> int:
    return int(datetime(day.year, day.month, day.day, hour, tzinfo=UTC).timestamp() * 1000)


def _touched(buckets: DataFrame, keys: DataFrame, bucket_milliseconds: int) -> DataFrame:
    """The buckets (with ``bucket_start_ms``) of a tenant, topic and bucket the batch has a row in (``keys``: :func:`_batch_keys`)."""
    start = (F.floor(F.col("hour_start_ms") / bucket_milliseconds).cast("long") * bucket_milliseconds).alias("bucket_start_ms")
    return buckets.join(keys.select("tenant_id", "topic", start).distinct(), ["tenant_id", "topic", "bucket_start_ms"], "left_semi")


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
