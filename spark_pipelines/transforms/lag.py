"""Consumer lag as pure DataFrame functions: ``__consumer_offsets`` records -> lag per partition and group.

The input is what ``spark.read.format("weir")`` returns for ``__consumer_offsets`` (Kafka's
columns ``key``, ``value``, ``partition``, ``offset``), plus what the job asked the brokers
(end offsets and log start offsets per partition, the timestamp of the next unconsumed
record) and the state it kept from its previous run (each partition's window of commits,
each partition's recent end offsets). The functions, in the order the job chains them:

1. :func:`decode_offset_records` decodes every record with Kafka's schemas
   (``log_formats.offset_commit_records``): ``kind`` is ``commit``, ``tombstone`` (a deleted commit),
   ``group_record`` (group metadata, key versions 2-8: skipped) or ``undecodable``;
   :func:`commit_events` keeps the commits and tombstones of tenants' groups, split into
   tenant id and plain names by the brokers' ``tenant~name`` rule.
2. :func:`append_end_offsets` adds this run's end offset observations to each partition's
   history, keeping the newest ``window_size`` (Burrow keeps as many broker offsets as commits).
3. :func:`lag_at_commit` gives every commit the lag its partition had at the commit's time.
   Approximation: the job observes end offsets once per run, so the end offset at a commit's
   time is interpolated linearly in time between the observations around it (rounded to the
   nearest offset); a commit older than the first observation takes the first one (an upper
   bound: lag is overestimated rather than underestimated), a commit after the last takes
   the last. The lag is never below 0, as in Burrow. No observation at all: unknown (null).
4. :func:`update_windows` applies Burrow's storage rule (``lag_rules.store_commit``) to each
   group-partition's window; a tombstone empties the window (the partition is forgotten).
   :func:`forget_partitions` drops the windows of deleted topics (Burrow's ``deleteTopic``).
5. :func:`partition_lag` evaluates each window with Burrow's rules
   (``lag_rules.evaluate_partition_status``): committed offset (the newest commit), end offset,
   log start offset, ``offset_lag`` = end - committed (never below 0; -1 when no end offset is
   known: the partition is then OK, as Burrow evaluates a partition without broker offset
   with a current lag of 0), and the status.
6. :func:`time_lag_requests` names the records whose timestamps the job should fetch (the next
   unconsumed record of each lagging partition, largest lag first, at most a limit);
   :func:`with_time_lag` turns the fetched timestamps into ``time_lag_seconds``: now - the
   timestamp of the record at the committed offset (at the log start when the committed
   offset is below it), 0 without lag, null when unknown.
7. :func:`with_retention_risk` flags partitions whose unconsumed records are about to be, or
   already were, deleted by retention (see the function).
8. :func:`group_lag` rolls partitions up per group with Burrow's group status.

Decoding and the per-window rules run as Python (the codec and the rules are Python); the
rest is Spark SQL. Every function is pure: no reads, no writes, time passed in.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from log_formats.offset_commit_records import (
    OFFSET_COMMIT_KEY_VERSIONS,
    OffsetSchemaError,
    decode_key,
    decode_offset_commit_value,
    key_version,
)
from log_formats.topic_names import split_qualified_name
from spark_pipelines.transforms.lag_rules import (
    DEFAULT_MIN_DISTANCE_MS,
    DEFAULT_MINIMUM_COMPLETE,
    DEFAULT_WINDOW_SIZE,
    ERROR,
    OK,
    SEVERITY,
    WARNING,
    CommitEntry,
    LagRuleError,
    evaluate_partition_status,
    lag_at,
    store_commit,
)

KIND_COMMIT = "commit"
KIND_TOMBSTONE = "tombstone"
KIND_GROUP_RECORD = "group_record"
KIND_UNDECODABLE = "undecodable"
RECORD_KINDS = (KIND_COMMIT, KIND_TOMBSTONE, KIND_GROUP_RECORD, KIND_UNDECODABLE)

PARTITION_KEY = ("tenant_id", "topic", "partition")  # one partition of a tenant's topic
GROUP_PARTITION_KEY = ("tenant_id", "group", "topic", "partition")  # one group's window
GROUP_KEY = ("tenant_id", "group")

_DECODED_FIELDS = StructType(
    [
        StructField("kind", StringType(), False),
        StructField("tenant_id", StringType(), True),
        StructField("group", StringType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("committed_offset", LongType(), True),
        StructField("commit_timestamp_ms", LongType(), True),
        StructField("problem", StringType(), True),
    ]
)
# decode_offset_records: where each record came from, then the decoded fields.
DECODED_SCHEMA = StructType([StructField("source_partition", IntegerType(), True), StructField("source_offset", LongType(), True), *_DECODED_FIELDS.fields])
# A commit (committed_offset set) or a tombstone (committed_offset and commit_timestamp_ms null).
# ``commit_order`` is Burrow's Order: the offset of the commit's record in __consumer_offsets.
COMMIT_SCHEMA = StructType(
    [
        StructField("tenant_id", StringType(), False),
        StructField("group", StringType(), False),
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("committed_offset", LongType(), True),
        StructField("commit_timestamp_ms", LongType(), True),
        StructField("commit_order", LongType(), False),
    ]
)
COMMIT_WITH_LAG_SCHEMA = StructType([*COMMIT_SCHEMA.fields, StructField("lag_at_commit", LongType(), True)])
# One slot of a window, oldest first by ``slot``; ``last_commit_ms`` (the same on every slot of
# a window) is the time of the newest commit stored, which a merged slot's timestamp is not.
WINDOW_SCHEMA = StructType(
    [
        StructField("tenant_id", StringType(), False),
        StructField("group", StringType(), False),
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("slot", IntegerType(), False),
        StructField("committed_offset", LongType(), False),
        StructField("commit_timestamp_ms", LongType(), False),
        StructField("commit_order", LongType(), False),
        StructField("lag_at_commit", LongType(), True),
        StructField("last_commit_ms", LongType(), False),
    ]
)
# One observation of a partition's end offset (its high watermark) at a time.
END_OFFSET_SCHEMA = StructType(
    [
        StructField("tenant_id", StringType(), False),
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("observed_at_ms", LongType(), False),
        StructField("end_offset", LongType(), False),
    ]
)
# What the brokers said of a partition this run; null offsets when they could not tell.
PARTITION_OFFSETS_SCHEMA = StructType(
    [
        StructField("tenant_id", StringType(), False),
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("end_offset", LongType(), True),
        StructField("log_start_offset", LongType(), True),
    ]
)
# The timestamp of the first record at or after ``offset`` (the next unconsumed one).
RECORD_TIMESTAMP_SCHEMA = StructType(
    [
        StructField("tenant_id", StringType(), False),
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("offset", LongType(), False),
        StructField("timestamp_ms", LongType(), False),
    ]
)
# partition_lag's columns, then with_time_lag's and with_retention_risk's.
PARTITION_LAG_COLUMNS = (
    "tenant_id",
    "group",
    "topic",
    "partition",
    "committed_offset",
    "end_offset",
    "log_start_offset",
    "offset_lag",
    "status",
    "last_commit_ms",
    "next_offset",
)
GROUP_LAG_COLUMNS = (
    "tenant_id",
    "group",
    "status",
    "max_lag",
    "total_lag",
    "max_time_lag_seconds",
    "partition_count",
    "retention_risk",
    "worst_topic",
    "worst_partition",
    "worst_status",
)
DEFAULT_RETENTION_RISK_FRACTION = 0.1  # with_retention_risk: the oldest tenth of the retained log


# ---------------------------------------------------------------------- 1. decoding


def decode_offset_record(key: bytes | bytearray | None, value: bytes | bytearray | None) -> tuple:
    """One ``__consumer_offsets`` record -> the fields of ``_DECODED_FIELDS`` (kind first).

    A commit of a group without a tenant (standalone or internal) decodes with tenant id "".
    """
    if key is None:
        return (KIND_UNDECODABLE, None, None, None, None, None, None, "a record without a key")
    try:
        if key_version(bytes(key)) not in OFFSET_COMMIT_KEY_VERSIONS:
            return (KIND_GROUP_RECORD, None, None, None, None, None, None, None)
        commit_key = decode_key(bytes(key))
        decoded = None if value is None else decode_offset_commit_value(bytes(value))
    except OffsetSchemaError as error:
        return (KIND_UNDECODABLE, None, None, None, None, None, None, str(error))
    assert commit_key is not None  # key versions 0 and 1 are commits
    tenant_id, group = split_qualified_name(commit_key.group)
    _, topic = split_qualified_name(commit_key.topic)
    if decoded is None:
        return (KIND_TOMBSTONE, tenant_id, group, topic, commit_key.partition, None, None, None)
    return (KIND_COMMIT, tenant_id, group, topic, commit_key.partition, decoded.offset, decoded.commit_timestamp, None)


def decode_offset_records(records: DataFrame) -> DataFrame:
    """``__consumer_offsets`` records (``key``, ``value``, ``partition``, ``offset``) -> DECODED_SCHEMA rows."""
    decode = F.udf(decode_offset_record, _DECODED_FIELDS, useArrow=False)
    decoded = records.select(
        F.col("partition").cast("int").alias("source_partition"),
        F.col("offset").cast("long").alias("source_offset"),
        decode(F.col("key"), F.col("value")).alias("decoded"),
    )
    return decoded.select("source_partition", "source_offset", "decoded.*")


def commit_events(decoded: DataFrame) -> DataFrame:
    """The commits and tombstones of tenants' groups (COMMIT_SCHEMA): group records, undecodable
    records and groups without a tenant are left out (the job counts them)."""
    wanted = F.col("kind").isin(KIND_COMMIT, KIND_TOMBSTONE) & (F.coalesce(F.col("tenant_id"), F.lit("")) != "")
    return decoded.where(wanted).select(
        "tenant_id", "group", "topic", "partition", "committed_offset", "commit_timestamp_ms", F.col("source_offset").alias("commit_order")
    )


# ---------------------------------------------------------------------- 2. end offsets over time


def append_end_offsets(history: DataFrame, observations: DataFrame, window_size: int = DEFAULT_WINDOW_SIZE) -> DataFrame:
    """END_OFFSET_SCHEMA history plus ``observations`` (same schema), the newest ``window_size`` per partition."""
    _check_window_size(window_size)
    newest_first = Window.partitionBy(*PARTITION_KEY).orderBy(F.col("observed_at_ms").desc())
    combined = history.select(*END_OFFSET_SCHEMA.fieldNames()).unionByName(observations.select(*END_OFFSET_SCHEMA.fieldNames()))
    deduplicated = combined.dropDuplicates([*PARTITION_KEY, "observed_at_ms"])
    return deduplicated.withColumn("rank", F.row_number().over(newest_first)).where(F.col("rank") <= window_size).drop("rank")


# ---------------------------------------------------------------------- 3. lag at each commit


def _interpolated_lags(commits: pd.DataFrame, history: pd.DataFrame) -> pd.DataFrame:
    if commits.empty:
        return pd.DataFrame({name: pd.Series(dtype="object") for name in COMMIT_WITH_LAG_SCHEMA.fieldNames()})
    commits = commits.reset_index(drop=True)
    lags: list[int | None] = [None] * len(commits)
    if not history.empty:
        ordered = history.sort_values("observed_at_ms")
        times = ordered["observed_at_ms"].to_numpy(dtype="float64")
        ends = ordered["end_offset"].to_numpy(dtype="float64")
        for index, (offset, timestamp) in enumerate(zip(commits["committed_offset"], commits["commit_timestamp_ms"])):
            if pd.isna(offset) or pd.isna(timestamp):
                continue  # a tombstone
            end_offset = int(np.rint(np.interp(float(timestamp), times, ends)))
            lags[index] = lag_at(end_offset, int(offset))
    result = commits[list(COMMIT_SCHEMA.fieldNames())].copy()
    result["lag_at_commit"] = pd.array(lags, dtype="Int64")
    return result


def lag_at_commit(commits: DataFrame, end_offsets: DataFrame) -> DataFrame:
    """COMMIT_SCHEMA rows with ``lag_at_commit`` (COMMIT_WITH_LAG_SCHEMA), estimated from the
    END_OFFSET_SCHEMA history as the module docstring states; null for tombstones and for
    partitions without any observation."""

    def per_partition(commit_rows: pd.DataFrame, history_rows: pd.DataFrame) -> pd.DataFrame:
        return _interpolated_lags(commit_rows, history_rows)

    return commits.groupBy(*PARTITION_KEY).cogroup(end_offsets.groupBy(*PARTITION_KEY)).applyInPandas(per_partition, schema=COMMIT_WITH_LAG_SCHEMA)


# ---------------------------------------------------------------------- 4. windows


def _optional_int(value: object) -> int | None:
    return None if value is None or pd.isna(value) else int(value)  # type: ignore[arg-type]


def apply_commits(
    window: list[CommitEntry], last_commit_ms: int | None, commits: pd.DataFrame, *, window_size: int, min_distance_ms: int
) -> tuple[list[CommitEntry], int | None]:
    """One window (oldest first) and its newest commit time after ``commits`` (COMMIT_WITH_LAG_SCHEMA
    columns, any order): Burrow's storage rule per commit in ``commit_order``; a tombstone empties it."""
    for row in commits.sort_values("commit_order").itertuples(index=False):
        order = int(row.commit_order)
        if window and order <= window[-1].commit_order:
            continue  # already stored: a re-read
        if _optional_int(row.committed_offset) is None:
            window, last_commit_ms = [], None
            continue
        timestamp = int(row.commit_timestamp_ms)
        window = store_commit(
            window,
            CommitEntry(int(row.committed_offset), timestamp, order, _optional_int(row.lag_at_commit)),
            window_size=window_size,
            min_distance_ms=min_distance_ms,
        )
        last_commit_ms = timestamp if last_commit_ms is None else max(last_commit_ms, timestamp)
    return window, last_commit_ms


