"""Usage metering as pure DataFrame functions: ``__usage`` records -> hourly and daily usage.

The input is what ``spark.read.format("weir")`` returns for the internal topic ``__usage``
(Kafka's columns: ``value`` binary, ``partition``, ``offset``...). Each record value is one
row of the schema "weir.usage/1" (``log_formats/usage_records.py``, shared with the brokers
that write it), in its binary encoding (what brokers write) or its JSON one (what they wrote
before; stored records keep their meaning). The functions, chained in this order:

1. :func:`parse_usage_records` decodes every value: binary rows a whole Arrow batch at a time
   with numpy over the bytes at the positions of ``BINARY_LAYOUT`` (``mapInArrow`` with
   :mod:`spark_pipelines.usage_binary`), JSON rows with ``from_json`` and the shared Spark
   schema; keeping the record's ``__usage`` partition and offset, and names what is wrong with
   a row in ``problem`` (null when the row is valid).
2. :func:`usage_problems` keeps the invalid rows with their position and text (the job
   stores them aside and counts them in its result: a row is never dropped unseen) and
   :func:`valid_usage_rows` keeps the valid ones with the columns of the schema plus ``date``
   (UTC day of the window start, the partition column of the stored raw rows).
3. :func:`deduplicate_usage_rows` drops rows re-sent by a broker: one row per identity
   ``(node_id, incarnation, sequence, kind, tenant_id, topic, partition)``. Counters are
   deltas per window, so any duplicate left in would be counted twice. The job does steps 2
   and 3 in one aggregation instead (:func:`deduplicate_usage_records`, then
   :func:`usable_rows`), which also counts the records read and the unusable ones.
4. :func:`window_usage` collapses partitions and brokers: one row per tenant, topic and
   metering window with the window's traffic and the topic's storage.
5. :func:`usage_aggregates` rolls the windows up into hour or day buckets (:func:`usage_sums`
   with the sums a day is rolled up from, :func:`days_from_hours` the day from its hours).

Definitions (every bucket is a UTC hour ``[h, h+1h)`` or day ``[d, d+1d)`` of wall clock; a
window belongs to the bucket containing its ``window_start_ms``, whole, even in the rare
case of an interval that does not divide an hour and a window crossing the boundary):

* ``bytes_in``, ``bytes_out``, ``records_in``, ``records_out``, ``produce_requests``,
  ``fetch_requests``, ``throttle_time_ms``: sums of the traffic rows in the bucket over all
  partitions and brokers. A request touching three partitions counts as three
  ``produce_requests`` (the brokers count requests per partition).
* Storage: for each window, the topic's size is the sum of ``log_size_bytes`` over its
  partitions (when two brokers report the same partition and window, as around a leader
  change, the larger report counts once). ``storage_bytes_peak`` is the largest topic size of
  the windows in the bucket; ``storage_bytes_avg`` the mean topic size over the windows in the
  bucket that have storage reports (rounded half up to whole bytes). 0 when none.
* ``partition_hours``: the sum, over the distinct (partition, window) pairs of the topic with a
  storage report in the bucket, of the window's length (``window_end_ms - window_start_ms``,
  the longest report when two brokers report the pair) in hours. A 3-partition topic that
  existed the whole hour has 3.0 partition-hours for that hour, 72.0 for a whole day.

Apart from the binary decoding (numpy over whole Arrow batches, no Python per row), only Spark
SQL column functions are used (no Python UDF): everything else runs in the JVM.
"""

from __future__ import annotations

from typing import Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from log_formats.usage_records import (
    BINARY_HEADER_SIZE,
    FIELD_TYPES,
    KIND_CODES,
    KIND_PARTITION,
    KIND_TRAFFIC,
    SCHEMA_V1,
    SPARK_SCHEMA_DDL,
    STRING_FIELDS_IN_ORDER,
)
from spark_pipelines.usage_binary import (
    ASCII_COLUMN,
    BINARY_COLUMN,
    DECODED_COLUMNS,
    DECODED_SCHEMA_DDL,
    EXPECTED_SIZE_COLUMN,
    KIND_CODE_COLUMN,
    SIZE_COLUMN,
    UNDECODED_COLUMN,
    decode_usage_batches,
)

KINDS = (KIND_TRAFFIC, KIND_PARTITION)

