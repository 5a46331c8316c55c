"""weir.avro, confluent-kafka's deprecated ``confluent_kafka.avro``: its MessageSerializer over an
in-memory registry (Confluent's framing, subjects <topic>-key / <topic>-value), schema
parsing, and AvroProducer's argument checks (no broker: produce() fails before sending)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from weir.avro import AvroProducer, ClientError, KeySerializerError, MessageSerializer, SerializerError, ValueSerializerError, loads
from weir.schema_registry.schema import Schema

USER = json.dumps({"type": "record", "name": "User", "namespace": "acme", "fields": [{"name": "name", "type": "string"}]})
USER_V2 = json.dumps(
    {"type": "record", "name": "User", "namespace": "acme", "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int", "default": -1}]}
)


class Registered:
    def __init__(self, schema_id: int) -> None:
        self.schema_id = schema_id


class InMemoryRegistry:
    """The calls the serializers make, over dicts: ids from 1, subjects as registered."""

    def __init__(self) -> None:
        self.schemas: dict[int, Schema] = {}
        self.subjects: dict[str, list[int]] = {}

    def register_schema_full_response(self, subject_name: str, schema: Schema, normalize_schemas: bool = False) -> Registered:
        found = next((schema_id for schema_id, known in self.schemas.items() if known.schema_str == schema.schema_str), None)
        schema_id = found if found is not None else len(self.schemas) + 1
        self.schemas[schema_id] = schema
        self.subjects.setdefault(subject_name, []).append(schema_id)
        return Registered(schema_id)

    def register_schema(self, subject_name: str, schema: Schema, normalize_schemas: bool = False) -> int:
        return self.register_schema_full_response(subject_name, schema).schema_id

    def get_schema(self, schema_id: int, subject_name: str | None = None, fmt: str | None = None) -> Schema:
        return self.schemas[schema_id]


def test_records_are_registered_under_the_topics_subjects_and_read_back() -> None:
    registry: Any = InMemoryRegistry()
    serializer = MessageSerializer(registry)
    value = serializer.encode_record_with_schema("users", loads(USER), {"name": "ada"})
    key = serializer.encode_record_with_schema("users", loads(USER), {"name": "k"}, is_key=True)
    assert registry.subjects == {"users-value": [1], "users-key": [1]}
    assert value[:5] == b"\x00\x00\x00\x00\x01"
    assert serializer.decode_message(value) == {"name": "ada"}
    assert serializer.decode_message(key, is_key=True) == {"name": "k"}
    assert serializer.decode_message(None) is None


def test_a_reader_schema_resolves_records_written_with_an_older_one() -> None:
    registry: Any = InMemoryRegistry()
    written = MessageSerializer(registry).encode_record_with_schema("users", USER, {"name": "ada"})
    reader = MessageSerializer(registry, reader_value_schema=loads(USER_V2))
    assert reader.decode_message(written) == {"name": "ada", "age": -1}


def test_bad_schemas_records_and_bytes_are_typed_errors() -> None:
    with pytest.raises(ClientError, match="not JSON"):
        loads("{nope")
    with pytest.raises(ClientError, match="invalid"):
        loads(json.dumps({"type": "record", "name": "R", "fields": [{"name": "x", "type": "nosuchtype"}]}))
    serializer = MessageSerializer(InMemoryRegistry())  # type: ignore[arg-type]
    with pytest.raises(ValueSerializerError, match="required for values"):
        serializer.encode_record_with_schema("users", None, {"name": "ada"})
    with pytest.raises(KeySerializerError, match="does not match"):
        serializer.encode_record_with_schema("users", USER, {"name": 3}, is_key=True)
    with pytest.raises(SerializerError, match="magic byte"):
        serializer.decode_message(b"\x07\x00\x00\x00\x01x")


def test_avro_producer_checks_its_arguments_as_confluent_kafkas_does() -> None:
    config = {"bootstrap.servers": "127.0.0.1:9", "schema.registry.url": "http://127.0.0.1:9"}
    with pytest.warns(DeprecationWarning, match="AvroSerializer"):
        producer = AvroProducer(config, default_value_schema=loads(USER))
    with pytest.raises(ClientError, match="Topic name not specified"):
        producer.produce(value={"name": "ada"})
    with pytest.raises(KeySerializerError, match="required for key"):
        producer.produce(topic="users", value=None, key={"name": "k"})
    with pytest.raises(ValueError, match="Cannot pass schema_registry"), pytest.warns(DeprecationWarning):
        AvroProducer(config, schema_registry=InMemoryRegistry())  # type: ignore[arg-type]
