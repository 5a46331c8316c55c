"""confluent-kafka's own SchemaRegistryClient and its Avro, JSON Schema and Protobuf serializers (from PyPI, unchanged)
against the registry over HTTP: one live server (a thread of this process, no other process) for
the module's one scenario, with two tenants' cloud keys."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tests.support.live_server import running_live_server
from tests.webapp.api.conftest import TenantFixture, _make_tenant
from webapp.accounts.models import Role

pytestmark = pytest.mark.django_db(transaction=True)

ORDER = json.dumps({"type": "record", "name": "Order", "namespace": "acme", "fields": [{"name": "id", "type": "int"}, {"name": "item", "type": "string"}]})
ORDER_WITH_QUANTITY = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "acme",
        "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}, {"name": "quantity", "type": "int", "default": 1}],
    }
)
ORDER_WITHOUT_DEFAULT = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "acme",
        "fields": [{"name": "id", "type": "int"}, {"name": "item", "type": "string"}, {"name": "price", "type": "double"}],
    }
)

PAYMENT_JSON_SCHEMA = json.dumps(
    {"type": "object", "title": "Payment", "properties": {"id": {"type": "integer"}, "amount": {"type": "number"}}, "required": ["id"]}
)


def shipment_class() -> Any:
    """A Protobuf message class built from a descriptor at run time (what protoc's generated code holds)."""
    file = descriptor_pb2.FileDescriptorProto(name="acme/shipment.proto", package="acme", syntax="proto3")
    message = file.message_type.add(name="Shipment")
    message.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32, label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    message.field.add(name="carrier", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING, label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("acme.Shipment"))


@pytest.fixture
def live_server(transactional_db: None) -> Iterator[Any]:
    with running_live_server() as server:
        yield server


def client_for(server: Any, tenant: TenantFixture, role: str = Role.OWNER) -> SchemaRegistryClient:
    key_id, secret = tenant.secrets[role]
    # The registry's URL has a path: the client joins its request paths onto it.
    return SchemaRegistryClient({"url": f"{server.url}/schema-registry", "basic.auth.user.info": f"{key_id}:{secret}"})


def error_of(call: Any) -> tuple[int, int]:
    with pytest.raises(SchemaRegistryError) as raised:
        call()
    return raised.value.http_status_code, raised.value.error_code


def test_confluent_kafkas_client_and_serializers_work_unchanged(live_server: Any, settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    acme, globex = _make_tenant("acme"), _make_tenant("globex")
    client = client_for(live_server, acme)

    schema_id = client.register_schema("orders-value", Schema(ORDER, "AVRO"))
    assert client.get_schema(schema_id).schema_str == ORDER
    assert client.lookup_schema("orders-value", Schema(ORDER, "AVRO")).version == 1
    assert client.get_subjects() == ["orders-value"]
    assert "AVRO" in client.get_schema_types()

    # The serializer writes Confluent's framing (magic byte 0, the 4-byte id); the deserializer reads it back by id.
    context = SerializationContext("orders", MessageField.VALUE)
    payload = AvroSerializer(client, ORDER)({"id": 7, "item": "tea"}, context)
    assert payload is not None and payload[0] == 0 and int.from_bytes(payload[1:5], "big") == schema_id
    reader = AvroDeserializer(client_for(live_server, acme, Role.VIEWER))
    assert reader(payload, context) == {"id": 7, "item": "tea"}

    assert client.test_compatibility("orders-value", Schema(ORDER_WITH_QUANTITY, "AVRO")) is True
    evolved = client.register_schema("orders-value", Schema(ORDER_WITH_QUANTITY, "AVRO"))
    assert client.get_latest_version("orders-value").version == 2
    assert client.test_compatibility("orders-value", Schema(ORDER_WITHOUT_DEFAULT, "AVRO")) is False
    status, code = error_of(lambda: client.register_schema("orders-value", Schema(ORDER_WITHOUT_DEFAULT, "AVRO")))
    assert (status, code) == (409, 409)
    assert client.get_versions("orders-value") == [1, 2]

    client.set_compatibility("orders-value", "FULL")
    assert client.get_compatibility("orders-value") == "FULL"

    # Another tenant's key sees no subject and no id of this tenant.
    theirs = client_for(live_server, globex)
    assert theirs.get_subjects() == []
    assert error_of(lambda: theirs.get_schema(evolved)) == (404, 40403)
    assert error_of(lambda: theirs.get_latest_version("orders-value")) == (404, 40401)
    assert error_of(lambda: client_for(live_server, acme, Role.VIEWER).register_schema("x", Schema(ORDER, "AVRO"))) == (403, 40301)

    # JSON Schema and Protobuf through their serializers: registered by them, read back by id.
    payments = SerializationContext("payments", MessageField.VALUE)
    payment = JSONSerializer(PAYMENT_JSON_SCHEMA, client)({"id": 1, "amount": 9.5}, payments)
    assert payment is not None and JSONDeserializer(PAYMENT_JSON_SCHEMA, schema_registry_client=client)(payment, payments) == {"id": 1, "amount": 9.5}
    assert client.get_latest_version("payments-value").schema.schema_type == "JSON"
    shipment_type = shipment_class()
    shipments = SerializationContext("shipments", MessageField.VALUE)
    shipment = ProtobufSerializer(shipment_type, client, {"use.deprecated.format": False})(shipment_type(id=3, carrier="post"), shipments)
    decoded = ProtobufDeserializer(shipment_type, {"use.deprecated.format": False})(shipment, shipments)
    assert (decoded.id, decoded.carrier) == (3, "post")
    assert client.get_latest_version("shipments-value").schema.schema_type == "PROTOBUF"

    assert client.delete_version("orders-value", 2) == 2
    assert client.delete_subject("orders-value") == [1]
    assert client.delete_subject("orders-value", permanent=True) == [1, 2]
    assert error_of(lambda: client_for(live_server, acme).get_schema(schema_id)) == (404, 40403)