# The identity of a row: a broker re-sends an unacknowledged window with the same identity.
IDENTITY_COLUMNS = ("node_id", "incarnation", "sequence", "kind", "tenant_id", "topic", "partition")
# Counters of a traffic row, summed as they are into every bucket.
TRAFFIC_COLUMNS = ("bytes_in", "bytes_out", "records_in", "records_out", "produce_requests", "fetch_requests", "throttle_time_ms")
# The columns of a stored raw usage row: every field of the schema (then the partition column).
RAW_COLUMNS = tuple(FIELD_TYPES)
DATE_COLUMN = "date"
# Spark schema (DDL) of the stored raw rows, for reading them back without inference.
HOUR_COLUMN = "hour"  # the UTC hour of day (0-23) of the window start: raw rows are stored by date and hour
RAW_SCHEMA_DDL = f"{SPARK_SCHEMA_DDL}, {DATE_COLUMN} DATE, {HOUR_COLUMN} INT"
# Where a parsed row came from and its text, kept until validation so that a problem can name the record.
SOURCE_COLUMNS = ("source_partition", "source_offset", "source_value")
# Columns of deduplicate_usage_records: the records a row stands for, and where an unusable record
# is (both null on usable rows: an unusable record is a group of its own, found by its position).
COPIES_COLUMN = "copies"
UNUSABLE_COLUMNS = ("unusable_partition", "unusable_offset")
GROUP_COLUMNS = ("tenant_id", "topic")
# The columns of an aggregate, in this order (``bucket_start_ms`` is the bucket start in epoch ms).
AGGREGATE_COLUMNS = (
    "tenant_id",
    "topic",
    "bucket_start",
    "bucket_start_ms",
    *TRAFFIC_COLUMNS,
    "storage_bytes_avg",
    "storage_bytes_peak",
    "partition_hours",
    DATE_COLUMN,
)
# Sums kept with the stored hour buckets so that a day is rolled up from its hours (:func:`days_from_hours`).
ROLLUP_COLUMNS = ("storage_bytes_sum", "storage_windows", "partition_ms")
# Spark schema (DDL) of the stored hour and day buckets (``hourly/``, ``daily/``), for reading them back.
STORED_AGGREGATE_SCHEMA_DDL = (
    "tenant_id STRING, topic STRING, bucket_start TIMESTAMP, "
    + ", ".join(f"{name} BIGINT" for name in TRAFFIC_COLUMNS)
    + ", storage_bytes_avg BIGINT, storage_bytes_peak BIGINT, partition_hours DOUBLE, "
    + ", ".join(f"{name} BIGINT" for name in ROLLUP_COLUMNS)
    + f", {DATE_COLUMN} DATE"
)

MILLISECONDS_PER_HOUR = 3_600_000
MILLISECONDS_PER_DAY = 86_400_000
Granularity = Literal["hour", "day"]
BUCKET_MILLISECONDS: dict[str, int] = {"hour": MILLISECONDS_PER_HOUR, "day": MILLISECONDS_PER_DAY}


class UnknownGranularityError(ValueError):
    """A granularity other than "hour" or "day" was asked for."""

    def __init__(self, granularity: object) -> None:
        super().__init__(f"granularity must be 'hour' or 'day', got {granularity!r}")
        self.granularity = granularity


