"""The records of the internal topic ``__usage``, schema ``weir.usage/1``: codec and identity.

Brokers meter their clients' traffic and append one record per row to ``__usage``; the usage
job reads them back. Both sides use this module, so the format is written down once (the
prose contract, with the meaning of every field, is ``docs/usage-schema.md``).

A record's value is one UTF-8 JSON object. Every row carries the common fields (schema,
kind, the emitting broker's node id and incarnation, the window's sequence number and
bounds, tenant, topic and partition) and the fields of its kind:

- ``traffic``: bytes and records in (Produce) and out (Fetch), requests and throttle time of
  one tenant's partition in one window; counters are deltas of that window, never totals.
- ``partition``: the size and offsets of a partition the broker leads, at the window's end.

A row's :func:`identity` is the same every time its window is sent, so a reader drops
repeated rows by identity (a broker re-sends a window it has no acknowledgement for).

:func:`decode` checks what it reads and raises a :class:`UsageRecordError` subclass naming
the problem: bytes that are not a JSON object, another schema version, a missing field or a
field of the wrong type. Fields it does not know are ignored (a later version may add some).
:data:`SPARK_SCHEMA_DDL` describes every field for Spark's ``from_json`` (no Spark import here:
brokers never import Spark).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from types import MappingProxyType
from typing import Any

USAGE_TOPIC = "__usage"  # the internal topic the rows are appended to
SCHEMA_V1 = "weir.usage/1"  # the value of every row's "schema" field
KIND_TRAFFIC = "traffic"
KIND_PARTITION = "partition"


class UsageRecordError(ValueError):
    """A ``__usage`` record that cannot be read as a row of schema v1; ``reason`` says why."""

    retriable = False

    def __init__(self, reason: str) -> None:
        super().__init__(f"invalid usage record: {reason}")
        self.reason = reason


class MalformedUsageRecordError(UsageRecordError):
    """The bytes are not UTF-8 JSON, or not a JSON object."""


class UnsupportedUsageSchemaError(UsageRecordError):
    """The record declares another schema (or none): ``schema`` holds what it declared."""

    def __init__(self, schema: object) -> None:
        super().__init__(f"schema {schema!r} is not {SCHEMA_V1!r}")
        self.schema = schema


class MissingUsageFieldError(UsageRecordError):
    """A field the row's kind requires is absent."""

    def __init__(self, field_name: str, kind: str) -> None:
        super().__init__(f"field {field_name!r} of a {kind!r} row is missing")
        self.field_name = field_name
        self.kind = kind


class InvalidUsageFieldError(UsageRecordError):
    """A field holds a value of the wrong type or out of its range."""

    def __init__(self, field_name: str, expected: str, value: object) -> None:
        super().__init__(f"field {field_name!r} must be {expected}, not {value!r}")
        self.field_name = field_name
        self.expected = expected
        self.value = value


@dataclass(frozen=True, slots=True)
class TrafficRow:
    """One tenant's client traffic to one partition in one window (kind ``traffic``)."""

    node_id: int
    incarnation: str
    sequence: int
    window_start_ms: int
    window_end_ms: int
    tenant_id: str
    topic: str
    partition: int
    bytes_in: int = 0
    records_in: int = 0
    bytes_out: int = 0
    records_out: int = 0
    produce_requests: int = 0
    fetch_requests: int = 0
    throttle_time_ms: int = 0

    kind = KIND_TRAFFIC  # class attribute: not a dataclass field


@dataclass(frozen=True, slots=True)
class PartitionRow:
    """A partition the broker leads, as it stands at the end of one window (kind ``partition``)."""

    node_id: int
    incarnation: str
    sequence: int
    window_start_ms: int
    window_end_ms: int
    tenant_id: str
    topic: str
    partition: int
    log_size_bytes: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    leader_epoch: int

    kind = KIND_PARTITION  # class attribute: not a dataclass field


UsageRow = TrafficRow | PartitionRow
Identity = tuple[int, str, int, str, str, str, int]  # (node_id, incarnation, sequence, kind, tenant_id, topic, partition)

