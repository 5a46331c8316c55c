"""confluent-kafka's legacy ``confluent_kafka.avro`` (deprecated there since 2.0.2), over :mod:`weir.schema_registry`.

``AvroProducer(config, default_key_schema=None, default_value_schema=None)`` encodes keys and
values with weir's ``AvroSerializer`` (subjects ``<topic>-key`` / ``<topic>-value``, schemas
registered automatically); ``AvroConsumer(config, reader_key_schema=None, reader_value_schema=None)``
decodes them in ``poll()`` with ``AvroDeserializer``. ``schema.registry.*`` keys of ``config``
configure the registry client (``schema.registry.url``...), the rest the Kafka client. ``loads()``
and ``load()`` parse a schema (fastavro, the ``weir[avro]`` extra) and return it as its JSON
text. As in confluent-kafka both classes warn with DeprecationWarning: new code should use
``SerializingProducer`` / ``DeserializingConsumer`` with ``weir.schema_registry.avro``.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

from weir.consumer import Consumer
from weir.message import Message
from weir.producer import Producer
from weir.schema_registry.avro import AvroDeserializer, AvroSerializer
from weir.schema_registry.client import SchemaRegistryClient
from weir.schema_registry.optional import require
from weir.serialization import MessageField, SerializationContext, SerializationError

__all__ = [
    "AvroConsumer",
    "AvroProducer",
    "CachedSchemaRegistryClient",
    "ClientError",
    "Consumer",
    "KeySerializerError",
    "MessageSerializer",
    "Producer",
    "SerializerError",
    "ValueSerializerError",
    "load",
    "loads",
]


class ClientError(Exception):
    """A registry request or a produce call that cannot be made (confluent_kafka.avro.error.ClientError)."""

    def __init__(self, message: str, http_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.http_code = http_code


class SerializerError(Exception):
    """A key or value that cannot be encoded or decoded."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class KeySerializerError(SerializerError):
    pass


class ValueSerializerError(SerializerError):
    pass


def loads(schema_str: str) -> str:
    """The Avro schema ``schema_str``, checked; SchemaParseException-like ClientError when it is not one."""
    try:
        parsed = json.loads(schema_str)
    except (TypeError, ValueError) as error:
        raise ClientError(f"the Avro schema is not JSON: {error}") from error
    try:
        require("fastavro").parse_schema(parsed)
    except Exception as error:  # fastavro raises SchemaParseException, UnknownType, ValueError...
        raise ClientError(f"the Avro schema is invalid: {error}") from error
    return json.dumps(parsed)


def load(fp: str) -> str:
    """The Avro schema in file ``fp``."""
    with open(fp, encoding="utf-8") as handle:
        return loads(handle.read())


class CachedSchemaRegistryClient(SchemaRegistryClient):
    """The legacy client: ``CachedSchemaRegistryClient({"url": ...})`` or ``CachedSchemaRegistryClient(url)``."""

    def __init__(self, conf: dict[str, Any] | str, **kwargs: Any) -> None:
        super().__init__({"url": conf} if isinstance(conf, str) else dict(conf), **kwargs)


class MessageSerializer:
    """Encodes and decodes records in Confluent's framing, subjects named by the topic (TopicNameStrategy)."""

    def __init__(self, registry_client: SchemaRegistryClient, reader_key_schema: str | None = None, reader_value_schema: str | None = None) -> None:
        self.registry_client = registry_client
        self._serializers: dict[tuple[str, bool], AvroSerializer] = {}
        self._deserializers = {
            True: AvroDeserializer(registry_client, _text(reader_key_schema)),
            False: AvroDeserializer(registry_client, _text(reader_value_schema)),
        }

    def encode_record_with_schema(self, topic: str, schema: Any, record: Any, is_key: bool = False) -> bytes:
        error = KeySerializerError if is_key else ValueSerializerError
        schema_text = _text(schema)
        if schema_text is None:
            raise error("Avro schema required for " + ("key" if is_key else "values"))
        serializer = self._serializers.get((schema_text, is_key))
        if serializer is None:
            serializer = self._serializers.setdefault((schema_text, is_key), AvroSerializer(self.registry_client, schema_text))
        try:
            encoded = serializer(record, _context(topic, is_key))
        except SerializationError as failure:
            raise error(str(failure)) from failure
        return encoded if encoded is not None else b""

    def decode_message(self, message: bytes | None, is_key: bool = False) -> Any:
        if message is None:
            return None
        try:
            return self._deserializers[is_key](message, _context("", is_key))
        except SerializationError as failure:
            raise SerializerError(str(failure)) from failure


