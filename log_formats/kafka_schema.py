"""Kafka's message-schema primitives, read and written: the fields of its internal topics' records.

The keys and values of ``__consumer_offsets`` and ``__transaction_state`` are Kafka's generated
message schemas (``GroupMetadataValue``, ``ConsumerGroup*``, ``TransactionLogValue``...). Their
fields, all big-endian:

==============  ====================================  =============================================
field           non-flexible versions                 flexible versions
==============  ====================================  =============================================
int8..int64     1, 2, 4, 8 bytes, two's complement    the same
uuid            16 bytes                              the same
string          int16 length, UTF-8 (-1: null)        unsigned varint length + 1 (0: null), UTF-8
bytes           int32 length (-1: null)               unsigned varint length + 1 (0: null)
array           int32 count (-1: null), elements      unsigned varint count + 1 (0: null), elements
tagged fields   none                                  unsigned varint count, then per field: varint
                                                      tag, varint size, its bytes (ascending tags)
==============  ====================================  =============================================

Whether a version is flexible is the schema's: :class:`SchemaReader` and :class:`SchemaWriter`
take it when made (``flexible``) and a reader may learn it from the version field it has just
read. Each record module keeps its own error type (a ``ValueError``), passed in as ``error``, so
that its callers catch what they always caught. Neither class is thread-safe: one per record.
"""

from __future__ import annotations

import builtins
import struct
from collections.abc import Mapping

from weir.records import RecordFormatError, decode_unsigned_varint, encode_unsigned_varint

MAX_INT16_LENGTH = 0x7FFF  # the longest string a non-flexible (int16) length can announce
UUID_SIZE = 16

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class SchemaReader:
    """Reads one key or value front to back; a read past the end (or a malformed varint) raises ``error``.

    The message names ``what`` is read (``"record"``, ``"value"``) and the byte it stopped at.
    """

    def __init__(self, data: builtins.bytes, error: type[ValueError] = ValueError, *, flexible: bool = False, what: str = "record") -> None:
        self.flexible = flexible  # set once the version field says which encoding follows
        self._data = data
        self._error = error
        self._what = what
        self._position = 0

    def take(self, size: int) -> builtins.bytes:
        end = self._position + size
        if size < 0 or end > len(self._data):
            raise self._error(f"{self._what} ends after {len(self._data)} bytes, {size} more were expected at byte {self._position}")
        chunk = self._data[self._position : end]
        self._position = end
        return chunk

    def int8(self) -> int:
        return int(_INT8.unpack(self.take(1))[0])

    def int16(self) -> int:
        return int(_INT16.unpack(self.take(2))[0])

    def int32(self) -> int:
        return int(_INT32.unpack(self.take(4))[0])

    def int64(self) -> int:
        return int(_INT64.unpack(self.take(8))[0])

    def uvarint(self) -> int:
        try:
            value, self._position = decode_unsigned_varint(self._data, self._position)
        except IndexError:
            raise self._error(f"{self._what} ends after {len(self._data)} bytes, inside a varint at byte {self._position}") from None
        except RecordFormatError as error:
            raise self._error(error.reason) from None
        return value

    def uuid(self) -> builtins.bytes:
        return self.take(UUID_SIZE)

    def _length(self, fixed: struct.Struct) -> int:
        """A string, bytes or array length; -1 for null."""
        if self.flexible:
            return self.uvarint() - 1
        return int(fixed.unpack(self.take(fixed.size))[0])

    def string(self) -> str | None:
        """A nullable string (None for null); UnicodeDecodeError for bytes that are not UTF-8."""
        length = self._length(_INT16)
        return None if length < 0 else self.take(length).decode("utf-8")

    def bytes(self) -> builtins.bytes | None:
        """A nullable bytes field (None for null)."""
        length = self._length(_INT32)
        return None if length < 0 else self.take(length)

    def count(self) -> int:
        """The element count of an array, a null array counting as empty."""
        return max(0, self._length(_INT32))

    def tagged_fields(self) -> dict[int, builtins.bytes]:
        """A flexible struct's tagged-field section: tag -> the field's bytes."""
        tagged = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            tagged[tag] = self.take(self.uvarint())
        return tagged


class SchemaWriter:
    """Writes one key or value front to back; :meth:`to_bytes` is what was written.

    A string too long for a non-flexible length raises ``error``.
    """

    def __init__(self, error: type[ValueError] = ValueError, *, flexible: bool = False) -> None:
        self.flexible = flexible
        self._error = error
        self._parts: list[builtins.bytes] = []

    def to_bytes(self) -> builtins.bytes:
        return b"".join(self._parts)

    def raw(self, data: builtins.bytes) -> None:
        """Bytes as they are, no length in front (a UUID, a struct written elsewhere)."""
        self._parts.append(data)

    def int8(self, value: int) -> None:
        self._parts.append(_INT8.pack(value))

    def int16(self, value: int) -> None:
        self._parts.append(_INT16.pack(value))

    def int32(self, value: int) -> None:
        self._parts.append(_INT32.pack(value))

    def int64(self, value: int) -> None:
        self._parts.append(_INT64.pack(value))

    def uvarint(self, value: int) -> None:
        self._parts.append(encode_unsigned_varint(value))

    def _length(self, length: int | None, fixed: struct.Struct) -> None:
        """A string, bytes or array length; None for null."""
        if self.flexible:
            self.uvarint(0 if length is None else length + 1)
        else:
            self._parts.append(fixed.pack(-1 if length is None else length))

    def string(self, text: str | None) -> None:
        """A nullable string (None writes null)."""
        if text is None:
            self._length(None, _INT16)
            return
        encoded = text.encode("utf-8")
        if not self.flexible and len(encoded) > MAX_INT16_LENGTH:
            raise self._error(f"a string of {len(encoded)} bytes does not fit Kafka's int16 length")
        self._length(len(encoded), _INT16)
        self._parts.append(encoded)

    def bytes(self, data: builtins.bytes | None) -> None:
        """A nullable bytes field (None writes null)."""
        self._length(None if data is None else len(data), _INT32)
        if data is not None:
            self._parts.append(data)

    def count(self, count: int | None) -> None:
        """An array's element count (None: a null array); the caller writes the elements."""
        self._length(count, _INT32)

    def tagged_fields(self, tagged: Mapping[int, builtins.bytes]) -> None:
        """A flexible struct's tagged-field section, in ascending tag order as Kafka requires."""
        self.uvarint(len(tagged))
        for tag in sorted(tagged):
            self.uvarint(tag)
            self.uvarint(len(tagged[tag]))
            self._parts.append(tagged[tag])
