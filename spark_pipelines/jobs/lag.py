"""The lag job: new ``__consumer_offsets`` commits -> each group's lag and Burrow status, in the
control-plane database (``webapp.metering.writer.write_lag``) and in Parquet.

``python -m spark_pipelines.jobs.lag`` (what the launcher runs, every minute by default from
Celery beat); tests call :func:`run`. The figures and rules are defined in
:mod:`spark_pipelines.transforms.lag` and :mod:`spark_pipelines.transforms.lag_rules`.

One run, in this order:

1. Load the state (``load_state("lag")``, :mod:`spark_pipelines.lag_state`): the cursor per
   ``__consumer_offsets`` partition, each group-partition's window of commits, each
   partition's recent end offsets.
2. Pin the end of ``__consumer_offsets`` (``resolve_offsets``) and read ``[cursor, end)``
   (``format("weir")``, internal token); decode; keep the commits and tombstones of tenants'
   groups (group records, undecodable records and groups without a tenant are counted).
3. Ask the brokers (:mod:`spark_pipelines.lag_brokers`) for the end and log start offsets of
   every partition a window or a new commit names; forget the partitions of deleted topics.
4. Add this observation to the end offset history, give each new commit its lag at commit
   time, update the windows with Burrow's storage rule.
5. Evaluate every window (Burrow's rules), fetch the timestamp of the next unconsumed record
   of the most lagging partitions (at most ``WEIR_LAG_TIME_LAG_FETCH_LIMIT``), flag
   retention risk, roll up per group.
6. Write the evaluation (``write_lag``: every group known, each replacing its previous
   evaluation) and append the partition rows to ``<output_dir>/lag/date=D/`` (D: UTC date of
   the evaluation).
7. Save the state (new cursor, windows, history) last.

A run that dies before step 7 leaves the previous state: the next run reads the same commits
again into the same windows, and its writes replace this run's. Every group stays evaluated
on every run (a STOP depends on time, not only on commits), not only those with new commits.

Settings (environment, read by :meth:`LagOptions.from_env`):

=================================  =======  ==================================================
WEIR_LAG_WINDOW_SIZE               10       commits per window (Burrow's ``intervals``)
WEIR_LAG_MIN_DISTANCE_SECONDS      0        a commit closer than this to the window's newest
                                            replaces it (Burrow's ``min-distance``)
WEIR_LAG_MINIMUM_COMPLETE          0        windows less full than this fraction are OK
                                            (Burrow's ``minimum-complete``)
WEIR_LAG_RETENTION_RISK_FRACTION   0.1      retention risk: committed offset in this oldest
                                            fraction of the retained log (or below it)
WEIR_LAG_TIME_LAG_FETCH_LIMIT      200      next-record timestamps fetched per run
WEIR_LAG_BROKER_TIMEOUT_SECONDS    10       deadline of the offset lookups, and of the
                                            timestamp fetches in all
=================================  =======  ==================================================

Precondition: one run at a time (the launcher keeps at most one RUNNING run per pipeline).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_pipelines import lag_brokers
from spark_pipelines.jobs.entrypoint import run_job
from spark_pipelines.lag_state import LagState
from spark_pipelines.parquet_store import append_new_rows
from spark_pipelines.read_range import nothing_to_read, pending_range
from spark_pipelines.settings import PipelineSettings, internal_source_options
from spark_pipelines.source import resolve_offsets
from spark_pipelines.source_options import build_client_config
from spark_pipelines.transforms import lag
from spark_pipelines.transforms.lag_rules import DEFAULT_MIN_DISTANCE_MS, DEFAULT_MINIMUM_COMPLETE, DEFAULT_WINDOW_SIZE
from webapp.metering import writer

PIPELINE = "lag"
OFFSETS_TOPIC = "__consumer_offsets"
DATE_COLUMN = "date"
# The Parquet rows: one per group-partition and evaluation.
PARQUET_COLUMNS = (
    "evaluated_at",
    "tenant_id",
    "group",
    "topic",
    "partition",
    "committed_offset",
    "end_offset",
    "log_start_offset",
    "offset_lag",
    "time_lag_seconds",
    "status",
    "retention_risk",
    "last_commit_at",
    DATE_COLUMN,
)
PARQUET_SCHEMA_DDL = (
    "evaluated_at TIMESTAMP, tenant_id STRING, `group` STRING, topic STRING, `partition` INT, committed_offset BIGINT, "
    "end_offset BIGINT, log_start_offset BIGINT, offset_lag BIGINT, time_lag_seconds DOUBLE, status STRING, "
    "retention_risk BOOLEAN, last_commit_at TIMESTAMP, date DATE"
)
PARQUET_KEYS = ("evaluated_at", "tenant_id", "group", "topic", "partition")


class InvalidLagOptionError(ValueError):
    """An environment variable of the lag job holds a value it cannot use; the message names it."""

    retriable = False

    def __init__(self, variable: str, value: str, expected: str) -> None:
        super().__init__(f"{variable}={value!r}: expected {expected}")
        self.variable = variable
        self.value = value


@dataclass(frozen=True)
class LagOptions:
    """The lag job's tunables (see the module docstring for their variables and meaning)."""

    window_size: int = DEFAULT_WINDOW_SIZE
    min_distance_seconds: float = DEFAULT_MIN_DISTANCE_MS / 1000
    minimum_complete: float = DEFAULT_MINIMUM_COMPLETE
    retention_risk_fraction: float = lag.DEFAULT_RETENTION_RISK_FRACTION
    time_lag_fetch_limit: int = 200
    broker_timeout_seconds: float = 10.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LagOptions:
        env = os.environ if environ is None else environ
        defaults = cls()

        def number(variable: str, default: float, low: float, high: float, integer: bool = False) -> Any:
            raw = env.get(variable)
            if raw is None or not raw.strip():
                return default
            try:
                value = int(raw) if integer else float(raw)
            except ValueError:
                value = None
            if value is None or not low <= value <= high:
                kind = "an integer" if integer else "a number"
                raise InvalidLagOptionError(variable, raw, f"{kind} from {low:g} to {high:g}")
            return value

        return cls(
            window_size=number("WEIR_LAG_WINDOW_SIZE", defaults.window_size, 1, 1000, integer=True),
            min_distance_seconds=number("WEIR_LAG_MIN_DISTANCE_SECONDS", defaults.min_distance_seconds, 0, 86_400),
            minimum_complete=number("WEIR_LAG_MINIMUM_COMPLETE", defaults.minimum_complete, 0, 1),
            retention_risk_fraction=number("WEIR_LAG_RETENTION_RISK_FRACTION", defaults.retention_risk_fraction, 0, 1),
            time_lag_fetch_limit=number("WEIR_LAG_TIME_LAG_FETCH_LIMIT", defaults.time_lag_fetch_limit, 0, 100_000, integer=True),
            broker_timeout_seconds=number("WEIR_LAG_BROKER_TIMEOUT_SECONDS", defaults.broker_timeout_seconds, 0.1, 600),
        )

    @property
    def min_distance_ms(self) -> int:
        return int(self.min_distance_seconds * 1000)


