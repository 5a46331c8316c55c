"""The Weir DataSource: ``spark.read.format("weir")`` and ``spark.readStream.format("weir")``.

Usage (options: :mod:`spark_pipelines.source_options`; docs/spark-source.md)::

    spark.read.format("weir")
        .option("bootstrap.servers", "127.0.0.1:9092")
        .option("sasl.username", key).option("sasl.password", secret)
        .option("subscribe", "orders,payments")
        .option("startingOffsets", "earliest")           # or JSON {"orders": {"0": 23}}
        .load()

Columns and types are exactly those of Spark's Kafka source: ``key`` binary, ``value``
binary, ``topic`` string, ``partition`` int, ``offset`` long, ``timestamp`` timestamp,
``timestampType`` int (0 create time, 1 log append time), and with ``includeHeaders``
``headers array<struct<key:string,value:binary>>`` (null for a record without headers).

How a read runs. Planning (:meth:`WeirBatchReader.partitions`, in a Python worker of the
driver) resolves the selected partitions and their start and end offsets through the SDK
(Metadata, ListOffsets) once, so the read covers a fixed set of ranges however long it takes
and however much is produced meanwhile; the ranges are cut into input partitions
(:mod:`spark_pipelines.source_planning`). Each task then fetches its range's stored batches
(no bytes past its end, :mod:`spark_pipelines.source_fetch`) and decodes them with the SDK's
native codec into Arrow batches (:mod:`spark_pipelines.source_reading`).

Streaming (:class:`WeirStreamReader`): offsets are Spark-Kafka-style JSON
``{"orders": {"0": 42, "1": 17}}`` (the next offset to read per partition), kept by Spark
in the query's checkpoint; nothing is committed to the brokers. Each micro-batch reads from
the previous end to the partitions' current end offsets (at most ``maxOffsetsPerTrigger``,
shared in proportion to what each partition has waiting); partitions that appear later are
read from their earliest offset. ``trigger(availableNow=True)`` reads up to the end offsets
of when the query started, then stops.

Credentials are those of any client: a tenant's API key (``sasl.username`` /
``sasl.password``) sees that tenant's topics under their plain names, as its ACLs allow;
the control plane's ``weir.internal.token`` sees every topic, tenants' topics qualified
(``tn-…~orders``), and the internal ``__usage`` / ``__consumer_offsets``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType

from spark_pipelines.sink import WeirBatchWriter, WeirStreamWriter, parse_sink_options
from spark_pipelines.source_errors import (
    AuthenticationFailedError,
    AuthorizationFailedError,
    BrokersUnavailableError,
    DataLossError,
    InvalidOptionError,
    ReadTimeoutError,
    UnknownTopicError,
    WeirSourceError,
    one_line_errors,
    one_line_iteration,
)
from spark_pipelines.source_offsets import (
    OffsetLookup,
    PartitionKey,
    batch_ranges,
    check_named_partitions,
    from_json_offsets,
    offset_ranges,
    resolve_offsets,
    resolve_start,
    to_json_offsets,
)
from spark_pipelines.source_options import OffsetsSpec, SourceOptions, parse_options
from spark_pipelines.source_planning import OffsetRange, limit_offsets, plan_input_partitions
from spark_pipelines.source_reading import read_range

__all__ = [
    "AuthenticationFailedError",
    "AuthorizationFailedError",
    "BrokersUnavailableError",
    "DataLossError",
    "HEADERS_TYPE",
    "InvalidOptionError",
    "KAFKA_SCHEMA",
    "ReadTimeoutError",
    "UnknownTopicError",
    "WeirDataSource",
    "WeirSourceError",
    "kafka_schema",
    "resolve_offsets",
]

KAFKA_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
)
HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
_EARLIEST = OffsetsSpec("earliest")


def kafka_schema(include_headers: bool) -> StructType:
    """The columns of Spark's Kafka source, with ``headers`` last when ``include_headers``."""
    if not include_headers:
        return KAFKA_SCHEMA
    return StructType(KAFKA_SCHEMA.fields + [StructField("headers", HEADERS_TYPE)])


class WeirDataSource(DataSource):
    """``format("weir")``: batch and streaming reads of Weir topics (see the module docstring),
    and writes to them (:mod:`spark_pipelines.sink`)."""

    @classmethod
    def name(cls) -> str:
        return "weir"

    @one_line_errors
    def schema(self) -> StructType:
        include = str(self.options.get("includeHeaders", "false")).strip().lower()
        if include not in ("true", "false"):
            raise InvalidOptionError("includeHeaders", f"expected true or false, got {self.options.get('includeHeaders')!r}")
        return kafka_schema(include == "true")

    @one_line_errors
    def reader(self, schema: StructType) -> WeirBatchReader:
        options = parse_options(self.options, streaming=False)
        return WeirBatchReader(options, _checked_schema(schema, options))

    @one_line_errors
    def streamReader(self, schema: StructType) -> WeirStreamReader:
        options = parse_options(self.options, streaming=True)
        return WeirStreamReader(options, _checked_schema(schema, options))

    @one_line_errors
    def writer(self, schema: StructType, overwrite: bool) -> WeirBatchWriter:
        """``df.write.format("weir")``: :mod:`spark_pipelines.sink` (appends; a topic is never overwritten)."""
        return WeirBatchWriter(parse_sink_options(self.options, schema))

    @one_line_errors
    def streamWriter(self, schema: StructType, overwrite: bool) -> WeirStreamWriter:
        """``df.writeStream.format("weir")``: :mod:`spark_pipelines.sink`."""
        return WeirStreamWriter(parse_sink_options(self.options, schema))


