"""The records of the internal topic ``__usage``, schema ``weir.usage/1``: codec and identity.

Brokers meter their clients' traffic and append one record per row to ``__usage``; the usage
job reads them back. Both sides use this module, so the format is written down once (the
prose contract, with the meaning of every field, is ``docs/usage-schema.md``).

A record's value is one row in one of two encodings of the same fields (:func:`decode` reads
both; brokers write the binary one):

- **binary** (:func:`encode`, since brokers write it): a format byte ``0x01`` first, then
  fixed-width big-endian fields at fixed positions (:data:`BINARY_LAYOUT`) and the three
  strings last, each with its length in the header, so that a reader finds every field
  without parsing (the usage job decodes it with Spark's column functions, no Python per row);
  about a third of the JSON's size.
- **JSON** (:func:`encode_json`, what brokers wrote before): one UTF-8 JSON object, first byte
  ``{``. Stored rows of this encoding keep their meaning: readers decode them as before.

Every row carries the common fields (schema, kind, the emitting broker's node id and
incarnation, the window's sequence number and bounds, tenant, topic and partition) and the
fields of its kind:

- ``traffic``: bytes and records in (Produce) and out (Fetch), requests and throttle time of
  one tenant's partition in one window; counters are deltas of that window, never totals.
- ``partition``: the size and offsets of a partition the broker leads, at the window's end.

A row's :func:`identity` is the same every time its window is sent, so a reader drops
repeated rows by identity (a broker re-sends a window it has no acknowledgement for).

:func:`decode` checks what it reads and raises a :class:`UsageRecordError` subclass naming
the problem: bytes that are neither a JSON object nor a binary row of format 1, another schema version, a missing field or a
field of the wrong type. Fields it does not know are ignored (a later version may add some).
:data:`SPARK_SCHEMA_DDL` describes every field for Spark's ``from_json`` (no Spark import here:
brokers never import Spark).
"""

from __future__ import annotations

import json
import struct
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
    """The bytes are not UTF-8 JSON, or not a JSON object, or a binary row of the wrong length."""


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

# ---------------------------------------------------------------------- the binary encoding
#
# offset  size  field (big-endian; integers signed two's complement)
#      0     1  format byte, BINARY_FORMAT (a JSON row starts with "{" instead)
#      1     1  kind: 0 traffic, 1 partition
#      2     8  node_id
#     10     8  sequence
#     18     8  window_start_ms
#     26     8  window_end_ms
#     34     4  partition
#     38  7x8  the kind's counters, in the order of KIND_FIELDS (a partition row's two last are 0)
#     94     2  length in bytes of incarnation (UTF-8)
#     96     2  length of tenant_id
#     98     2  length of topic
#    100     .  incarnation, tenant_id, topic, one after the other; the row ends there
BINARY_FORMAT = 0x01
BINARY_HEADER_SIZE = 100
KIND_CODES: Mapping[str, int] = MappingProxyType({KIND_TRAFFIC: 0, KIND_PARTITION: 1})
# The counters of each kind in the order of the binary slots.
KIND_FIELDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        KIND_TRAFFIC: ("bytes_in", "records_in", "bytes_out", "records_out", "produce_requests", "fetch_requests", "throttle_time_ms"),
        KIND_PARTITION: ("log_size_bytes", "log_start_offset", "log_end_offset", "high_watermark", "leader_epoch"),
    }
)
COUNTER_SLOTS = 7
# (offset, size) of every fixed-width field; what a reader without this module needs (the usage job).
BINARY_LAYOUT: Mapping[str, tuple[int, int]] = MappingProxyType(
    {
        "format": (0, 1),
        "kind": (1, 1),
        "node_id": (2, 8),
        "sequence": (10, 8),
        "window_start_ms": (18, 8),
        "window_end_ms": (26, 8),
        "partition": (34, 4),
        **{f"slot{index}": (38 + 8 * index, 8) for index in range(COUNTER_SLOTS)},
        "incarnation_length": (94, 2),
        "tenant_id_length": (96, 2),
        "topic_length": (98, 2),
    }
)
STRING_FIELDS_IN_ORDER = ("incarnation", "tenant_id", "topic")
MAX_STRING_BYTES = 0xFFFF
_BINARY_HEADER = struct.Struct(f">BBqqqqi{COUNTER_SLOTS}qHHH")
assert _BINARY_HEADER.size == BINARY_HEADER_SIZE
_KINDS_BY_CODE = {code: kind for kind, code in KIND_CODES.items()}