_ROW_TYPES: Mapping[str, type[TrafficRow] | type[PartitionRow]] = MappingProxyType({KIND_TRAFFIC: TrafficRow, KIND_PARTITION: PartitionRow})
_STRING_FIELDS = frozenset({"incarnation", "tenant_id", "topic"})
# Fields that may be negative: offsets and epochs of an empty or unknown log are -1 in Kafka.
_SIGNED_FIELDS = frozenset({"log_start_offset", "log_end_offset", "high_watermark", "leader_epoch"})
_INT32_FIELDS = frozenset({"partition"})  # the rest are 64-bit

# Every field of both kinds in the JSON, with its Spark SQL type, in the order of the docs.
FIELD_TYPES: Mapping[str, str] = MappingProxyType(
    {
        "schema": "STRING",
        "kind": "STRING",
        **{
            field.name: ("STRING" if field.name in _STRING_FIELDS else "INT" if field.name in _INT32_FIELDS else "BIGINT")
            for row_type in (TrafficRow, PartitionRow)
            for field in fields(row_type)
        },
    }
)
# The Spark DDL schema of a row, for ``from_json(value, SPARK_SCHEMA_DDL)``; fields of the
# other kind read as null. Names are quoted (``partition`` is an SQL keyword).
SPARK_SCHEMA_DDL = ", ".join(f"`{name}` {sql_type}" for name, sql_type in FIELD_TYPES.items())


def identity(row: UsageRow) -> Identity:
    """The key a reader deduplicates rows by: equal for every re-sending of the same row."""
    return (row.node_id, row.incarnation, row.sequence, row.kind, row.tenant_id, row.topic, row.partition)


def to_json_object(row: UsageRow) -> dict[str, Any]:
    """The row as the JSON object that is stored (common fields first)."""
    return {"schema": SCHEMA_V1, "kind": row.kind, **asdict(row)}


def encode(row: UsageRow) -> bytes:
    """The record value of ``row``: compact UTF-8 JSON."""
    return json.dumps(to_json_object(row), separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode(data: bytes | bytearray | memoryview | str) -> UsageRow:
    """The row stored in a record value; raises a :class:`UsageRecordError` subclass naming what is wrong."""
    try:
        document = json.loads(bytes(data).decode("utf-8") if not isinstance(data, str) else data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise MalformedUsageRecordError(f"not UTF-8 JSON ({error})") from None
    if not isinstance(document, dict):
        raise MalformedUsageRecordError(f"a JSON object is expected, not {type(document).__name__}")
    return from_json_object(document)


def from_json_object(document: Mapping[str, Any]) -> UsageRow:
    """The row of a decoded JSON object (see :func:`decode` for the errors)."""
    schema = document.get("schema")
    if schema != SCHEMA_V1:
        raise UnsupportedUsageSchemaError(schema)
    kind = document.get("kind")
    row_type = _ROW_TYPES.get(kind) if isinstance(kind, str) else None
    if row_type is None:
        raise InvalidUsageFieldError("kind", f"{KIND_TRAFFIC!r} or {KIND_PARTITION!r}", kind)
    values: dict[str, Any] = {}
    for field in fields(row_type):
        if field.name not in document:
            raise MissingUsageFieldError(field.name, kind)  # type: ignore[arg-type]
        values[field.name] = _checked(field.name, document[field.name])
    if values["window_end_ms"] < values["window_start_ms"]:
        raise InvalidUsageFieldError("window_end_ms", f"at least window_start_ms ({values['window_start_ms']})", values["window_end_ms"])
    return row_type(**values)


def _checked(name: str, value: object) -> object:
    if name in _STRING_FIELDS:
        if not isinstance(value, str):
            raise InvalidUsageFieldError(name, "a string", value)
        return value
    # bool is an int subclass in Python; true/false are not numbers here.
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidUsageFieldError(name, "an integer", value)
    if value < 0 and name not in _SIGNED_FIELDS:
        raise InvalidUsageFieldError(name, "an integer of 0 or more", value)
    return value
