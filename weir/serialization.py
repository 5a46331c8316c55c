"""confluent-kafka's ``confluent_kafka.serialization``: serializers turn objects into record bytes.

``SerializingProducer`` and ``DeserializingConsumer`` call them with a
:class:`SerializationContext` (topic, which field, headers). The built-in ones use Kafka's
(Java's) formats, so records written by Java's ``IntegerSerializer`` or confluent-kafka's read
back the same: signed big-endian int32, IEEE 754 binary64, and text in a codec (UTF-8 by
default). ``None`` is Kafka's null both ways.
"""

from __future__ import annotations

import codecs
import enum
import struct
from collections.abc import Callable
from typing import Any

from weir.errors import KafkaError, KafkaException
from weir.message import Headers

__all__ = [
    "Deserializer",
    "DeserializerBuilder",
    "DoubleDeserializer",
    "DoubleSerializer",
    "IntegerDeserializer",
    "IntegerSerializer",
    "MessageField",
    "SerializationContext",
    "SerializationError",
    "Serializer",
    "SerializerBuilder",
    "StringDeserializer",
    "StringSerializer",
]


class MessageField(enum.StrEnum):
    """Which part of a record a serializer is working on."""

    NONE = "none"
    KEY = "key"
    VALUE = "value"

    def __str__(self) -> str:
        return str(self.value)


class SerializationContext:
    """What a serializer is told about the record: its topic, the field, and its headers."""

    def __init__(self, topic: str, field: MessageField, headers: Headers | None = None) -> None:
        self.topic = topic
        self.field = field
        self.headers = headers


class SerializationError(KafkaException):
    """A value could not be converted to or from bytes (its message names why)."""

    def __init__(self, reason: object = None) -> None:
        if isinstance(reason, KafkaError):
            super().__init__(reason)
        else:
            super().__init__(KafkaError(KafkaError._INVALID_ARG, str(reason) if reason is not None else "serialization failed"))


class Serializer:
    """Base of serializers: ``serializer(obj, ctx) -> bytes | None``."""

    __slots__: list[str] = []

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        raise NotImplementedError(f"{type(self).__name__} does not implement __call__")

    def set_cluster_id_resolver(self, resolver: Callable[[], Any]) -> None:
        """Given the client's cluster id lookup (confluent-kafka's hook); the built-in serializers ignore it."""

    def close(self) -> None:
        """Release what the serializer holds; the built-in ones hold nothing."""


class Deserializer:
    """Base of deserializers: ``deserializer(data, ctx) -> object``."""

    __slots__: list[str] = []

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement __call__")

    def set_cluster_id_resolver(self, resolver: Callable[[], Any]) -> None:
        """Given the client's cluster id lookup (confluent-kafka's hook); the built-in deserializers ignore it."""

    def close(self) -> None:
        """Release what the deserializer holds; the built-in ones hold nothing."""


class SerializerBuilder:
    """Builds a serializer from the client's configuration (``key.serializer.builder``)."""

    __slots__: list[str] = []

    def build(self, conf: dict[str, Any], is_key: bool) -> tuple[Serializer, dict[str, Any]]:
        raise NotImplementedError(f"{type(self).__name__} does not implement build")


class DeserializerBuilder:
    """Builds a deserializer from the client's configuration (``key.deserializer.builder``)."""

    __slots__: list[str] = []

    def build(self, conf: dict[str, Any], is_key: bool) -> tuple[Deserializer, dict[str, Any]]:
        raise NotImplementedError(f"{type(self).__name__} does not implement build")


_INT32 = struct.Struct(">i")
_DOUBLE = struct.Struct(">d")


class DoubleSerializer(Serializer):
    """float -> IEEE 754 binary64, big-endian (Java's DoubleSerializer)."""

    def __call__(self, obj: float | None, ctx: SerializationContext | None = None) -> bytes | None:
        if obj is None:
            return None
        try:
            return _DOUBLE.pack(obj)
        except struct.error as error:
            raise SerializationError(f"{obj!r} is not a float: {error}") from error


class DoubleDeserializer(Deserializer):
    """IEEE 754 binary64, big-endian -> float."""

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> float | None:
        if value is None:
            return None
        try:
            result: float = _DOUBLE.unpack(value)[0]
        except struct.error as error:
            raise SerializationError(f"a double is 8 bytes, got {len(value)}: {error}") from error
        return result


class IntegerSerializer(Serializer):
    """int -> signed int32, big-endian (Java's IntegerSerializer)."""

    def __call__(self, obj: int | None, ctx: SerializationContext | None = None) -> bytes | None:
        if obj is None:
            return None
        try:
            return _INT32.pack(obj)
        except struct.error as error:
            raise SerializationError(f"{obj!r} is not a 32-bit signed integer: {error}") from error


class IntegerDeserializer(Deserializer):
    """Signed int32, big-endian -> int."""

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> int | None:
        if value is None:
            return None
        try:
            result: int = _INT32.unpack(value)[0]
        except struct.error as error:
            raise SerializationError(f"an int32 is 4 bytes, got {len(value)}: {error}") from error
        return result


class StringSerializer(Serializer):
    """str -> bytes in ``codec`` (UTF-8 unless told)."""

    def __init__(self, codec: str = "utf_8") -> None:
        codecs.lookup(codec)  # LookupError now for an unknown codec, not at the first record
        self.codec = codec

    def __call__(self, obj: str | None, ctx: SerializationContext | None = None) -> bytes | None:
        if obj is None:
            return None
        try:
            return obj.encode(self.codec)
        except (AttributeError, UnicodeError) as error:
            raise SerializationError(f"{obj!r} cannot be encoded as {self.codec}: {error}") from error


class StringDeserializer(Deserializer):
    """bytes in ``codec`` (UTF-8 unless told) -> str."""

    def __init__(self, codec: str = "utf_8") -> None:
        codecs.lookup(codec)
        self.codec = codec

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> str | None:
        if value is None:
            return None
        try:
            return value.decode(self.codec)
        except (AttributeError, UnicodeError) as error:
            raise SerializationError(f"the bytes are not valid {self.codec}: {error}") from error