def update_windows(
    windows: DataFrame, commits: DataFrame, *, window_size: int = DEFAULT_WINDOW_SIZE, min_distance_ms: int = DEFAULT_MIN_DISTANCE_MS
) -> DataFrame:
    """WINDOW_SCHEMA rows after the COMMIT_WITH_LAG_SCHEMA ``commits``; windows without new commits stay as they are."""
    _check_window_size(window_size)
    if min_distance_ms < 0:
        raise LagRuleError(f"min-distance must not be negative, got {min_distance_ms} ms")
    names = WINDOW_SCHEMA.fieldNames()

    def per_window(window_rows: pd.DataFrame, commit_rows: pd.DataFrame) -> pd.DataFrame:
        source = window_rows if not window_rows.empty else commit_rows
        if source.empty:
            return pd.DataFrame(columns=names)
        key = {name: source.iloc[0][name] for name in GROUP_PARTITION_KEY}
        window: list[CommitEntry] = []
        last_commit_ms: int | None = None
        if not window_rows.empty:
            ordered = window_rows.sort_values("slot")
            window = [
                CommitEntry(int(row.committed_offset), int(row.commit_timestamp_ms), int(row.commit_order), _optional_int(row.lag_at_commit))
                for row in ordered.itertuples(index=False)
            ]
            last_commit_ms = int(ordered["last_commit_ms"].max())
        if not commit_rows.empty:
            window, last_commit_ms = apply_commits(window, last_commit_ms, commit_rows, window_size=window_size, min_distance_ms=min_distance_ms)
        rows = [
            {
                **key,
                "slot": slot,
                "committed_offset": entry.offset,
                "commit_timestamp_ms": entry.timestamp_ms,
                "commit_order": entry.commit_order,
                "lag_at_commit": entry.lag,
                "last_commit_ms": last_commit_ms,
            }
            for slot, entry in enumerate(window)
        ]
        frame = pd.DataFrame(rows, columns=names)
        frame["lag_at_commit"] = frame["lag_at_commit"].astype("Int64")
        return frame

    return windows.groupBy(*GROUP_PARTITION_KEY).cogroup(commits.groupBy(*GROUP_PARTITION_KEY)).applyInPandas(per_window, schema=WINDOW_SCHEMA)


