"""confluent-kafka's ``SerializingProducer``: a Producer that serializes keys and values itself.

Configuration as the Producer's, plus ``key.serializer`` / ``value.serializer`` (a
:class:`~weir.serialization.Serializer` or any callable ``(obj, ctx) -> bytes``) or, instead,
``key.serializer.builder`` / ``value.serializer.builder`` (a SerializerBuilder: the producer
builds the serializer from its configuration and closes it when it closes). Without a
serializer, keys and values must already be bytes or str, as for the Producer.

A serializer that fails raises ``KeySerializationError`` / ``ValueSerializationError`` from
``produce()``; nothing is queued.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from weir.error import KeySerializationError, ValueSerializationError
from weir.producer import Producer
from weir.serialization import MessageField, SerializationContext

__all__ = ["SerializingProducer", "build_serdes", "close_owned"]

Serde = Callable[..., Any]


def build_serdes(conf: Mapping[str, Any], kind: str) -> tuple[Serde | None, Serde | None, list[Any], dict[str, Any]]:
    """(key serde, value serde, the ones built here, the configuration left for the client).

    ``kind`` is "serializer" or "deserializer": reads ``key.<kind>``, ``value.<kind>`` and their
    ``.builder`` variants. Both a serde and its builder for one field is a ValueError.
    """
    rest = dict(conf)
    ready = {field: rest.pop(f"{field}.{kind}", None) for field in ("key", "value")}
    builders = {field: rest.pop(f"{field}.{kind}.builder", None) for field in ("key", "value")}
    owned: list[Any] = []
    serdes: dict[str, Serde | None] = {}
    for field in ("key", "value"):
        serde, builder = ready[field], builders[field]
        if serde is not None and builder is not None:
            raise ValueError(f"{field}.{kind} and {field}.{kind}.builder are both set: give one")
        if serde is not None and not callable(serde):
            raise TypeError(f"{field}.{kind} must be callable as (obj, SerializationContext), got {type(serde).__name__}")
        if builder is not None:
            if not callable(getattr(builder, "build", None)):
                raise TypeError(f"{field}.{kind}.builder must have a build(conf, is_key) method, got {type(builder).__name__}")
            serde, rest = builder.build(rest, field == "key")
            owned.append(serde)
        serdes[field] = serde
    return serdes["key"], serdes["value"], owned, rest


def close_owned(owned: list[Any]) -> None:
    for serde in owned:
        close = getattr(serde, "close", None)
        if callable(close):
            close()


class SerializingProducer(Producer):
    """A Producer whose ``produce()`` serializes the key and value with the configured serializers."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self._key_serializer, self._value_serializer, self._owned_serdes, rest = build_serdes(conf, "serializer")
        try:
            super().__init__(rest)
        except BaseException:
            close_owned(self._owned_serdes)
            raise

    def produce(  # type: ignore[override]
        self,
        topic: str,
        key: Any = None,
        value: Any = None,
        partition: int = -1,
        on_delivery: Callable[..., Any] | None = None,
        timestamp: int = 0,
        headers: Mapping[str, Any] | Sequence[tuple[str, Any]] | None = None,
    ) -> None:
        """Serialize ``key`` then ``value`` and queue the record (confluent-kafka's keyword order: key before value)."""
        if self._closed:
            raise RuntimeError("Producer has been closed")
        if not isinstance(topic, str):
            raise TypeError(f"topic must be a str, not {type(topic).__name__}")
        header_list = list(headers.items()) if isinstance(headers, Mapping) else (list(headers) if headers else None)
        ctx = SerializationContext(topic, MessageField.KEY, header_list)
        if self._key_serializer is not None:
            try:
                key = self._key_serializer(key, ctx)
            except Exception as error:
                raise KeySerializationError(error) from error
        ctx.field = MessageField.VALUE
        if self._value_serializer is not None:
            try:
                value = self._value_serializer(value, ctx)
            except Exception as error:
                raise ValueSerializationError(error) from error
        super().produce(topic, value, key, partition=partition, on_delivery=on_delivery, timestamp=timestamp, headers=headers)

    def close(self, timeout: float | None = None) -> int:
        """Close the producer, then the serializers built from a ``.builder``."""
        remaining = super().close(timeout)
        owned, self._owned_serdes = self._owned_serdes, []
        close_owned(owned)
        return remaining