def run(spark: SparkSession, settings: PipelineSettings, *, options: LagOptions | None = None, clock: Callable[[], float] = time.time) -> dict[str, Any]:
    """One run (see the module docstring); returns the result for the launcher. ``clock``
    gives the evaluation time (seconds since the epoch)."""
    options = options or LagOptions.from_env()
    source_options = {**internal_source_options(settings), "subscribe": OFFSETS_TOPIC}
    client_config = build_client_config({key.lower(): value for key, value in source_options.items() if key != "subscribe"})
    state = LagState.from_document(writer.load_state(PIPELINE), window_size=options.window_size)
    starting, ending = pending_range(state.offsets, resolve_offsets(source_options, "latest"))
    persisted: list[DataFrame] = []

    def keep(frame: DataFrame) -> DataFrame:
        persisted.append(frame.persist(StorageLevel.MEMORY_AND_DISK))
        return persisted[-1]

    timings = _Stopwatch()
    try:
        decoded = keep(_read_decoded(spark, source_options, starting, ending))
        result: dict[str, Any] = {"offsets": ending, **_record_counts(decoded)}
        timings.lap("read")
        commits = lag.commit_events(decoded)
        windows_before = spark.createDataFrame(list(state.windows), lag.WINDOW_SCHEMA)
        keys = [tuple(row) for row in windows_before.select(*lag.PARTITION_KEY).union(commits.select(*lag.PARTITION_KEY)).distinct().collect()]
        now_ms = int(clock() * 1000)
        timings.lap("keys")
        looked_up = lag_brokers.partition_offsets(client_config, keys, timeout_seconds=options.broker_timeout_seconds)
        timings.lap("offsets")
        deleted, offsets, observed = _broker_frames(spark, looked_up, now_ms)
        history = keep(
            lag.forget_partitions(
                lag.append_end_offsets(spark.createDataFrame(list(state.end_offsets), lag.END_OFFSET_SCHEMA), observed, options.window_size), deleted
            )
        )
        with_lags = lag.lag_at_commit(commits, history)
        windows = keep(
            lag.forget_partitions(
                lag.update_windows(windows_before, with_lags, window_size=options.window_size, min_distance_ms=options.min_distance_ms), deleted
            )
        )
        partitions = keep(
            lag.partition_lag(windows, offsets, history, now_ms=now_ms, window_size=options.window_size, minimum_complete=options.minimum_complete)
        )
        requests = [tuple(row) for row in lag.time_lag_requests(partitions, options.time_lag_fetch_limit).collect()]
        timings.lap("evaluate")
        timestamps = lag_brokers.next_record_timestamps(client_config, requests, timeout_seconds=options.broker_timeout_seconds)
        timings.lap("timestamps")
        timestamp_rows = spark.createDataFrame(
            [(item.tenant_id, item.topic, item.partition, item.offset, item.timestamp_ms) for item in timestamps], lag.RECORD_TIMESTAMP_SCHEMA
        )
        evaluated = keep(lag.with_retention_risk(lag.with_time_lag(partitions, timestamp_rows, now_ms=now_ms), options.retention_risk_fraction))
        groups = lag.group_lag(evaluated)
        evaluated_at = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
        partition_rows = writer_partition_rows(evaluated)
        group_rows = writer_group_rows(groups)
        timings.lap("roll_up")
        result["rows"] = writer.write_lag(evaluated_at, partition_rows, group_rows)
        result["parquet_rows"] = _append_parquet(spark, evaluated, evaluated_at, settings.output_dir)
        timings.lap("write")
        new_state = LagState.from_rows(ending, (row.asDict() for row in windows.collect()), (row.asDict() for row in history.collect()))
        result.update(
            {
                "groups": len(group_rows),
                "partitions": len(partition_rows),
                "deleted_partitions": sum(1 for item in looked_up if item.deleted),
                "unknown_end_offsets": sum(1 for item in looked_up if not item.deleted and item.end_offset is None),
                "time_lags_requested": len(requests),
                "time_lags_found": len(timestamps),
                "group_statuses": dict(sorted(Counter(row["status"] for row in group_rows).items())),
                "evaluated_at": evaluated_at.isoformat(),
                "seconds": timings.laps,
            }
        )
    finally:
        for frame in persisted:
            frame.unpersist()
    writer.save_state(PIPELINE, new_state.to_document())
    return result