def parse_usage_records(records: DataFrame) -> DataFrame:
    """Decode ``__usage`` records (columns ``value``, ``partition``, ``offset`` as the weir source
    returns them) into one row per record: ``source_partition``, ``source_offset``,
    ``source_value`` (the value as text, or ``0x`` and its hex digits for a binary row, kept for
    unusable rows only: null when the row is fine), every field of the schema, and ``problem``
    (why the row is unusable, null when it is fine). Rows of both encodings give the same
    columns; each value is decoded by the branch of its encoding only."""
    positioned = records.select(F.col("partition").alias("source_partition"), F.col("offset").alias("source_offset"), "value")
    # Binary rows are decoded a whole Arrow batch at a time with numpy in the Python workers
    # (spark_pipelines.usage_binary); JSON rows come back undecoded, for from_json below. The
    # decoded columns are renamed so that they cannot clash with the fields of the row built from them.
    arrow = positioned.mapInArrow(decode_usage_batches, DECODED_SCHEMA_DDL)
    decoded = arrow.select(
        *(F.col(f"`{name}`").alias(name if name in _KEPT_COLUMNS else _decoded_column(name)) for name in DECODED_COLUMNS),
    )
    # The row's fields become columns through a generator (inline of a one-item array), not
    # through ``row.<field>`` selections: the optimiser may inline a projection into the next one,
    # and an aggregation over ``row.<field>`` then decoded the JSON once per field (a
    # deduplication straight over the parsed records cost 7 times the CPU). A generator is never
    # inlined, so every value is decoded exactly once whatever is built on the result. A value
    # that is neither binary nor JSON decodes to a row of nulls.
    undecoded = F.col(UNDECODED_COLUMN)
    row = F.when(F.col(BINARY_COLUMN), _binary_row()).otherwise(F.from_json(undecoded.cast("string"), _PARSED_SCHEMA_DDL))
    flat = decoded.select(*_KEPT_COLUMNS, F.inline(F.array(row))).withColumn("problem", _problem())
    text = F.when(F.col(BINARY_COLUMN), F.concat(F.lit("0x"), F.hex(undecoded))).otherwise(undecoded.cast("string"))
    return flat.select(
        "source_partition",
        "source_offset",
        F.when(F.col("problem").isNotNull(), text).alias("source_value"),
        *RAW_COLUMNS,
        "problem",
    )


# What is wrong with a binary row's framing (null in JSON rows), decoded beside the schema's fields.
_BINARY_PROBLEM = "__binary_problem"
_PARSED_SCHEMA_DDL = f"{SPARK_SCHEMA_DDL}, `{_BINARY_PROBLEM}` STRING"
# Columns of the Arrow decoding kept beside the row's fields.
_KEPT_COLUMNS = ("source_partition", "source_offset", BINARY_COLUMN, UNDECODED_COLUMN)


def _decoded_column(name: str) -> str:
    return f"__binary_{name}"


def _binary_row() -> Column:
    """A struct of :data:`_PARSED_SCHEMA_DDL`'s fields from the columns :func:`decode_usage_batch`
    decoded from a binary row (renamed by :func:`_decoded_column`)."""
    kind_code = F.col(_decoded_column(KIND_CODE_COLUMN))
    kind = (
        F.when(kind_code == F.lit(KIND_CODES[KIND_TRAFFIC]), F.lit(KIND_TRAFFIC))
        .when(kind_code == F.lit(KIND_CODES[KIND_PARTITION]), F.lit(KIND_PARTITION))
        .otherwise(F.concat(F.lit("code "), kind_code))
    )
    fields: dict[str, Column] = {"schema": F.lit(SCHEMA_V1), "kind": kind}
    for name in FIELD_TYPES:
        if name not in fields:
            fields[name] = F.col(_decoded_column(name))
    size, expected = F.col(_decoded_column(SIZE_COLUMN)), F.col(_decoded_column(EXPECTED_SIZE_COLUMN))
    # Strings of ASCII bytes only (nearly all) are UTF-8; the others are checked here.
    utf8_problem = F.lit(None).cast("string")
    for name in reversed(STRING_FIELDS_IN_ORDER):
        utf8_problem = F.when(~F.is_valid_utf8(fields[name].cast("string")), F.lit(f"{name} of a binary row is not UTF-8")).otherwise(utf8_problem)
    fields[_BINARY_PROBLEM] = (
        F.when(size < BINARY_HEADER_SIZE, F.format_string(f"a binary row of %d bytes is shorter than its {BINARY_HEADER_SIZE}-byte header", size))
        .when(size != expected, F.format_string("a binary row of %d bytes, its header says %d", size, expected))
        .when(F.col(_decoded_column(ASCII_COLUMN)), F.lit(None).cast("string"))
        .otherwise(utf8_problem)
    )
    return F.struct(
        *(fields[name].cast(FIELD_TYPES[name]).alias(name) if name in FIELD_TYPES else fields[name].alias(name) for name in (*FIELD_TYPES, _BINARY_PROBLEM))
    )