def forget_partitions(frame: DataFrame, partitions: DataFrame) -> DataFrame:
    """``frame`` without the rows of the (tenant_id, topic, partition) keys in ``partitions`` (deleted topics)."""
    return frame.join(partitions.select(*PARTITION_KEY).distinct(), on=list(PARTITION_KEY), how="left_anti")


# ---------------------------------------------------------------------- 5. evaluation


def partition_lag(
    windows: DataFrame,
    partition_offsets: DataFrame,
    end_offsets: DataFrame,
    *,
    now_ms: int,
    window_size: int = DEFAULT_WINDOW_SIZE,
    minimum_complete: float = DEFAULT_MINIMUM_COMPLETE,
) -> DataFrame:
    """One row per window (PARTITION_LAG_COLUMNS): the newest commit against PARTITION_OFFSETS_SCHEMA
    ``partition_offsets`` (-1 where unknown), the status by Burrow's rules over the window and
    the END_OFFSET_SCHEMA history (its recent end offsets), and ``next_offset``: where the
    group's next record is, the committed offset or the log start offset when that is higher."""
    _check_window_size(window_size)

    def status_of(
        offsets: list[int], timestamps: list[int], orders: list[int], lags: list[int | None], broker_offsets: list[int] | None, current_lag: int
    ) -> str:
        entries = [CommitEntry(offset, timestamp, order, lag) for offset, timestamp, order, lag in zip(offsets, timestamps, orders, lags)]
        return evaluate_partition_status(entries, broker_offsets or [], current_lag, now_ms, window_size=window_size, minimum_complete=minimum_complete)

    status = F.udf(status_of, StringType(), useArrow=False)
    slots = windows.groupBy(*GROUP_PARTITION_KEY).agg(
        F.sort_array(F.collect_list(F.struct("slot", "committed_offset", "commit_timestamp_ms", "commit_order", "lag_at_commit"))).alias("entries"),
        F.max("last_commit_ms").alias("last_commit_ms"),
    )
    recent = end_offsets.groupBy(*PARTITION_KEY).agg(F.collect_list("end_offset").alias("broker_offsets"))
    joined = slots.join(partition_offsets.select(*PARTITION_OFFSETS_SCHEMA.fieldNames()), on=list(PARTITION_KEY), how="left").join(
        recent, on=list(PARTITION_KEY), how="left"
    )
    committed = F.element_at("entries", -1)["committed_offset"]
    end_offset = F.coalesce(F.col("end_offset"), F.lit(-1).cast("long"))
    log_start = F.coalesce(F.col("log_start_offset"), F.lit(-1).cast("long"))
    offset_lag = F.when(F.col("end_offset").isNull(), F.lit(-1).cast("long")).otherwise(F.greatest(F.col("end_offset") - committed, F.lit(0).cast("long")))
    evaluated = joined.select(
        *GROUP_PARTITION_KEY,
        "entries",
        "broker_offsets",
        "last_commit_ms",
        committed.alias("committed_offset"),
        end_offset.alias("end_offset"),
        log_start.alias("log_start_offset"),
        offset_lag.alias("offset_lag"),
    )
    return evaluated.select(
        *GROUP_PARTITION_KEY,
        "committed_offset",
        "end_offset",
        "log_start_offset",
        "offset_lag",
        status(
            F.transform("entries", lambda entry: entry["committed_offset"]),
            F.transform("entries", lambda entry: entry["commit_timestamp_ms"]),
            F.transform("entries", lambda entry: entry["commit_order"]),
            F.transform("entries", lambda entry: entry["lag_at_commit"]),
            F.col("broker_offsets"),
            F.greatest(F.col("offset_lag"), F.lit(0).cast("long")),
        ).alias("status"),
        "last_commit_ms",
        F.greatest(F.col("committed_offset"), F.col("log_start_offset")).alias("next_offset"),
    )


