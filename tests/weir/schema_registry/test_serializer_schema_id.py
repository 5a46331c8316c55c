"""A serializer's ``_schema_id``: the id its last record was written with, as confluent-kafka's
serializers keep it (its integration tests read it to look the registered schema up)."""

from __future__ import annotations

from typing import Any

from weir.schema_registry.json_schema import JSONSerializer
from weir.schema_registry.schema import RegisteredSchema, Schema
from weir.schema_registry.wire import MAGIC_BYTE
from weir.serialization import MessageField, SerializationContext

SCHEMA = '{"type": "object", "properties": {"n": {"type": "integer"}}}'


class FakeRegistry:
    """Answers registrations with id 7 and the subject's latest version with id 9."""

    def __init__(self) -> None:
        self.registered: list[str] = []

    def register_schema_full_response(self, subject: str, schema: Schema, normalize_schemas: bool = False) -> RegisteredSchema:
        self.registered.append(subject)
        return RegisteredSchema(subject, 1, 7, None, schema)

    def register_schema(self, subject: str, schema: Schema, normalize_schemas: bool = False) -> int:
        return self.register_schema_full_response(subject, schema, normalize_schemas).schema_id or 0

    def get_latest_version(self, subject: str) -> RegisteredSchema:
        return RegisteredSchema(subject, 3, 9, None, Schema(SCHEMA, "JSON"))


def written_id(payload: bytes | None) -> int:
    assert payload is not None and payload[0] == MAGIC_BYTE
    return int.from_bytes(payload[1:5], "big")


def test_schema_id_is_none_before_the_first_record_then_the_id_written_with() -> None:
    registry: Any = FakeRegistry()
    serializer = JSONSerializer(SCHEMA, registry)
    assert serializer._schema_id is None
    payload = serializer({"n": 1}, SerializationContext("orders", MessageField.VALUE))
    assert serializer._schema_id == written_id(payload) == 7
    assert registry.registered == ["orders-value"]

    latest = JSONSerializer(SCHEMA, registry, conf={"auto.register.schemas": False, "use.latest.version": True})
    assert written_id(latest({"n": 2}, SerializationContext("orders", MessageField.VALUE))) == latest._schema_id == 9
