"""weir.serialization and weir.error: Kafka's formats byte for byte as confluent-kafka's serializers,
typed errors for what cannot be converted, and the ACL types' checks and broker messages."""

from __future__ import annotations

import math

import pytest
from confluent_kafka import serialization as confluent

from weir import KafkaError, KafkaException
from weir.admin import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType, ResourceType
from weir.admin_acls import binding_message, binding_of, filter_message
from weir.error import ConsumeError, KeyDeserializationError, KeySerializationError, ProduceError, ValueDeserializationError, ValueSerializationError
from weir.serialization import (
    DoubleDeserializer,
    DoubleSerializer,
    IntegerDeserializer,
    IntegerSerializer,
    MessageField,
    SerializationContext,
    SerializationError,
    StringDeserializer,
    StringSerializer,
)
from weir.serializing_producer import build_serdes

CTX = SerializationContext("orders", MessageField.VALUE)
CONFLUENT_CTX = confluent.SerializationContext("orders", confluent.MessageField.VALUE)


@pytest.mark.parametrize(
    "ours, theirs, values",
    [
        (IntegerSerializer(), confluent.IntegerSerializer(), [0, 1, -1, 2**31 - 1, -(2**31), None]),
        (DoubleSerializer(), confluent.DoubleSerializer(), [0.0, -1.5, 1e300, math.inf, None]),
        (StringSerializer(), confluent.StringSerializer(), ["", "héllo", "日本", None]),
        (StringSerializer("latin_1"), confluent.StringSerializer("latin_1"), ["héllo"]),
    ],
)
def test_serializers_write_the_bytes_confluent_kafka_writes(ours, theirs, values) -> None:  # type: ignore[no-untyped-def]
    assert [ours(value, CTX) for value in values] == [theirs(value, CONFLUENT_CTX) for value in values]


@pytest.mark.parametrize(
    "deserializer, data, expected",
    [
        (IntegerDeserializer(), b"\xff\xff\xff\xfe", -2),
        (DoubleDeserializer(), confluent.DoubleSerializer()(2.5), 2.5),
        (StringDeserializer(), "日本".encode(), "日本"),
        (IntegerDeserializer(), None, None),
    ],
)
def test_deserializers_read_them_back(deserializer, data, expected) -> None:  # type: ignore[no-untyped-def]
    assert deserializer(data, CTX) == expected


@pytest.mark.parametrize(
    "call, problem",
    [
        (lambda: IntegerSerializer()(2**31, CTX), "32-bit"),
        (lambda: IntegerSerializer()("7", CTX), "32-bit"),
        (lambda: IntegerDeserializer()(b"\x00\x01", CTX), "4 bytes, got 2"),
        (lambda: DoubleDeserializer()(b"\x00", CTX), "8 bytes, got 1"),
        (lambda: StringDeserializer()(b"\xff\xfe", CTX), "not valid utf_8"),
        (lambda: StringSerializer("ascii")("é", CTX), "cannot be encoded as ascii"),
    ],
)
def test_what_cannot_be_converted_is_a_serialization_error_naming_why(call, problem) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SerializationError, match=problem) as raised:
        call()
    assert isinstance(raised.value, KafkaException)


def test_an_unknown_codec_is_refused_when_the_serializer_is_made() -> None:
    with pytest.raises(LookupError):
        StringSerializer("no-such-codec")


def test_error_classes_carry_the_codes_and_the_original_exception() -> None:
    cause = ValueError("bad key")
    key_error = KeySerializationError(cause)
    assert isinstance(key_error, ProduceError) and isinstance(key_error, SerializationError)
    assert (key_error.code, key_error.name, key_error.exception) == (KafkaError._KEY_SERIALIZATION, "_KEY_SERIALIZATION", cause)
    assert ValueSerializationError(cause).code == KafkaError._VALUE_SERIALIZATION
    read_error = ValueDeserializationError(cause, kafka_message=None)
    assert isinstance(read_error, ConsumeError) and read_error.code == KafkaError._VALUE_DESERIALIZATION
    assert KeyDeserializationError(cause).args[0].str() == "bad key"


def test_serdes_come_ready_made_or_from_a_builder_never_both() -> None:
    built = []

    class Builder:
        def build(self, conf, is_key):  # type: ignore[no-untyped-def]
            built.append(is_key)
            rest = dict(conf)
            rest.pop("builder.option")
            return StringSerializer(), rest

    key, value, owned, rest = build_serdes(
        {"bootstrap.servers": "x:1", "key.serializer": IntegerSerializer(), "value.serializer.builder": Builder(), "builder.option": 1}, "serializer"
    )
    assert isinstance(key, IntegerSerializer) and isinstance(value, StringSerializer) and owned == [value]
    assert rest == {"bootstrap.servers": "x:1"} and built == [False]
    with pytest.raises(ValueError, match="both set"):
        build_serdes({"key.serializer": IntegerSerializer(), "key.serializer.builder": Builder()}, "serializer")
    with pytest.raises(TypeError, match="must be callable"):
        build_serdes({"value.deserializer": "utf-8"}, "deserializer")


def test_acl_bindings_are_checked_as_confluent_kafka_checks_them() -> None:
    binding = AclBinding(ResourceType.TOPIC, "orders", "literal", "User:sa-1", "*", "READ", AclPermissionType.ALLOW)
    assert (binding.resource_pattern_type, binding.operation) == (ResourcePatternType.LITERAL, AclOperation.READ)
    with pytest.raises(ValueError, match="operation, value ANY"):
        AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:sa-1", "*", AclOperation.ANY, AclPermissionType.ALLOW)
    with pytest.raises(ValueError, match="principal to be not None"):
        AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, None, "*", AclOperation.READ, AclPermissionType.ALLOW)
    with pytest.raises(TypeError, match="name to be a string"):
        AclBinding(ResourceType.TOPIC, 7, ResourcePatternType.LITERAL, "User:sa-1", "*", AclOperation.READ, AclPermissionType.ALLOW)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be a AclOperation"):
        AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:sa-1", "*", "READ_EVERYTHING", AclPermissionType.ALLOW)
    with pytest.raises(ValueError, match="restype, value UNKNOWN"):
        AclBindingFilter(ResourceType.UNKNOWN, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)


def test_acl_messages_use_kafkas_names_and_read_back() -> None:
    binding = AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:sa-1", "*", AclOperation.ALTER, AclPermissionType.DENY)
    message = binding_message(binding)
    assert (message.resource_type, message.pattern_type, message.operation, message.permission) == ("CLUSTER", "LITERAL", "ALTER", "DENY")
    assert binding_of(message) == binding
    every_topic = filter_message(AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY))
    assert every_topic.resource_type == "TOPIC"
    assert [field.name for field, _ in every_topic.ListFields()] == ["resource_type"]
    matching = filter_message(AclBindingFilter(ResourceType.ANY, "orders", ResourcePatternType.MATCH, "User:sa-1", None, AclOperation.READ, "ALLOW"))
    assert {field.name: value for field, value in matching.ListFields()} == {
        "resource_name": "orders",
        "pattern_type": "MATCH",
        "principal": "User:sa-1",
        "operation": "READ",
        "permission": "ALLOW",
    }