def _problem() -> Column:
    """The first thing wrong with a decoded row, as text; null for a valid row."""
    window_start, window_end = F.col("window_start_ms"), F.col("window_end_ms")
    identity_missing = _any_null(IDENTITY_COLUMNS)
    traffic_missing = (F.col("kind") == KIND_TRAFFIC) & _any_null(TRAFFIC_COLUMNS)
    size_missing = (F.col("kind") == KIND_PARTITION) & F.col("log_size_bytes").isNull()
    return (
        F.when(F.col(_BINARY_PROBLEM).isNotNull(), F.col(_BINARY_PROBLEM))
        .when(F.col("schema").isNull(), F.lit(f"neither a binary row nor a JSON object of schema {SCHEMA_V1}"))
        .when(F.col("schema") != SCHEMA_V1, F.concat(F.lit("unknown schema "), F.col("schema")))
        .when(
            F.col("kind").isNull() | ~F.col("kind").isin(*KINDS),
            F.concat(F.lit("kind is neither traffic nor partition: "), F.coalesce(F.col("kind"), F.lit("null"))),
        )
        .when(identity_missing, F.lit("an identity field (node_id, incarnation, sequence, tenant_id, topic, partition) is missing"))
        .when(
            window_start.isNull() | window_end.isNull() | (window_end < window_start),
            F.lit("window_start_ms/window_end_ms missing or the window ends before it starts"),
        )
        .when(traffic_missing, F.lit("a traffic row without all of " + ", ".join(TRAFFIC_COLUMNS)))
        .when(size_missing, F.lit("a partition row without log_size_bytes"))
    )


def _any_null(columns: tuple[str, ...]) -> Column:
    condition = F.lit(False)
    for name in columns:
        condition = condition | F.col(name).isNull()
    return condition


def usage_problems(parsed: DataFrame) -> DataFrame:
    """The unusable rows of :func:`parse_usage_records`' output: :data:`SOURCE_COLUMNS` and ``problem``."""
    return parsed.where(F.col("problem").isNotNull()).select(*SOURCE_COLUMNS, "problem")


def valid_usage_rows(parsed: DataFrame) -> DataFrame:
    """The usable rows of :func:`parse_usage_records`' output: :data:`RAW_COLUMNS` plus ``date`` and ``hour``."""
    return _with_date_and_hour(parsed.where(F.col("problem").isNull()).select(*RAW_COLUMNS))


def _with_date_and_hour(rows: DataFrame) -> DataFrame:
    window_start = F.col("window_start_ms")
    return rows.withColumn(DATE_COLUMN, _utc_date(window_start)).withColumn(HOUR_COLUMN, (F.floor(window_start / MILLISECONDS_PER_HOUR) % 24).cast("int"))


def deduplicate_usage_rows(rows: DataFrame) -> DataFrame:
    """One row per identity (:data:`IDENTITY_COLUMNS`); a re-sent row carries the same content.

    Precondition: ``rows`` are valid rows (:func:`valid_usage_rows`), so ``schema`` is the same
    in every one. It is set again after the grouping rather than carried through it: with only
    fixed-width values to keep, Spark deduplicates with a hash aggregation instead of sorting
    every row twice (what ``dropDuplicates`` does when a string is among the kept columns).
    """
    grouped = _one_row_per_group(rows.drop("schema"), IDENTITY_COLUMNS)
    return grouped.select(*(F.lit(SCHEMA_V1).alias(name) if name == "schema" else F.col(name) for name in rows.columns))


def deduplicate_usage_records(parsed: DataFrame) -> DataFrame:
    """:func:`parse_usage_records`' output -> one row per identity of its valid rows and one row per
    unusable record, in one aggregation (one pass over the records, which the job reads once).

    Columns: those of :func:`valid_usage_rows` but ``schema``, then :data:`UNUSABLE_COLUMNS` (the
    ``__usage`` partition and offset of an unusable record, null on the rows of valid ones) and
    :data:`COPIES_COLUMN` (how many records the row stands for: the sum is the records read).
    :func:`usable_rows` of the result is ``deduplicate_usage_rows(valid_usage_rows(parsed))``;
    the problems themselves are :func:`usage_problems` of ``parsed`` (text columns would turn the
    hash aggregation into a sort of every row, so they are not carried here).
    """
    unusable = F.col("problem").isNotNull()
    positioned = parsed.select(
        *(name for name in RAW_COLUMNS if name != "schema"),
        F.when(unusable, F.col("source_partition")).alias(UNUSABLE_COLUMNS[0]),
        F.when(unusable, F.col("source_offset")).alias(UNUSABLE_COLUMNS[1]),
    )
    return _one_row_per_group(_with_date_and_hour(positioned), (*IDENTITY_COLUMNS, *UNUSABLE_COLUMNS), count_copies=True)


