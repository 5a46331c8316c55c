"""confluent-kafka's ``confluent_kafka.error``: the exceptions of the serializing clients.

``ConsumeError`` and ``ProduceError`` wrap a :class:`KafkaError` with the original exception
and, for a consumed record, the :class:`Message` whose key or value could not be read (its raw
bytes stay available there). The (de)serialization errors are also ``SerializationError``\\ s,
as in confluent-kafka, so either ``except`` catches them.
"""

from __future__ import annotations

from weir.errors import KafkaError, KafkaException
from weir.message import Message
from weir.serialization import SerializationError

__all__ = [
    "ConsumeError",
    "KafkaError",
    "KafkaException",
    "KeyDeserializationError",
    "KeySerializationError",
    "Message",
    "ProduceError",
    "SerializationError",
    "ValueDeserializationError",
    "ValueSerializationError",
]


class _KafkaClientError(KafkaException):
    def __init__(self, kafka_error: KafkaError, exception: BaseException | None = None, kafka_message: Message | None = None) -> None:
        KafkaException.__init__(self, kafka_error)
        self.exception = exception
        self.kafka_message = kafka_message

    @property
    def code(self) -> int:
        return self.error.code()

    @property
    def name(self) -> str:
        return self.error.name()


class ConsumeError(_KafkaClientError):
    """An error while consuming; ``kafka_message`` is the record (or error event) concerned."""


class KeyDeserializationError(ConsumeError, SerializationError):
    """The record's key could not be deserialized (_KEY_DESERIALIZATION)."""

    def __init__(self, exception: BaseException | None = None, kafka_message: Message | None = None) -> None:
        ConsumeError.__init__(self, KafkaError(KafkaError._KEY_DESERIALIZATION, str(exception)), exception, kafka_message)


class ValueDeserializationError(ConsumeError, SerializationError):
    """The record's value could not be deserialized (_VALUE_DESERIALIZATION)."""

    def __init__(self, exception: BaseException | None = None, kafka_message: Message | None = None) -> None:
        ConsumeError.__init__(self, KafkaError(KafkaError._VALUE_DESERIALIZATION, str(exception)), exception, kafka_message)


class ProduceError(_KafkaClientError):
    """An error while producing."""

    def __init__(self, kafka_error: KafkaError, exception: BaseException | None = None) -> None:
        super().__init__(kafka_error, exception, None)


class KeySerializationError(ProduceError, SerializationError):
    """The key could not be serialized (_KEY_SERIALIZATION); nothing was produced."""

    def __init__(self, exception: BaseException | None = None) -> None:
        ProduceError.__init__(self, KafkaError(KafkaError._KEY_SERIALIZATION, str(exception)), exception)


class ValueSerializationError(ProduceError, SerializationError):
    """The value could not be serialized (_VALUE_SERIALIZATION); nothing was produced."""

    def __init__(self, exception: BaseException | None = None) -> None:
        ProduceError.__init__(self, KafkaError(KafkaError._VALUE_SERIALIZATION, str(exception)), exception)
