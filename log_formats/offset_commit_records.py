"""Kafka's record schemas of committed offsets in ``__consumer_offsets``, and group placement.

Pure functions over bytes, shared by the brokers (which write and replay the topic) and the
lag pipeline (which reads it through the SDK): nothing here imports a broker module.

Keys and values are Kafka's, byte for byte, so that Kafka tools can read the topic:

- key v0/v1 (an offset commit): int16 version, string group, string topic, int32 partition.
  Kafka writes version 1; version 2 keys hold classic group metadata (members), which this
  module recognises and skips. Versions 3 to 8 are the KIP-848 consumer group records
  (``broker_nodes.coordinator.groups.records``): readers that only want commits check
  :func:`key_version` against :data:`OFFSET_COMMIT_KEY_VERSIONS` first.
- value v3: int16 version(3), int64 offset, int32 leader epoch, string metadata, int64 commit
  timestamp. Versions 0-2 are read too (v0: offset, metadata, commit timestamp; v1: adds an
  expire timestamp; v2: as v0).

A Kafka "string" is an int16 byte length followed by UTF-8. A record with a null value is a
tombstone: the commit was removed. Group and topic names are stored as the broker keeps them
(``tenant~name`` for a tenant's).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

OFFSET_COMMIT_KEY_VERSION = 1  # what Kafka writes for offset commit keys
OFFSET_COMMIT_KEY_VERSIONS = frozenset({0, 1})  # key versions that hold an offset commit
GROUP_METADATA_KEY_VERSION = 2  # keys of group membership records, skipped here
OFFSET_COMMIT_VALUE_VERSION = 3  # what Kafka writes for offset commit values
NO_LEADER_EPOCH = -1

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_VALUE_V3_HEAD = struct.Struct(">hqi")  # version, offset, leader epoch


class OffsetSchemaError(ValueError):
    """Bytes that do not decode as an offset commit key or value."""

    retriable = False


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


def java_string_hash_code(text: str) -> int:
    """Java's ``String.hashCode()``: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, as int32."""
    hash_code = 0
    encoded = text.encode("utf-16-be")
    for index in range(0, len(encoded), 2):
        hash_code = (31 * hash_code + ((encoded[index] << 8) | encoded[index + 1])) & 0xFFFFFFFF
    return hash_code - (1 << 32) if hash_code >= 1 << 31 else hash_code


def java_abs(value: int) -> int:
    """Kafka's ``Utils.abs``: ``value & 0x7fffffff``, so that Integer.MIN_VALUE maps to 0, not to itself."""
    return value & 0x7FFFFFFF


def partition_for_group(group_id: str, partition_count: int) -> int:
    """The ``__consumer_offsets`` partition of a group: ``Utils.abs(groupId.hashCode()) % N``."""
    return java_abs(java_string_hash_code(group_id)) % partition_count


def _encode_string(text: str) -> bytes:
    encoded = text.encode("utf-8")
    if len(encoded) > 0x7FFF:
        raise OffsetSchemaError(f"a string of {len(encoded)} bytes does not fit Kafka's int16 length")
    return _INT16.pack(len(encoded)) + encoded


def _decode_string(data: bytes, position: int) -> tuple[str, int]:
    if position + 2 > len(data):
        raise OffsetSchemaError("string length runs past the end of the data")
    (length,) = _INT16.unpack_from(data, position)
    position += 2
    if length < 0 or position + length > len(data):
        raise OffsetSchemaError(f"string of {length} bytes runs past the end of the data")
    return data[position : position + length].decode("utf-8"), position + length


def key_version(data: bytes) -> int:
    """The version field of a ``__consumer_offsets`` key (which kind of record it is)."""
    if len(data) < 2:
        raise OffsetSchemaError("key shorter than its version field")
    return int(_INT16.unpack_from(data, 0)[0])


def encode_offset_commit_key(key: OffsetCommitKey) -> bytes:
    return b"".join((_INT16.pack(OFFSET_COMMIT_KEY_VERSION), _encode_string(key.group), _encode_string(key.topic), _INT32.pack(key.partition)))


def decode_key(data: bytes) -> OffsetCommitKey | None:
    """The offset commit key in ``data``; None for a group metadata key (version 2)."""
    version = key_version(data)
    if version == GROUP_METADATA_KEY_VERSION:
        return None
    if version not in OFFSET_COMMIT_KEY_VERSIONS:
        raise OffsetSchemaError(f"unknown key version {version}")
    group, position = _decode_string(data, 2)
    topic, position = _decode_string(data, position)
    if position + 4 > len(data):
        raise OffsetSchemaError("key ends before its partition field")
    (partition,) = _INT32.unpack_from(data, position)
    return OffsetCommitKey(group, topic, partition)


def encode_offset_commit_value(value: OffsetAndMetadata) -> bytes:
    return b"".join(
        (
            _VALUE_V3_HEAD.pack(OFFSET_COMMIT_VALUE_VERSION, value.offset, value.leader_epoch),
            _encode_string(value.metadata),
            _INT64.pack(value.commit_timestamp),
        )
    )


def decode_offset_commit_value(data: bytes) -> OffsetAndMetadata:
    """Decode a value of version 0 to 3; raise OffsetSchemaError for anything else."""
    try:
        (version,) = _INT16.unpack_from(data, 0)
        (offset,) = _INT64.unpack_from(data, 2)
        position = 10
        leader_epoch = NO_LEADER_EPOCH
        if version == 3:
            (leader_epoch,) = _INT32.unpack_from(data, position)
            position += 4
        elif version not in (0, 1, 2):
            raise OffsetSchemaError(f"unknown offset commit value version {version}")
        metadata, position = _decode_string(data, position)
        (commit_timestamp,) = _INT64.unpack_from(data, position)
    except struct.error as error:
        raise OffsetSchemaError(f"offset commit value is truncated: {error}") from None
    return OffsetAndMetadata(offset, leader_epoch, metadata, commit_timestamp)
