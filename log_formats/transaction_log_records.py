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
          default 0) written only when they differ from their default
  ======  ==========================================================================

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

from log_formats.offset_commit_records import java_abs, java_string_hash_code
from weir.records import RecordFormatError, decode_unsigned_varint, encode_unsigned_varint

KEY_VERSION = 0  # the only version of TransactionLogKey
VALUE_VERSION = 1  # what Weir writes: flexible, with the tagged fields of KIP-890
VALUE_VERSIONS = frozenset({0, 1})
TRANSACTION_VERSION_2 = 2  # KIP-890's transaction.version 2: epoch bumped at every transaction end
NO_PRODUCER_ID = -1

TAG_PREVIOUS_PRODUCER_ID = 0
TAG_NEXT_PRODUCER_ID = 1
TAG_CLIENT_TRANSACTION_VERSION = 2

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

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
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
    encoded = transactional_id.encode("utf-8")
    if len(encoded) > 0x7FFF:
        raise TransactionLogSchemaError(f"a transactional id of {len(encoded)} bytes does not fit Kafka's int16 length")
    return _INT16.pack(KEY_VERSION) + _INT16.pack(len(encoded)) + encoded


def decode_key(data: bytes) -> str:
    """The transactional id of a key; TransactionLogSchemaError for another version or truncated bytes."""
    if len(data) < 4:
        raise TransactionLogSchemaError(f"a key of {len(data)} bytes is shorter than its version and length")
    version, length = struct.unpack_from(">hh", data, 0)
    if version != KEY_VERSION:
        raise TransactionLogSchemaError(f"unknown key version {version}")
    if length < 0 or 4 + length > len(data):
        raise TransactionLogSchemaError(f"the transactional id of {length} bytes runs past the end of the key")
    return data[4 : 4 + length].decode("utf-8")


# ---------------------------------------------------------------------- values


def encode_value(value: TransactionLogValue) -> bytes:
    """Version 1 (flexible) of TransactionLogValue, prefixed with its version."""
    parts = [
        _INT16.pack(VALUE_VERSION),
        _INT64.pack(value.producer_id),
        _INT16.pack(value.producer_epoch),
        _INT32.pack(value.timeout_ms),
        _INT8.pack(value.state),
    ]
    if value.state == STATE_EMPTY:
        parts.append(encode_unsigned_varint(0))  # null: Kafka writes no partitions for Empty
    else:
        parts.append(encode_unsigned_varint(len(value.partitions) + 1))
        for topic, partition_ids in value.partitions.items():
            encoded_topic = topic.encode("utf-8")
            parts.append(encode_unsigned_varint(len(encoded_topic) + 1))
            parts.append(encoded_topic)
            parts.append(encode_unsigned_varint(len(partition_ids) + 1))
            parts.extend(_INT32.pack(partition_id) for partition_id in partition_ids)
            parts.append(encode_unsigned_varint(0))  # the struct's tagged fields: none
    parts.append(_INT64.pack(value.last_update_timestamp_ms))
    parts.append(_INT64.pack(value.start_timestamp_ms))
    tagged: list[tuple[int, bytes]] = []
    if value.previous_producer_id != NO_PRODUCER_ID:
        tagged.append((TAG_PREVIOUS_PRODUCER_ID, _INT64.pack(value.previous_producer_id)))
    if value.next_producer_id != NO_PRODUCER_ID:
        tagged.append((TAG_NEXT_PRODUCER_ID, _INT64.pack(value.next_producer_id)))
    if value.client_transaction_version != 0:
        tagged.append((TAG_CLIENT_TRANSACTION_VERSION, _INT16.pack(value.client_transaction_version)))
    parts.append(encode_unsigned_varint(len(tagged)))
    for tag, field in tagged:
        parts.extend((encode_unsigned_varint(tag), encode_unsigned_varint(len(field)), field))
    return b"".join(parts)


class _Reader:
    """Reads one value; every short read is a TransactionLogSchemaError."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._position = 0

    def take(self, size: int) -> bytes:
        end = self._position + size
        if size < 0 or end > len(self._data):
            raise TransactionLogSchemaError(f"value ends after {len(self._data)} bytes, {size} more were expected at byte {self._position}")
        chunk = self._data[self._position : end]
        self._position = end
        return chunk

    def fixed(self, layout: struct.Struct) -> int:
        return int(layout.unpack(self.take(layout.size))[0])

    def uvarint(self) -> int:
        try:
            value, self._position = decode_unsigned_varint(self._data, self._position)
        except IndexError:
            raise TransactionLogSchemaError(f"value ends inside a varint at byte {self._position}") from None
        except RecordFormatError as error:
            raise TransactionLogSchemaError(error.reason) from None
        return value

    def length(self, *, flexible: bool) -> int:
        """An array or string length; -1 for null."""
        if flexible:
            return self.uvarint() - 1
        return self.fixed(_INT32)

    def string(self, *, flexible: bool) -> str:
        size = self.uvarint() - 1 if flexible else self.fixed(_INT16)
        if size < 0:
            raise TransactionLogSchemaError("a topic name must not be null")
        return self.take(size).decode("utf-8")

    def tagged_fields(self) -> dict[int, bytes]:
        return {self.uvarint(): self.take(self.uvarint()) for _ in range(self.uvarint())}


def decode_value(data: bytes) -> TransactionLogValue:
    """Decode a value of version 0 or 1; TransactionLogSchemaError for anything else."""
    reader = _Reader(data)
    version = reader.fixed(_INT16)
    if version not in VALUE_VERSIONS:
        raise TransactionLogSchemaError(f"unknown transaction log value version {version}")
    flexible = version >= 1
    producer_id = reader.fixed(_INT64)
    producer_epoch = reader.fixed(_INT16)
    timeout_ms = reader.fixed(_INT32)
    state = reader.fixed(_INT8)
    if state not in STATE_IDS:
        raise TransactionLogSchemaError(f"unknown transaction state {state}")
    partitions: dict[str, tuple[int, ...]] = {}
    for _ in range(max(0, reader.length(flexible=flexible))):
        topic = reader.string(flexible=flexible)
        partitions[topic] = tuple(reader.fixed(_INT32) for _ in range(max(0, reader.length(flexible=flexible))))
        if flexible:
            reader.tagged_fields()
    last_update = reader.fixed(_INT64)
    start = reader.fixed(_INT64)
    tagged = reader.tagged_fields() if flexible else {}
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
    )


def _tagged_int(tagged: Mapping[int, bytes], tag: int, layout: struct.Struct, default: int) -> int:
    field = tagged.get(tag)
    if field is None:
        return default
    if len(field) != layout.size:
        raise TransactionLogSchemaError(f"tagged field {tag} holds {len(field)} bytes, not {layout.size}")
    return int(layout.unpack(field)[0])
