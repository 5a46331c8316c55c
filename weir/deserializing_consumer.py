"""confluent-kafka's ``DeserializingConsumer``: a Consumer whose ``poll()`` deserializes keys and values.

Configuration as the Consumer's, plus ``key.deserializer`` / ``value.deserializer`` (a
:class:`~weir.serialization.Deserializer` or any callable ``(data, ctx) -> object``) or their
``.builder`` variants. ``poll()`` raises ``ConsumeError`` for an error event and
``KeyDeserializationError`` / ``ValueDeserializationError`` for a record that cannot be read
(its raw bytes are in the exception's ``kafka_message``); ``consume()`` is not offered, as in
confluent-kafka.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from weir.consumer import Consumer
from weir.error import ConsumeError, KeyDeserializationError, ValueDeserializationError
from weir.message import Message
from weir.serialization import MessageField, SerializationContext
from weir.serializing_producer import build_serdes, close_owned

__all__ = ["DeserializingConsumer"]


class DeserializingConsumer(Consumer):
    def __init__(self, conf: Mapping[str, Any]) -> None:
        self._key_deserializer, self._value_deserializer, self._owned_serdes, rest = build_serdes(conf, "deserializer")
        try:
            super().__init__(rest)
        except BaseException:
            close_owned(self._owned_serdes)
            raise

    def poll(self, timeout: float | None = None) -> Message | None:
        """The next record with its key and value deserialized, or None after ``timeout`` seconds."""
        messages = super().consume(1, -1 if timeout is None else timeout)
        if not messages:
            return None
        message = messages[0]
        error = message.error()
        if error is not None:
            raise ConsumeError(error, kafka_message=message)
        return self._deserialize(message)

    def _deserialize(self, message: Message) -> Message:
        topic = message.topic() or ""
        ctx = SerializationContext(topic, MessageField.KEY, message.headers())
        key: Any = message.key()
        if self._key_deserializer is not None:
            try:
                key = self._key_deserializer(key, ctx)
            except Exception as error:
                raise KeyDeserializationError(exception=error, kafka_message=message) from error
        value: Any = message.value()
        if self._value_deserializer is not None:
            ctx.field = MessageField.VALUE
            try:
                value = self._value_deserializer(value, ctx)
            except Exception as error:
                raise ValueDeserializationError(exception=error, kafka_message=message) from error
        message.set_key(key)
        message.set_value(value)
        return message

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        """Not offered, as in confluent-kafka: use poll()."""
        raise NotImplementedError("DeserializingConsumer.consume() is not implemented, use DeserializingConsumer.poll() instead")

    def close(self) -> None:
        """Close the consumer, then the deserializers built from a ``.builder``."""
        super().close()
        owned, self._owned_serdes = self._owned_serdes, []
        close_owned(owned)
