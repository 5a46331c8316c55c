"""Kafka's record schemas of ``__transaction_state``, and transactional-id placement.

Pure functions over bytes, shared by the brokers (the transaction coordinator writes and
replays the topic) and ``weir-dump-log``: nothing here imports a broker module.

Keys and values are Kafka's (``TransactionLogKey`` / ``TransactionLogValue``), byte for byte,
so that Kafka's tools read the topic:

- key: int16 version (0), then version 0 of TransactionLogKey: string transactional id
  (int16 length + UTF-8; not flexible).
- value: int16 version, then TransactionLogValue of that version.

  ======  ==========================================================================
  v0      int64 producer id, int16 producer epoch, int32 transaction timeout ms,
          int8 state, nullable array of (string topic, array of int32 partitions),
          int64 last update timestamp, int64 start timestamp (all int16/int32 lengths)
  v1      the same fields in Kafka's flexible encoding (compact strings and arrays:
          unsigned varint length + 1, 0 for null; a tagged-field section after each
          struct), with tagged fields 0 PreviousProducerId (int64, default -1),
          1 NextProducerId (int64, default -1), 2 ClientTransactionVersion (int16,
          default 0) written only when they differ from their default, and Weir's
          tag 100 UnwrittenMarkers (absent: none), see below
  ======  ==========================================================================

  UnwrittenMarkers (Weir's tag, far above Kafka's, so that Kafka's tools skip it as an unknown
  tagged field and a record without it reads as before): the markers of the id's previous
  transaction that were not known to be durable when this record was written, a flexible
  struct of int64 producer id, int16 producer epoch, int8 commit (1) or abort (0), compact
  array of (compact string topic, compact array of int32 partitions, tagged fields), tagged
  fields. Only a record that begins the next transaction while those markers are still being
  written carries it (an Ongoing record of KIP-890's transactions version 2); a loading
  coordinator writes those markers again before the id may change further.

  Weir writes v1 with ClientTransactionVersion 2 (KIP-890's transactions version 2: the
  producer epoch is bumped at every commit and abort), as Kafka 4 does for those clients.
  The partitions are null in state Empty (Kafka's rule) and grouped by topic otherwise.

A record with a null value is a tombstone: the transactional id expired
(``transactional.id.expiration.ms``). Transactional ids and topics are stored as the broker
keeps them (``tenant~name`` for a tenant's).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from log_formats.kafka_schema import SchemaReader, SchemaWriter
from log_formats.offset_commit_records import java_abs, java_string_hash_code

KEY_VERSION = 0  # the only version of TransactionLogKey
VALUE_VERSION = 1  # what Weir writes: flexible, with the tagged fields of KIP-890
VALUE_VERSIONS = frozenset({0, 1})
TRANSACTION_VERSION_2 = 2  # KIP-890's transaction.version 2: epoch bumped at every transaction end
NO_PRODUCER_ID = -1

TAG_PREVIOUS_PRODUCER_ID = 0
TAG_NEXT_PRODUCER_ID = 1
TAG_CLIENT_TRANSACTION_VERSION = 2
TAG_UNWRITTEN_MARKERS = 100  # Weir's: far above Kafka's tags, which Kafka's tools then skip

# Kafka's TransactionState ids (the int8 status field).
STATE_EMPTY = 0
STATE_ONGOING = 1
STATE_PREPARE_COMMIT = 2
STATE_PREPARE_ABORT = 3
STATE_COMPLETE_COMMIT = 4
STATE_COMPLETE_ABORT = 5
STATE_DEAD = 6
STATE_PREPARE_EPOCH_FENCE = 7
STATE_IDS = frozenset(range(8))

_INT16 = struct.Struct(">h")
_INT64 = struct.Struct(">q")


class TransactionLogSchemaError(ValueError):
    """Bytes that do not decode as a ``__transaction_state`` key or value."""

    retriable = False


@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    """One transactional id's state as the coordinator persists it (Kafka's TransactionLogValue)."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: int  # one of the STATE_* ids
    partitions: Mapping[str, tuple[int, ...]]  # topic -> partition ids, sorted
    last_update_timestamp_ms: int
    start_timestamp_ms: int
    previous_producer_id: int = NO_PRODUCER_ID  # the id of the last completed transaction when it differs
    next_producer_id: int = NO_PRODUCER_ID  # the id the producer moves to when its epoch runs out
    client_transaction_version: int = TRANSACTION_VERSION_2
    unwritten_markers: UnwrittenMarkers | None = None  # the previous transaction's markers, not known durable