def _checked_schema(schema: StructType, options: SourceOptions) -> pa.Schema:
    """The Arrow schema tasks produce; a user-specified schema must be the source's own (as Spark's Kafka source requires)."""
    expected = kafka_schema(options.include_headers)
    if schema.simpleString() != expected.simpleString():
        raise InvalidOptionError("schema", f"the weir source has a fixed schema {expected.simpleString()}; got {schema.simpleString()}")
    return to_arrow_schema(expected, timezone="UTC")


def _read(partition: InputPartition, options: SourceOptions, arrow_schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    if not isinstance(partition, OffsetRange):
        return iter(())  # Spark's stand-in partition when planning found nothing to read
    return one_line_iteration(
        read_range(
            partition, options.client_config, arrow_schema, fail_on_data_loss=options.fail_on_data_loss, poll_timeout_seconds=options.poll_timeout_seconds
        )
    )


def _plan(options: SourceOptions, ranges: list[OffsetRange]) -> list[OffsetRange]:
    return plan_input_partitions(ranges, min_partitions=options.min_partitions, max_records_per_partition=options.max_records_per_partition)


class WeirBatchReader(DataSourceReader):
    """A batch read: ranges fixed at planning time, one task per (piece of a) range."""

    def __init__(self, options: SourceOptions, arrow_schema: pa.Schema) -> None:
        self._options = options
        self._arrow_schema = arrow_schema

    @one_line_errors
    def partitions(self) -> list[InputPartition]:
        return list(_plan(self._options, batch_ranges(self._options)))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition, self._options, self._arrow_schema)


class WeirStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A stream: micro-batches between Kafka-style JSON offsets (see the module docstring).

    Spark keeps one instance per query in a long-lived planner process, so the
    availableNow target survives between calls.
    """

    def __init__(self, options: SourceOptions, arrow_schema: pa.Schema) -> None:
        self._options = options
        self._arrow_schema = arrow_schema
        self._target: dict[PartitionKey, int] | None = None  # end offsets of an availableNow run

    @one_line_errors
    def initialOffset(self) -> dict[str, dict[str, int]]:
        with OffsetLookup(self._options.client_config) as lookup:
            keys = lookup.partitions(self._options.selection)
            check_named_partitions(self._options, keys)
            bounds = lookup.bounds(keys)
        return to_json_offsets(resolve_start(self._options.starting, keys, bounds, fail_on_data_loss=self._options.fail_on_data_loss))

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self._options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit is not None else ReadAllAvailable()

    @one_line_errors
    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest()

    @one_line_errors
    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, dict[str, int]]:
        starts = from_json_offsets(start)
        latest = dict(self._target) if self._target is not None else self._latest()
        for key, offset in sorted(starts.items()):
            if key not in latest:
                self._lost(key, f"the partition is gone (it was read up to offset {offset})")
            elif latest[key] < offset:
                # Without failOnDataLoss the end stays below the start: partitions() reads the new log from 0.
                self._lost(key, f"the end offset {latest[key]} is below offset {offset}, read already (was the topic recreated?)")
        if isinstance(limit, ReadMaxRows):
            latest = limit_offsets(starts, latest, limit.max_rows)
        return to_json_offsets(latest)

    @one_line_errors
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        starts = from_json_offsets(start)
        ends = from_json_offsets(end)
        new = [key for key in ends if key not in starts]
        if new:
            # Partitions that appeared since the last batch: from their earliest offset, as Spark's Kafka source does.
            with OffsetLookup(self._options.client_config) as lookup:
                bounds = lookup.bounds(new)
            starts.update(resolve_start(_EARLIEST, new, bounds, fail_on_data_loss=True))
        for key, until in ends.items():
            if starts[key] > until:
                starts[key] = 0  # recreated topic with failOnDataLoss false: read the new log from its start
        return list(_plan(self._options, offset_ranges(starts, ends)))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition, self._options, self._arrow_schema)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the offsets live in Spark's checkpoint, and the source holds no broker resources."""

    def _latest(self) -> dict[PartitionKey, int]:
        with OffsetLookup(self._options.client_config) as lookup:
            keys = lookup.partitions(self._options.selection)
            bounds = lookup.bounds(keys)
        return {key: bound.latest for key, bound in bounds.items()}

    def _lost(self, key: PartitionKey, detail: str) -> None:
        if self._options.fail_on_data_loss:
            raise DataLossError(key[0], key[1], detail)