def identity(row: UsageRow) -> Identity:
    """The key a reader deduplicates rows by: equal for every re-sending of the same row."""
    return (row.node_id, row.incarnation, row.sequence, row.kind, row.tenant_id, row.topic, row.partition)


def to_json_object(row: UsageRow) -> dict[str, Any]:
    """The row as the JSON object that is stored (common fields first)."""
    return {"schema": SCHEMA_V1, "kind": row.kind, **asdict(row)}


def encode(row: UsageRow) -> bytes:
    """The record value of ``row`` as brokers write it: the binary encoding (see the module docstring)."""
    strings = [getattr(row, name).encode("utf-8") for name in STRING_FIELDS_IN_ORDER]
    for name, encoded in zip(STRING_FIELDS_IN_ORDER, strings, strict=True):
        if len(encoded) > MAX_STRING_BYTES:
            raise InvalidUsageFieldError(name, f"at most {MAX_STRING_BYTES} bytes of UTF-8", getattr(row, name)[:40] + "...")
    counters = [getattr(row, name) for name in KIND_FIELDS[row.kind]]
    counters += [0] * (COUNTER_SLOTS - len(counters))
    header = _BINARY_HEADER.pack(
        BINARY_FORMAT,
        KIND_CODES[row.kind],
        row.node_id,
        row.sequence,
        row.window_start_ms,
        row.window_end_ms,
        row.partition,
        *counters,
        *(len(encoded) for encoded in strings),
    )
    return header + b"".join(strings)


def encode_json(row: UsageRow) -> bytes:
    """The record value of ``row`` in the JSON encoding (what brokers wrote before the binary one): compact UTF-8 JSON."""
    return json.dumps(to_json_object(row), separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def is_binary(data: bytes | bytearray | memoryview) -> bool:
    """Whether a record value is in the binary encoding (its first byte is the format byte)."""
    return len(data) > 0 and data[0] == BINARY_FORMAT


def decode(data: bytes | bytearray | memoryview | str) -> UsageRow:
    """The row stored in a record value of either encoding; raises a :class:`UsageRecordError` subclass naming what is wrong."""
    if not isinstance(data, str) and is_binary(data):
        return _decode_binary(bytes(data))
    try:
        document = json.loads(bytes(data).decode("utf-8") if not isinstance(data, str) else data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise MalformedUsageRecordError(f"neither a binary row of format {BINARY_FORMAT} nor UTF-8 JSON ({error})") from None
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


def _decode_binary(data: bytes) -> UsageRow:
    if len(data) < BINARY_HEADER_SIZE:
        raise MalformedUsageRecordError(f"a binary row of {len(data)} bytes is shorter than its {BINARY_HEADER_SIZE}-byte header")
    _format, kind_code, node_id, sequence, window_start_ms, window_end_ms, partition, *rest = _BINARY_HEADER.unpack_from(data)
    counters, lengths = rest[:COUNTER_SLOTS], rest[COUNTER_SLOTS:]
    if len(data) != BINARY_HEADER_SIZE + sum(lengths):
        raise MalformedUsageRecordError(f"a binary row of {len(data)} bytes, its header says {BINARY_HEADER_SIZE + sum(lengths)}")
    kind = _KINDS_BY_CODE.get(kind_code)
    if kind is None:
        raise InvalidUsageFieldError("kind", f"{KIND_CODES[KIND_TRAFFIC]} (traffic) or {KIND_CODES[KIND_PARTITION]} (partition)", kind_code)
    document: dict[str, Any] = {
        "schema": SCHEMA_V1,
        "kind": kind,
        "node_id": node_id,
        "sequence": sequence,
        "window_start_ms": window_start_ms,
        "window_end_ms": window_end_ms,
        "partition": partition,
        **dict(zip(KIND_FIELDS[kind], counters, strict=False)),
    }
    position = BINARY_HEADER_SIZE
    for name, length in zip(STRING_FIELDS_IN_ORDER, lengths, strict=True):
        try:
            document[name] = data[position : position + length].decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidUsageFieldError(name, "UTF-8 text", data[position : position + length]) from error
        position += length
    return from_json_object(document)


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