def usable_rows(deduplicated: DataFrame) -> DataFrame:
    """The rows of valid records in :func:`deduplicate_usage_records`' output, with the columns
    of :func:`valid_usage_rows` (``schema`` is the same in every valid row)."""
    return deduplicated.where(F.col(UNUSABLE_COLUMNS[0]).isNull()).select(
        *(F.lit(SCHEMA_V1).alias(name) if name == "schema" else F.col(name) for name in (*RAW_COLUMNS, DATE_COLUMN, HOUR_COLUMN))
    )


def _one_row_per_group(rows: DataFrame, keys: tuple[str, ...], *, count_copies: bool = False) -> DataFrame:
    """The first row of each group of ``keys`` (rows of a group are equal): the other columns are
    all fixed-width, so Spark groups with a hash aggregation. With ``count_copies``, also
    :data:`COPIES_COLUMN`, the rows of the group."""
    kept = [F.first(name).alias(name) for name in rows.columns if name not in keys]
    copies = [F.count(F.lit(1)).alias(COPIES_COLUMN)] if count_copies else []
    return rows.groupBy(*keys).agg(*kept, *copies)


def window_usage(rows: DataFrame) -> DataFrame:
    """Per tenant, topic and window (``window_start_ms``): the traffic sums, ``storage_bytes``
    (the topic's size, null when no partition reported) and ``partition_ms`` (summed lengths of
    the reported (partition, window) pairs, null likewise).

    Precondition: ``rows`` are deduplicated valid rows (:func:`deduplicate_usage_rows`).
    """
    keys = [*GROUP_COLUMNS, "window_start_ms"]
    traffic, stored = F.col("kind") == KIND_TRAFFIC, F.col("kind") == KIND_PARTITION
    # Two aggregations, no join: per partition first (the traffic rows' sums; around a leader
    # change the old and the new leader may both report a partition for the same window, and the
    # partition is there once, so it counts once: its larger report), then per window. A sum or
    # maximum over no row of a kind is null, as for a window without that kind.
    per_partition = rows.groupBy(*keys, "partition").agg(
        *(F.sum(F.when(traffic, F.col(name))).alias(name) for name in TRAFFIC_COLUMNS),
        F.max(F.when(stored, F.col("log_size_bytes"))).alias("log_size_bytes"),
        F.max(F.when(stored, F.col("window_end_ms") - F.col("window_start_ms"))).alias("window_ms"),
    )
    return per_partition.groupBy(*keys).agg(
        *(F.sum(name).cast("long").alias(name) for name in TRAFFIC_COLUMNS),
        F.sum("log_size_bytes").cast("long").alias("storage_bytes"),
        F.sum("window_ms").cast("long").alias("partition_ms"),
    )


def usage_aggregates(windows: DataFrame, granularity: Granularity) -> DataFrame:
    """Roll :func:`window_usage` rows up into ``granularity`` ("hour" or "day") buckets per
    tenant and topic; columns :data:`AGGREGATE_COLUMNS` (definitions in the module docstring).

    ``bucket_start`` is a timestamp (UTC instant), ``bucket_start_ms`` the same in epoch
    milliseconds and ``date`` its UTC date (the partition column of the stored aggregates).
    """
    return usage_sums(windows, granularity).select(*AGGREGATE_COLUMNS)