def _context(topic: str, is_key: bool) -> SerializationContext:
    return SerializationContext(topic, MessageField.KEY if is_key else MessageField.VALUE)


def _text(schema: Any) -> str | None:
    return None if schema is None else str(schema)


def _split_config(config: dict[str, Any], schema_registry: SchemaRegistryClient | None) -> tuple[dict[str, Any], SchemaRegistryClient]:
    registry_conf = {key.removeprefix("schema.registry."): value for key, value in config.items() if key.startswith("schema.registry")}
    client_conf = {key: value for key, value in config.items() if not key.startswith("schema.registry")}
    if schema_registry is None:
        return client_conf, CachedSchemaRegistryClient(registry_conf)
    if registry_conf.get("url") is not None:
        raise ValueError("Cannot pass schema_registry along with schema.registry.url config")
    return client_conf, schema_registry


class AvroProducer(Producer):
    """Deprecated (as in confluent-kafka): a Producer whose produce() encodes key and value with Avro schemas."""

    def __init__(
        self,
        config: dict[str, Any],
        default_key_schema: Any = None,
        default_value_schema: Any = None,
        schema_registry: SchemaRegistryClient | None = None,
        **kwargs: Any,
    ) -> None:
        warnings.warn("AvroProducer has been deprecated. Use AvroSerializer instead.", category=DeprecationWarning, stacklevel=2)
        client_conf, registry = _split_config(config, schema_registry)
        super().__init__(client_conf, **kwargs)
        self._serializer = MessageSerializer(registry)
        self._key_schema = default_key_schema
        self._value_schema = default_value_schema

    def produce(self, *args: Any, **kwargs: Any) -> None:
        """``produce(topic=..., value=..., key=..., value_schema=..., key_schema=..., **Producer.produce's keywords)``."""
        if args:
            raise ClientError("AvroProducer.produce() takes keyword arguments only (topic=, value=, key=...)")
        key_schema = kwargs.pop("key_schema", self._key_schema)
        value_schema = kwargs.pop("value_schema", self._value_schema)
        topic = kwargs.pop("topic", None)
        if not topic:
            raise ClientError("Topic name not specified.")
        value = kwargs.pop("value", None)
        key = kwargs.pop("key", None)
        if value is not None:
            value = self._serializer.encode_record_with_schema(topic, value_schema, value)
        if key is not None:
            key = self._serializer.encode_record_with_schema(topic, key_schema, key, True)
        super().produce(topic, value, key, **kwargs)


class AvroConsumer(Consumer):
    """Deprecated (as in confluent-kafka): a Consumer whose poll() returns messages with decoded key and value."""

    def __init__(
        self,
        config: dict[str, Any],
        schema_registry: SchemaRegistryClient | None = None,
        reader_key_schema: Any = None,
        reader_value_schema: Any = None,
        **kwargs: Any,
    ) -> None:
        warnings.warn("AvroConsumer has been deprecated. Use AvroDeserializer instead.", category=DeprecationWarning, stacklevel=2)
        client_conf, registry = _split_config(config, schema_registry)
        super().__init__(client_conf, **kwargs)
        self._serializer = MessageSerializer(registry, _text(reader_key_schema), _text(reader_value_schema))

    def poll(self, timeout: float | None = None) -> Message | None:
        message = super().poll(-1 if timeout is None else timeout)
        if message is None or message.error():
            return message
        try:
            if message.value() is not None:
                message.set_value(self._serializer.decode_message(message.value(), is_key=False))
            if message.key() is not None:
                message.set_key(self._serializer.decode_message(message.key(), is_key=True))
        except SerializerError as error:
            raise SerializerError(
                f"Message deserialization failed for message at {message.topic()} [{message.partition()}] offset {message.offset()}: {error}"
            ) from error
        return message
