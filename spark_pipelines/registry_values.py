"""Typed columns from Schema Registry records: :func:`weir_from_avro`, the registry-aware ``from_avro``.

Spark's ``from_avro(col, jsonFormatSchema)`` reads plain Avro; records written by Confluent's
(or ``weir.schema_registry``'s) serializers carry the magic byte 0 and the writer's schema id
first. ``weir_from_avro`` reads those::

    from spark_pipelines.registry_values import weir_from_avro

    orders = spark.read.format("weir").option("subscribe", "orders")...load()
    typed = weir_from_avro(orders, "https://…/schema-registry", subject="orders-value",
                           basic_auth_user_info=f"{key}:{secret}")
    typed.select("offset", "value.id", "value.amount")

The reader schema is the subject's latest version (fetched once, on the driver) or the
``json_format_schema`` given; it decides the column's type exactly as Spark's ``from_avro`` would
(:mod:`spark_pipelines.avro_types`). Each record is read with its own writer schema (by id, fetched
once per Python worker) and resolved to the reader schema, so older versions read as the
current shape. ``column`` (default ``value``, or ``key``) is replaced by the decoded struct; the
other columns stay. Null stays null (tombstones).

``mode`` as Spark's ``from_avro``: FAILFAST (default) fails the query with one line naming the
record (``orders/0@42``: topic, partition, offset) and why (wrong magic byte, unknown schema id,
undecodable bytes); PERMISSIVE leaves null for such records. JSON Schema and Protobuf values are
not decoded here yet.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructField, StructType

from spark_pipelines.avro_types import spark_type
from spark_pipelines.source_errors import InvalidOptionError, WeirSourceError
from weir.schema_registry import SchemaRegistryClient, SchemaRegistryError
from weir.schema_registry.avro import AvroDeserializer
from weir.serialization import SerializationError

FAILFAST = "FAILFAST"
PERMISSIVE = "PERMISSIVE"


class RecordDecodeError(WeirSourceError):
    """A record's key or value could not be decoded with the registry (FAILFAST)."""

    def __init__(self, column: str, where: str, reason: str) -> None:
        super().__init__(f"weir_from_avro: cannot decode the {column} of {where}: {reason}")
        self.column = column
        self.where = where
        self.reason = reason


def weir_from_avro(
    df: DataFrame,
    schema_registry_url: str,
    *,
    subject: str | None = None,
    json_format_schema: str | None = None,
    column: str = "value",
    basic_auth_user_info: str | None = None,
    mode: str = FAILFAST,
    registry_conf: dict[str, Any] | None = None,
) -> DataFrame:
    """``df`` with ``column`` decoded into typed columns; see the module docstring.

    Give exactly one of ``subject`` (its latest version is the reader schema) and
    ``json_format_schema``. ``registry_conf`` adds SchemaRegistryClient keys (``ssl.ca.location``...).
    Raises InvalidOptionError for a bad argument, before any record is read.
    """
    normalized_mode = str(mode).upper()
    if normalized_mode not in (FAILFAST, PERMISSIVE):
        raise InvalidOptionError("mode", f"must be {FAILFAST} or {PERMISSIVE}, not {mode!r}")
    if (subject is None) == (json_format_schema is None):
        raise InvalidOptionError("subject", "give exactly one of subject and json_format_schema")
    if column not in df.columns:
        raise InvalidOptionError("column", f"the DataFrame has no column {column!r} (it has {', '.join(df.columns)})")
    conf: dict[str, Any] = {"url": schema_registry_url, **(registry_conf or {})}
    if basic_auth_user_info:
        conf.update({"basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": basic_auth_user_info})
    reader = json_format_schema
    if reader is None:
        try:
            reader = SchemaRegistryClient(conf).get_latest_version(str(subject)).schema.schema_str
        except SchemaRegistryError as error:
            raise InvalidOptionError("subject", f"{subject!r}: {error}") from error
    try:
        data_type, _ = spark_type(json.loads(str(reader)))
    except ValueError as error:
        raise InvalidOptionError("json_format_schema" if subject is None else "subject", f"not a usable Avro schema: {error}") from error
    output = StructType([StructField(field.name, data_type, True) if field.name == column else field for field in df.schema.fields])
    arrow_schema = to_arrow_schema(output)
    decoder = _Decoder(conf, str(reader), column, normalized_mode == PERMISSIVE, arrow_schema)
    return df.mapInArrow(decoder, output)


class _Decoder:
    """The function ``mapInArrow`` runs in each Python worker: one registry client per call (partition)."""

    def __init__(self, conf: dict[str, Any], reader: str, column: str, permissive: bool, arrow_schema: pa.Schema) -> None:
        self.conf = conf
        self.reader = reader
        self.column = column
        self.permissive = permissive
        self.arrow_schema = arrow_schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        deserializer = AvroDeserializer(SchemaRegistryClient(self.conf), self.reader)
        target = self.arrow_schema.field(self.column).type
        for batch in batches:
            decoded = pa.array([self._decode(deserializer, batch, row) for row in range(batch.num_rows)], type=target)
            arrays = [decoded if name == self.column else batch.column(name) for name in self.arrow_schema.names]
            yield pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)

    def _decode(self, deserializer: AvroDeserializer, batch: pa.RecordBatch, row: int) -> Any:
        value = batch.column(self.column)[row].as_py()
        if value is None:
            return None
        try:
            return deserializer(value)
        except (SerializationError, SchemaRegistryError) as error:
            if self.permissive:
                return None
            raise RecordDecodeError(self.column, _where(batch, row), _reason(error)) from None


def _reason(error: Exception) -> str:
    """The first line of the error's own text (a SerializationError's KafkaError ``str()``)."""
    inner = error.args[0] if error.args else None
    text = inner.str() if hasattr(inner, "str") else str(error)
    return text.splitlines()[0] if text else type(error).__name__


def _where(batch: pa.RecordBatch, row: int) -> str:
    """``topic/partition@offset`` of the row when the DataFrame has those columns."""
    names = batch.schema.names
    if all(name in names for name in ("topic", "partition", "offset")):
        return f"{batch.column('topic')[row].as_py()}/{batch.column('partition')[row].as_py()}@{batch.column('offset')[row].as_py()}"
    return f"row {row} of a batch (no topic/partition/offset columns)"