def usage_sums(windows: DataFrame, granularity: Granularity) -> DataFrame:
    """:func:`usage_aggregates` plus :data:`ROLLUP_COLUMNS`, the sums a coarser bucket is rolled up
    from (:func:`days_from_hours`): the stored hour buckets carry them."""
    if granularity not in BUCKET_MILLISECONDS:
        raise UnknownGranularityError(granularity)
    bucket_milliseconds = BUCKET_MILLISECONDS[granularity]
    bucketed = windows.withColumn("bucket_start_ms", F.floor(F.col("window_start_ms") / bucket_milliseconds).cast("long") * bucket_milliseconds)
    sums = bucketed.groupBy(*GROUP_COLUMNS, "bucket_start_ms").agg(
        *(F.coalesce(F.sum(name), F.lit(0)).cast("long").alias(name) for name in TRAFFIC_COLUMNS),
        # count, max and sum skip the windows without storage reports (null storage_bytes).
        F.coalesce(F.max("storage_bytes"), F.lit(0)).cast("long").alias("storage_bytes_peak"),
        F.coalesce(F.sum("storage_bytes"), F.lit(0)).cast("long").alias("storage_bytes_sum"),
        F.count("storage_bytes").cast("long").alias("storage_windows"),
        F.coalesce(F.sum("partition_ms"), F.lit(0)).cast("long").alias("partition_ms"),
    )
    return _with_figures(sums)


def days_from_hours(hours: DataFrame) -> DataFrame:
    """Day buckets (columns of :func:`usage_sums`) from hour buckets of :func:`usage_sums`
    (``bucket_start_ms`` or, as stored, ``bucket_start``): the same figures as from the windows,
    since every day figure is a sum, a maximum or a ratio of sums of its hours' figures."""
    hour_ms = F.col("bucket_start_ms") if "bucket_start_ms" in hours.columns else F.unix_millis(F.col("bucket_start"))
    day_ms = (F.floor(hour_ms / MILLISECONDS_PER_DAY).cast("long") * MILLISECONDS_PER_DAY).alias("bucket_start_ms")
    sums = hours.groupBy(*GROUP_COLUMNS, day_ms).agg(
        *(F.sum(name).cast("long").alias(name) for name in TRAFFIC_COLUMNS),
        F.max("storage_bytes_peak").cast("long").alias("storage_bytes_peak"),
        *(F.sum(name).cast("long").alias(name) for name in ROLLUP_COLUMNS),
    )
    return _with_figures(sums)


def _with_figures(sums: DataFrame) -> DataFrame:
    """Bucket sums -> :data:`AGGREGATE_COLUMNS` then :data:`ROLLUP_COLUMNS`."""
    average = F.when(F.col("storage_windows") > 0, F.round(F.col("storage_bytes_sum").cast("double") / F.col("storage_windows"))).otherwise(F.lit(0))
    return sums.select(
        *GROUP_COLUMNS,
        F.timestamp_millis(F.col("bucket_start_ms")).alias("bucket_start"),
        "bucket_start_ms",
        *TRAFFIC_COLUMNS,
        average.cast("long").alias("storage_bytes_avg"),
        "storage_bytes_peak",
        (F.col("partition_ms") / F.lit(float(MILLISECONDS_PER_HOUR))).cast("double").alias("partition_hours"),
        _utc_date(F.col("bucket_start_ms")).alias(DATE_COLUMN),
        *ROLLUP_COLUMNS,
    )


def hourly_usage(rows: DataFrame) -> DataFrame:
    """Hour buckets straight from deduplicated valid rows (:func:`window_usage` then :func:`usage_aggregates`)."""
    return usage_aggregates(window_usage(rows), "hour")


def daily_usage(rows: DataFrame) -> DataFrame:
    """Day buckets straight from deduplicated valid rows (:func:`window_usage` then :func:`usage_aggregates`)."""
    return usage_aggregates(window_usage(rows), "day")


def bucket_starts(rows: DataFrame, granularity: Granularity) -> DataFrame:
    """The distinct ``bucket_start_ms`` of the ``granularity`` buckets that ``rows`` (any frame
    with ``window_start_ms``) fall into: the buckets a batch of new rows affects."""
    if granularity not in BUCKET_MILLISECONDS:
        raise UnknownGranularityError(granularity)
    bucket_milliseconds = BUCKET_MILLISECONDS[granularity]
    return rows.select((F.floor(F.col("window_start_ms") / bucket_milliseconds).cast("long") * bucket_milliseconds).alias("bucket_start_ms")).distinct()


def _utc_date(epoch_milliseconds: Column) -> Column:
    """The UTC calendar date of an epoch-millisecond instant, whatever the session time zone."""
    return F.date_from_unix_date(F.floor(epoch_milliseconds / MILLISECONDS_PER_DAY).cast("int"))