# ---------------------------------------------------------------------- 6. time lag


def time_lag_requests(partitions: DataFrame, limit: int) -> DataFrame:
    """The next unconsumed records (tenant_id, topic, partition, offset) of lagging partitions,
    largest lag first, at most ``limit``; several groups at one offset share one request."""
    if limit < 0:
        raise ValueError(f"the time-lag request limit must not be negative, got {limit}")
    lagging = partitions.where(F.col("offset_lag") > 0).groupBy("tenant_id", "topic", "partition", F.col("next_offset").alias("offset"))
    ranked = lagging.agg(F.max("offset_lag").alias("lag")).orderBy(F.col("lag").desc(), "tenant_id", "topic", "partition", "offset")
    return ranked.limit(limit).drop("lag")


def with_time_lag(partitions: DataFrame, record_timestamps: DataFrame, *, now_ms: int) -> DataFrame:
    """``partitions`` with ``time_lag_seconds``: how old the next unconsumed record is (now -
    its RECORD_TIMESTAMP_SCHEMA timestamp, never below 0); 0.0 without lag; null when the lag
    or the timestamp is unknown."""
    timestamps = record_timestamps.select(*PARTITION_KEY, F.col("offset").alias("next_offset"), "timestamp_ms")
    joined = partitions.join(timestamps, on=[*PARTITION_KEY, "next_offset"], how="left")
    age = F.greatest((F.lit(now_ms) - F.col("timestamp_ms")) / 1000.0, F.lit(0.0))
    time_lag = (
        F.when(F.col("offset_lag") == 0, F.lit(0.0))
        .when(F.col("offset_lag") < 0, F.lit(None).cast("double"))
        .when(F.col("timestamp_ms").isNotNull(), age)
        .otherwise(F.lit(None).cast("double"))
    )
    return joined.withColumn("time_lag_seconds", time_lag.cast("double")).drop("timestamp_ms")