@dataclass(frozen=True, slots=True)
class UnwrittenMarkers:
    """A decided transaction's markers that a later record of its id names because they may not all be durable yet."""

    producer_id: int
    producer_epoch: int  # the markers' epoch (bumped at the prepare)
    commit: bool
    partitions: Mapping[str, tuple[int, ...]]  # topic -> partition ids, sorted


def partition_for_transactional_id(transactional_id: str, partition_count: int) -> int:
    """The ``__transaction_state`` partition of a (qualified) transactional id: ``Utils.abs(id.hashCode()) % N``."""
    return java_abs(java_string_hash_code(transactional_id)) % partition_count


def partitions_by_topic(topic_partitions: Iterable[tuple[str, int]]) -> dict[str, tuple[int, ...]]:
    """Group (topic, partition) pairs by topic, topics and partitions sorted (the value's layout)."""
    grouped: dict[str, set[int]] = {}
    for topic, partition in topic_partitions:
        grouped.setdefault(topic, set()).add(partition)
    return {topic: tuple(sorted(grouped[topic])) for topic in sorted(grouped)}


# ---------------------------------------------------------------------- keys


def encode_key(transactional_id: str) -> bytes:
    writer = SchemaWriter(TransactionLogSchemaError)
    writer.int16(KEY_VERSION)
    writer.string(transactional_id)
    return writer.to_bytes()


def decode_key(data: bytes) -> str:
    """The transactional id of a key; TransactionLogSchemaError for another version or truncated bytes."""
    reader = SchemaReader(data, TransactionLogSchemaError, what="key")
    version = reader.int16()
    if version != KEY_VERSION:
        raise TransactionLogSchemaError(f"unknown key version {version}")
    transactional_id = reader.string()
    if transactional_id is None:
        raise TransactionLogSchemaError("a transactional id must not be null")
    return transactional_id


# ---------------------------------------------------------------------- values


def encode_value(value: TransactionLogValue) -> bytes:
    """Version 1 (flexible) of TransactionLogValue, prefixed with its version."""
    writer = SchemaWriter(TransactionLogSchemaError, flexible=True)
    writer.int16(VALUE_VERSION)
    writer.int64(value.producer_id)
    writer.int16(value.producer_epoch)
    writer.int32(value.timeout_ms)
    writer.int8(value.state)
    if value.state == STATE_EMPTY:
        writer.count(None)  # null: Kafka writes no partitions for Empty
    else:
        _write_partitions(writer, value.partitions)
    writer.int64(value.last_update_timestamp_ms)
    writer.int64(value.start_timestamp_ms)
    tagged: dict[int, bytes] = {}
    if value.previous_producer_id != NO_PRODUCER_ID:
        tagged[TAG_PREVIOUS_PRODUCER_ID] = _INT64.pack(value.previous_producer_id)
    if value.next_producer_id != NO_PRODUCER_ID:
        tagged[TAG_NEXT_PRODUCER_ID] = _INT64.pack(value.next_producer_id)
    if value.client_transaction_version != 0:
        tagged[TAG_CLIENT_TRANSACTION_VERSION] = _INT16.pack(value.client_transaction_version)
    if value.unwritten_markers is not None:
        tagged[TAG_UNWRITTEN_MARKERS] = _encode_unwritten_markers(value.unwritten_markers)
    writer.tagged_fields(tagged)
    return writer.to_bytes()


