"""Confluent's wire format, the bytes every Schema Registry serializer writes:

byte 0       magic byte, 0
bytes 1-4    the schema id, a big-endian unsigned 32-bit integer
(Protobuf)   the message indexes: which message of the schema's file, as zigzag varints --
             a count then each index along the nesting path; the file's first message
             ([0]) is the single byte 0
the rest     the record encoded by its format (Avro binary, JSON text, Protobuf binary)
"""

from __future__ import annotations

import struct

from weir.records import RecordFormatError, decode_varint, encode_varint
from weir.serialization import SerializationError

MAGIC_BYTE = 0
_PREFIX = struct.Struct(">bI")
PREFIX_SIZE = _PREFIX.size  # 5
MAX_MESSAGE_INDEXES = 1024  # deeper nesting than any schema has: a corrupt count is refused, not allocated


def frame(schema_id: int, payload: bytes, message_indexes: list[int] | None = None) -> bytes:
    """The magic byte, ``schema_id``, the message indexes (Protobuf) and ``payload``."""
    head = _PREFIX.pack(MAGIC_BYTE, schema_id)
    if message_indexes is None:
        return head + payload
    return head + encode_message_indexes(message_indexes) + payload


def unframe(data: bytes) -> tuple[int, memoryview]:
    """The schema id and what follows it; SerializationError naming what is wrong."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise SerializationError(f"a Schema Registry record is bytes, got {type(data).__name__}")
    if len(data) < PREFIX_SIZE:
        raise SerializationError(
            f"Expecting data framing of length 6 bytes or more but total data size is {len(data)} bytes. This message was not produced with a Confluent Schema Registry serializer"
        )
    magic, schema_id = _PREFIX.unpack_from(data)
    if magic != MAGIC_BYTE:
        raise SerializationError(
            f"Unexpected magic byte {magic}, expected {MAGIC_BYTE}. This message was not produced with a Confluent Schema Registry serializer"
        )
    return schema_id, memoryview(data)[PREFIX_SIZE:]


def encode_message_indexes(indexes: list[int]) -> bytes:
    if indexes == [0]:
        return b"\x00"
    return encode_varint(len(indexes)) + b"".join(encode_varint(index) for index in indexes)


def _read_varint(data: memoryview, position: int) -> tuple[int, int]:
    """Kafka's zigzag varint (the same encoding), its errors as SerializationErrors."""
    try:
        return decode_varint(data, position)
    except IndexError as error:
        raise SerializationError("the Protobuf message indexes end before their last varint") from error
    except RecordFormatError as error:
        raise SerializationError(f"a Protobuf message index is not a varint: {error}") from error


def decode_message_indexes(data: memoryview) -> tuple[list[int], memoryview]:
    """The message indexes at the start of ``data`` ([0] for a single 0 byte) and the rest."""
    count, position = _read_varint(data, 0)
    if count == 0:
        return [0], data[position:]
    if count < 0 or count > MAX_MESSAGE_INDEXES:
        raise SerializationError(f"the record says it has {count} Protobuf message indexes; at most {MAX_MESSAGE_INDEXES} are read")
    indexes = []
    for _ in range(count):
        index, position = _read_varint(data, position)
        indexes.append(index)
    return indexes, data[position:]