# ---------------------------------------------------------------------- 7. retention risk


def with_retention_risk(partitions: DataFrame, fraction: float = DEFAULT_RETENTION_RISK_FRACTION) -> DataFrame:
    """``partitions`` with ``retention_risk``: the group's unconsumed records are next in line for deletion.

    True when the committed offset is below the log start offset (records it never read are
    already gone), or when the group lags and its committed offset lies in the oldest
    ``fraction`` of the retained log: ``committed - log_start < fraction * (end - log_start)``.
    Retention deletes the oldest segments first, so those are the records it deletes next.
    False when either offset is unknown (-1).
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"the retention risk fraction must be between 0 and 1, got {fraction}")
    committed, end, log_start = F.col("committed_offset"), F.col("end_offset"), F.col("log_start_offset")
    known = (end >= 0) & (log_start >= 0)
    lost = committed < log_start
    oldest = (F.col("offset_lag") > 0) & ((committed - log_start) < F.lit(fraction) * (end - log_start))
    return partitions.withColumn("retention_risk", F.coalesce(known & (lost | oldest), F.lit(False)))


# ---------------------------------------------------------------------- 8. groups


def _severity(status: Column) -> Column:
    mapping = F.create_map(*[item for name, rank in SEVERITY.items() for item in (F.lit(name), F.lit(rank))])
    return mapping[status]


def group_lag(partitions: DataFrame) -> DataFrame:
    """One row per group (GROUP_LAG_COLUMNS) from partition rows with status, offset_lag,
    time_lag_seconds and retention_risk.

    ``status`` is Burrow's group status: ERROR when any partition is ERROR, STOP, STALL or
    REWIND, else WARNING when any is WARNING, else OK. ``max_lag`` / ``total_lag`` are over the
    partitions whose lag is known (0 when none is); ``max_time_lag_seconds`` over the known
    time lags (null when none). The worst partition is the one with the worst status, then the
    largest lag, then the first by topic and partition.
    """
    severity = _severity(F.col("status"))
    known_lag = F.when(F.col("offset_lag") >= 0, F.col("offset_lag"))
    worst = F.min(F.struct((-severity).alias("rank"), (-F.coalesce(known_lag, F.lit(-1))).alias("lag"), F.col("topic"), F.col("partition"), F.col("status")))
    rolled = partitions.groupBy(*GROUP_KEY).agg(
        F.max(severity).alias("severity"),
        F.coalesce(F.max(known_lag), F.lit(0).cast("long")).alias("max_lag"),
        F.coalesce(F.sum(known_lag), F.lit(0).cast("long")).alias("total_lag"),
        F.max("time_lag_seconds").alias("max_time_lag_seconds"),
        F.count(F.lit(1)).alias("partition_count"),
        F.bool_or("retention_risk").alias("retention_risk"),
        worst.alias("worst"),
    )
    status = F.when(F.col("severity") >= SEVERITY[ERROR], F.lit(ERROR)).when(F.col("severity") == SEVERITY[WARNING], F.lit(WARNING)).otherwise(F.lit(OK))
    return rolled.select(
        *GROUP_KEY,
        status.alias("status"),
        F.col("max_lag").cast("long").alias("max_lag"),
        F.col("total_lag").cast("long").alias("total_lag"),
        "max_time_lag_seconds",
        F.col("partition_count").cast("int").alias("partition_count"),
        "retention_risk",
        F.col("worst.topic").alias("worst_topic"),
        F.col("worst.partition").alias("worst_partition"),
        F.col("worst.status").alias("worst_status"),
    )


def _check_window_size(window_size: int) -> None:
    if window_size < 1:
        raise LagRuleError(f"the window size must be at least 1, got {window_size}")