def decode_value(data: bytes) -> TransactionLogValue:
    """Decode a value of version 0 or 1; TransactionLogSchemaError for anything else."""
    reader = SchemaReader(data, TransactionLogSchemaError, what="value")
    version = reader.int16()
    if version not in VALUE_VERSIONS:
        raise TransactionLogSchemaError(f"unknown transaction log value version {version}")
    reader.flexible = version >= 1
    producer_id = reader.int64()
    producer_epoch = reader.int16()
    timeout_ms = reader.int32()
    state = reader.int8()
    if state not in STATE_IDS:
        raise TransactionLogSchemaError(f"unknown transaction state {state}")
    partitions = _read_partitions(reader)
    last_update = reader.int64()
    start = reader.int64()
    tagged = reader.tagged_fields() if reader.flexible else {}
    return TransactionLogValue(
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        timeout_ms=timeout_ms,
        state=state,
        partitions=partitions,
        last_update_timestamp_ms=last_update,
        start_timestamp_ms=start,
        previous_producer_id=_tagged_int(tagged, TAG_PREVIOUS_PRODUCER_ID, _INT64, NO_PRODUCER_ID),
        next_producer_id=_tagged_int(tagged, TAG_NEXT_PRODUCER_ID, _INT64, NO_PRODUCER_ID),
        client_transaction_version=_tagged_int(tagged, TAG_CLIENT_TRANSACTION_VERSION, _INT16, 0),
        unwritten_markers=_decode_unwritten_markers(tagged[TAG_UNWRITTEN_MARKERS]) if TAG_UNWRITTEN_MARKERS in tagged else None,
    )


def _encode_unwritten_markers(markers: UnwrittenMarkers) -> bytes:
    writer = SchemaWriter(TransactionLogSchemaError, flexible=True)
    writer.int64(markers.producer_id)
    writer.int16(markers.producer_epoch)
    writer.int8(1 if markers.commit else 0)
    _write_partitions(writer, markers.partitions)
    writer.tagged_fields({})
    return writer.to_bytes()


def _decode_unwritten_markers(data: bytes) -> UnwrittenMarkers:
    reader = SchemaReader(data, TransactionLogSchemaError, flexible=True, what="unwritten markers")
    producer_id = reader.int64()
    producer_epoch = reader.int16()
    commit = reader.int8()
    if commit not in (0, 1):
        raise TransactionLogSchemaError(f"unwritten markers: commit must be 0 or 1, not {commit}")
    partitions = _read_partitions(reader)
    reader.tagged_fields()
    return UnwrittenMarkers(producer_id, producer_epoch, commit == 1, partitions)


def _write_partitions(writer: SchemaWriter, partitions: Mapping[str, tuple[int, ...]]) -> None:
    """The partitions by topic (flexible: each topic's struct ends with its tagged fields, none)."""
    writer.count(len(partitions))
    for topic, partition_ids in partitions.items():
        writer.string(topic)
        writer.count(len(partition_ids))
        for partition_id in partition_ids:
            writer.int32(partition_id)
        writer.tagged_fields({})


def _read_partitions(reader: SchemaReader) -> dict[str, tuple[int, ...]]:
    """The partitions by topic, as :func:`_write_partitions` writes them (in version 0, not flexible, without tagged fields)."""
    partitions: dict[str, tuple[int, ...]] = {}
    for _ in range(reader.count()):
        topic = reader.string()
        if topic is None:
            raise TransactionLogSchemaError("a topic name must not be null")
        partitions[topic] = tuple(reader.int32() for _ in range(reader.count()))
        if reader.flexible:
            reader.tagged_fields()
    return partitions


def _tagged_int(tagged: Mapping[int, bytes], tag: int, layout: struct.Struct, default: int) -> int:
    field = tagged.get(tag)
    if field is None:
        return default
    if len(field) != layout.size:
        raise TransactionLogSchemaError(f"tagged field {tag} holds {len(field)} bytes, not {layout.size}")
    return int(layout.unpack(field)[0])