def _broker_frames(spark: SparkSession, looked_up: list[lag_brokers.PartitionOffsets], now_ms: int) -> tuple[DataFrame, DataFrame, DataFrame]:
    """What the brokers said, as the transforms take it: the deleted partitions' keys, every
    other partition's offsets (PARTITION_OFFSETS_SCHEMA), and the end offsets observed now
    (END_OFFSET_SCHEMA)."""
    deleted = spark.createDataFrame(
        [(item.tenant_id, item.topic, item.partition) for item in looked_up if item.deleted], "tenant_id STRING, topic STRING, partition INT"
    )
    offsets = spark.createDataFrame(
        [(item.tenant_id, item.topic, item.partition, item.end_offset, item.log_start_offset) for item in looked_up if not item.deleted],
        lag.PARTITION_OFFSETS_SCHEMA,
    )
    observed = spark.createDataFrame(
        [(item.tenant_id, item.topic, item.partition, now_ms, item.end_offset) for item in looked_up if item.end_offset is not None], lag.END_OFFSET_SCHEMA
    )
    return deleted, offsets, observed


class _Stopwatch:
    """Seconds spent in each step of a run, for the result (where a slow run spends its time)."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, step: str) -> None:
        now = time.monotonic()
        self.laps[step] = round(now - self._last, 3)
        self._last = now


def _read_decoded(spark: SparkSession, source_options: Mapping[str, str], starting: dict[str, dict[str, int]], ending: dict[str, dict[str, int]]) -> DataFrame:
    """The decoded records of ``[starting, ending)`` of __consumer_offsets; empty when nothing is new."""
    if nothing_to_read(starting, ending):
        return spark.createDataFrame([], lag.DECODED_SCHEMA)
    reader = spark.read.format("weir").options(**source_options).option("endingOffsets", json.dumps(ending))
    if starting:
        reader = reader.option("startingOffsets", json.dumps(starting))
    return lag.decode_offset_records(reader.load())


def _record_counts(decoded: DataFrame) -> dict[str, Any]:
    """How many records of each kind were read, commits of groups without a tenant apart; a few problems named."""
    untenanted = F.col("kind").isin(lag.KIND_COMMIT, lag.KIND_TOMBSTONE) & (F.coalesce(F.col("tenant_id"), F.lit("")) == "")
    counted = decoded.select(F.when(untenanted, F.lit("untenanted")).otherwise(F.col("kind")).alias("kind")).groupBy("kind").count().collect()
    counts = {row["kind"]: row["count"] for row in counted}
    result: dict[str, Any] = {"records_read": sum(counts.values()), **{kind: counts.get(kind, 0) for kind in (*lag.RECORD_KINDS, "untenanted")}}
    if counts.get(lag.KIND_UNDECODABLE):
        examples = decoded.where(F.col("kind") == lag.KIND_UNDECODABLE).orderBy("source_partition", "source_offset").limit(5).collect()
        result["undecodable_examples"] = [{"partition": row["source_partition"], "offset": row["source_offset"], "problem": row["problem"]} for row in examples]
        print(f"lag job: skipped {counts[lag.KIND_UNDECODABLE]} undecodable {OFFSETS_TOPIC} records, e.g. {result['undecodable_examples']}", file=sys.stderr)
    return result


def _milliseconds_to_datetime(value: int | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value / 1000, tz=UTC)


def writer_partition_rows(evaluated: DataFrame) -> list[dict[str, Any]]:
    """Partition rows as ``write_lag`` takes them: unknown offsets None, ``last_commit_at`` an aware UTC datetime."""
    rows = []
    for row in evaluated.collect():
        values = row.asDict()
        rows.append(
            {
                "tenant_id": values["tenant_id"],
                "group": values["group"],
                "topic": values["topic"],
                "partition": values["partition"],
                "committed_offset": values["committed_offset"],
                "end_offset": values["end_offset"] if values["end_offset"] >= 0 else None,
                "log_start_offset": values["log_start_offset"] if values["log_start_offset"] >= 0 else None,
                "offset_lag": values["offset_lag"],
                "time_lag_seconds": values["time_lag_seconds"],
                "status": values["status"],
                "retention_risk": bool(values["retention_risk"]),
                "last_commit_at": _milliseconds_to_datetime(values["last_commit_ms"]),
            }
        )
    return rows


def writer_group_rows(groups: DataFrame) -> list[dict[str, Any]]:
    """Group rows as ``write_lag`` takes them, the worst partition as a mapping."""
    rows = []
    for row in groups.collect():
        values = row.asDict()
        rows.append(
            {
                **{name: values[name] for name in ("tenant_id", "group", "status", "max_lag", "total_lag", "max_time_lag_seconds", "partition_count")},
                "retention_risk": bool(values["retention_risk"]),
                "worst_partition": {"topic": values["worst_topic"], "partition": values["worst_partition"], "status": values["worst_status"]},
            }
        )
    return rows


def _append_parquet(spark: SparkSession, evaluated: DataFrame, evaluated_at: datetime, output_dir: Path) -> int:
    """Append this evaluation's partition rows to ``<output_dir>/lag/date=D/`` (once, even when repeated)."""
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    day = evaluated_at.date()
    unknown_to_null = {name: F.when(F.col(name) >= 0, F.col(name)) for name in ("end_offset", "log_start_offset")}
    rows = evaluated.select(
        F.lit(evaluated_at).cast("timestamp").alias("evaluated_at"),
        "tenant_id",
        "group",
        "topic",
        F.col("partition").cast("int").alias("partition"),
        "committed_offset",
        unknown_to_null["end_offset"].alias("end_offset"),
        unknown_to_null["log_start_offset"].alias("log_start_offset"),
        "offset_lag",
        "time_lag_seconds",
        "status",
        "retention_risk",
        F.timestamp_millis(F.col("last_commit_ms")).alias("last_commit_at"),
        F.lit(day).cast("date").alias(DATE_COLUMN),
    )
    return append_new_rows(spark, rows.select(*PARQUET_COLUMNS), Path(output_dir) / "lag", PARQUET_SCHEMA_DDL, DATE_COLUMN, [day], PARQUET_KEYS)


def main() -> int:
    return run_job(PIPELINE, run)


if __name__ == "__main__":
    sys.exit(main())
