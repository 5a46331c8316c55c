"""weir.schema_registry against the control plane's registry over HTTP, beside confluent-kafka's own
client and serializers (PyPI): one live server (a thread of this process, no other process) for
the whole module; each test makes its tenants (fast password hashing). Four tests, not more: each
transactional test's teardown flushes the database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as ConfluentAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as ConfluentJSONDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as ConfluentJSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as ConfluentProtobufDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as ConfluentProtobufSerializer
from confluent_kafka.serialization import MessageField as ConfluentField
from confluent_kafka.serialization import SerializationContext as ConfluentContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tests.support.live_server import running_live_server
from tests.webapp.api.conftest import TenantFixture, _make_tenant, fast_password_hashing  # noqa: F401
from tests.webapp.schemas.test_confluent_client import ORDER, ORDER_WITH_QUANTITY, ORDER_WITHOUT_DEFAULT, PAYMENT_JSON_SCHEMA, shipment_class
from webapp.accounts.models import Role
from weir.schema_registry import (
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    SchemaRegistryError,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
)
from weir.schema_registry.avro import AvroDeserializer, AvroSerializer
from weir.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from weir.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from weir.schema_registry.wire import frame
from weir.serialization import MessageField, SerializationContext, SerializationError

ORDERS = SerializationContext("orders", MessageField.VALUE)
PAYMENTS = SerializationContext("payments", MessageField.VALUE)
SHIPMENTS = SerializationContext("shipments", MessageField.VALUE)
PRICES = SerializationContext("prices", MessageField.VALUE)
INVOICES = SerializationContext("invoices", MessageField.VALUE)
MONEY = json.dumps(
    {"type": "record", "name": "Money", "namespace": "acme", "fields": [{"name": "cents", "type": "long"}, {"name": "currency", "type": "string"}]}
)
PRICED = json.dumps(
    {"type": "record", "name": "Priced", "namespace": "acme", "fields": [{"name": "item", "type": "string"}, {"name": "price", "type": "acme.Money"}]}
)


def invoice_class() -> Any:
    """acme.Invoice of acme/invoice.proto, which imports acme/money.proto for its total."""
    label, int64 = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL, descriptor_pb2.FieldDescriptorProto.TYPE_INT64
    money = descriptor_pb2.FileDescriptorProto(name="acme/money.proto", package="acme", syntax="proto3")
    money.message_type.add(name="Cents").field.add(name="cents", number=1, type=int64, label=label)
    invoice = descriptor_pb2.FileDescriptorProto(name="acme/invoice.proto", package="acme", syntax="proto3", dependency=["acme/money.proto"])
    message = invoice.message_type.add(name="Invoice")
    message.field.add(name="id", number=1, type=int64, label=label)
    message.field.add(name="total", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE, type_name=".acme.Cents", label=label)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(money)
    pool.Add(invoice)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("acme.Invoice"))


pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fast_password_hashing")]


@dataclass
class Registry:
    url: str

    def tenant(self, name: str) -> TenantFixture:
        """A tenant with a cloud key per role, its registry empty (the database is flushed after each test)."""
        return _make_tenant(name)


@pytest.fixture(scope="module")
def registry(django_db_setup: None, django_db_blocker: Any) -> Iterator[Registry]:
    """One live control plane for the module; each test's data is committed, then flushed after it."""
    with django_db_blocker.unblock(), running_live_server() as server:
        yield Registry(f"{server.url}/schema-registry")  # type: ignore[attr-defined]


def conf_of(url: str, tenant: TenantFixture, role: str = Role.OWNER) -> dict[str, str]:
    key_id, secret = tenant.secrets[role]
    return {"url": url, "basic.auth.user.info": f"{key_id}:{secret}"}


class CountingRest:
    """Wraps a client's REST transport to count the requests it sends."""

    def __init__(self, client: SchemaRegistryClient) -> None:
        self.inner = client._rest
        self.sent: list[tuple[str, str]] = []
        client._rest = self  # type: ignore[assignment]

    def send(self, method: str, path: str, body: Any, query: Any) -> Any:
        self.sent.append((method, path))
        return self.inner.send(method, path, body, query)

    def get(self, path: str, query: Any = None) -> Any:
        return self.send("GET", path, None, query)

    def post(self, path: str, body: Any, query: Any = None) -> Any:
        return self.send("POST", path, body, query)

    def put(self, path: str, body: Any = None) -> Any:
        return self.send("PUT", path, body, None)

    def delete(self, path: str, query: Any = None) -> Any:
        return self.send("DELETE", path, None, query)


def test_the_client_registers_looks_up_caches_and_refuses_an_incompatible_schema(registry: Registry) -> None:
    acme = registry.tenant("acme")
    client = SchemaRegistryClient(conf_of(registry.url, acme))
    counting = CountingRest(client)

    schema_id = client.register_schema("orders-value", Schema(ORDER, "AVRO"))
    assert client.register_schema("orders-value", Schema(ORDER, "AVRO")) == schema_id
    assert client.get_schema(schema_id).schema_str == ORDER
    assert len(counting.sent) == 1  # the id by (subject, schema) and the schema by id came from the cache

    found = client.lookup_schema("orders-value", Schema(ORDER, "AVRO"))
    assert (found.subject, found.version, found.schema_id) == ("orders-value", 1, schema_id)
    assert client.test_compatibility("orders-value", Schema(ORDER_WITH_QUANTITY, "AVRO")) is True
    second = client.register_schema("orders-value", Schema(ORDER_WITH_QUANTITY, "AVRO"))
    assert client.get_versions("orders-value") == [1, 2]
    assert client.get_version("orders-value", 2).schema_id == second
    assert client.get_latest_version("orders-value").version == 2
    assert client.get_subjects() == ["orders-value"]
    assert [(version.subject, version.version) for version in client.get_schema_versions(second)] == [("orders-value", 2)]
    assert client.set_compatibility("orders-value", "FULL") == "FULL"
    assert client.get_compatibility("orders-value") == "FULL"

    requests = len(counting.sent)
    client.get_latest_version("orders-value")
    assert len(counting.sent) == requests  # the latest version is cached (no cache.latest.ttl.sec)
    assert client.delete_version("orders-value", 2) == 2
    assert client.get_latest_version("orders-value").version == 1  # deleting forgot it
    assert client.delete_subject("orders-value") == [1]
    assert client.delete_subject("orders-value", permanent=True) == [1, 2]
    with pytest.raises(SchemaRegistryError) as missing:
        client.get_latest_version("orders-value")
    assert (missing.value.http_status_code, missing.value.error_code) == (404, 40401)

    # A schema the subject's level refuses: 409 with the reason.
    client.register_schema("orders-value", Schema(ORDER, "AVRO"))
    assert client.test_compatibility("orders-value", Schema(ORDER_WITHOUT_DEFAULT, "AVRO")) is False
    with pytest.raises(SchemaRegistryError) as raised:
        client.register_schema("orders-value", Schema(ORDER_WITHOUT_DEFAULT, "AVRO"))
    assert (raised.value.http_status_code, raised.value.error_code) == (409, 409)
    assert "price" in raised.value.error_message  # the field without a default is named
    with pytest.raises(SchemaRegistryError) as viewer:
        SchemaRegistryClient(conf_of(registry.url, acme, Role.VIEWER)).register_schema("x-value", Schema(ORDER, "AVRO"))
    assert (viewer.value.http_status_code, viewer.value.error_code) == (403, 40301)


def test_round_trips_and_records_interchange_with_confluent_kafkas_serializers(registry: Registry) -> None:
    acme = registry.tenant("acme")
    ours = SchemaRegistryClient(conf_of(registry.url, acme))
    theirs = ConfluentClient(conf_of(registry.url, acme))
    order = {"id": 7, "item": "thé"}
    theirs_orders = ConfluentContext("orders", ConfluentField.VALUE)

    written = AvroSerializer(ours, ORDER)(order, ORDERS)
    assert written is not None and written[0] == 0
    assert AvroDeserializer(ours)(written, ORDERS) == order
    assert ConfluentAvroSerializer(theirs, ORDER)(order, theirs_orders) == written
    assert ConfluentAvroDeserializer(theirs)(written, theirs_orders) == order
    # A reader schema resolves the record to it (the added field takes its default).
    assert AvroDeserializer(ours, ORDER_WITH_QUANTITY)(written, ORDERS) == {**order, "quantity": 1}

    payment = {"id": 1, "amount": 9.5, "note": "ünïcode"}
    theirs_payments = ConfluentContext("payments", ConfluentField.VALUE)
    written = JSONSerializer(PAYMENT_JSON_SCHEMA, ours)(payment, PAYMENTS)
    assert written is not None and JSONDeserializer(None, schema_registry_client=ours)(written, PAYMENTS) == payment
    assert ConfluentJSONSerializer(PAYMENT_JSON_SCHEMA, theirs)(payment, theirs_payments) == written
    assert ConfluentJSONDeserializer(PAYMENT_JSON_SCHEMA, schema_registry_client=theirs)(written, theirs_payments) == payment
    with pytest.raises(SerializationError, match="id"):
        JSONSerializer(PAYMENT_JSON_SCHEMA, ours)({"amount": 1.0}, PAYMENTS)  # "id" is required

    shipment_type = shipment_class()
    shipment = shipment_type(id=3, carrier="post")
    theirs_shipments = ConfluentContext("shipments", ConfluentField.VALUE)
    written = ProtobufSerializer(shipment_type, ours)(shipment, SHIPMENTS)
    assert written is not None and written[5:6] == b"\x00"  # the first message of its file: index [0]
    decoded = ProtobufDeserializer(shipment_type, schema_registry_client=ours)(written, SHIPMENTS)
    assert (decoded.id, decoded.carrier) == (3, "post")
    assert ConfluentProtobufSerializer(shipment_type, theirs)(shipment, theirs_shipments) == written
    assert ConfluentProtobufDeserializer(shipment_type)(written, theirs_shipments) == shipment
    assert ours.get_latest_version("shipments-value").schema.schema_type == "PROTOBUF"

    # Records confluent-kafka wrote with a schema Weir's serializers never saw, read with a viewer's key.
    viewer = SchemaRegistryClient(conf_of(registry.url, acme, Role.VIEWER))
    written = ConfluentAvroSerializer(theirs, ORDER_WITH_QUANTITY)({"id": 2**40, "item": "tea", "quantity": 3}, theirs_orders)
    assert AvroDeserializer(viewer)(written, ORDERS) == {"id": 2**40, "item": "tea", "quantity": 3}
    payment_written = ConfluentJSONSerializer(PAYMENT_JSON_SCHEMA, theirs)({"id": 5}, theirs_payments)
    assert JSONDeserializer(PAYMENT_JSON_SCHEMA, schema_registry_client=viewer)(payment_written, PAYMENTS) == {"id": 5}


def test_subject_name_strategies_lookup_only_serializers_and_references(registry: Registry) -> None:
    acme = registry.tenant("acme")
    client = SchemaRegistryClient(conf_of(registry.url, acme))
    first = AvroSerializer(client, ORDER, conf={"subject.name.strategy": record_subject_name_strategy})({"id": 1, "item": "a"}, ORDERS)
    AvroSerializer(client, ORDER, conf={"subject.name.strategy": topic_record_subject_name_strategy})({"id": 1, "item": "a"}, ORDERS)
    JSONSerializer(PAYMENT_JSON_SCHEMA, client, conf={"subject.name.strategy": record_subject_name_strategy})({"id": 1}, PAYMENTS)
    assert client.get_subjects() == ["Payment", "acme.Order", "orders-acme.Order"]

    # Not registering: the schema must already be there, or the lookup's 40401 stops the record.
    with pytest.raises(SchemaRegistryError) as missing:
        AvroSerializer(client, ORDER, conf={"auto.register.schemas": False})({"id": 1, "item": "a"}, ORDERS)
    assert missing.value.error_code == 40401
    # use.latest.version writes with the subject's latest schema (its id), converting through to_dict.
    latest = client.register_schema("orders-value", Schema(ORDER_WITH_QUANTITY, "AVRO"))
    writer = AvroSerializer(
        client, ORDER, to_dict=lambda order, ctx: dict(order, quantity=2), conf={"auto.register.schemas": False, "use.latest.version": True}
    )
    written = writer({"id": 9, "item": "b"}, ORDERS)
    assert written is not None and int.from_bytes(written[1:5], "big") == latest
    assert AvroDeserializer(client, from_dict=lambda record, ctx: sorted(record.items()))(written, ORDERS) == [("id", 9), ("item", "b"), ("quantity", 2)]
    # use.latest.version reads a record written with the first schema as orders-value's latest.
    assert AvroDeserializer(client, conf={"use.latest.version": True})(first, ORDERS) == {"id": 1, "item": "a", "quantity": 1}

    # An Avro schema referencing a named type registered under another subject.
    client.register_schema("acme.Money", Schema(MONEY, "AVRO"))
    priced = Schema(PRICED, "AVRO", [SchemaReference("acme.Money", "acme.Money", 1)])
    record = {"item": "tea", "price": {"cents": 250, "currency": "EUR"}}
    written = AvroSerializer(client, priced)(record, PRICES)
    assert written is not None and AvroDeserializer(client)(written, PRICES) == record
    assert client.get_latest_version("prices-value").schema.references == [SchemaReference("acme.Money", "acme.Money", 1)]

    # A Protobuf file importing another: the import is registered under its file name first,
    # then the message's file with it as a reference, as confluent-kafka's serializer does.
    invoice_type = invoice_class()
    invoice = invoice_type(id=4, total={"cents": 99})
    written = ProtobufSerializer(invoice_type, client)(invoice, INVOICES)
    assert written is not None and ProtobufDeserializer(invoice_type, schema_registry_client=client)(written, INVOICES) == invoice
    assert client.get_latest_version("invoices-value").schema.references == [SchemaReference("acme/money.proto", "acme/money.proto", 1)]
    theirs = ConfluentClient(conf_of(registry.url, acme))
    assert ConfluentProtobufSerializer(invoice_type, theirs)(invoice, ConfluentContext("invoices", ConfluentField.VALUE)) == written


def test_bad_records_are_serialization_errors_naming_what_is_wrong(registry: Registry) -> None:
    acme, globex = registry.tenant("acme"), registry.tenant("globex")
    acme_client = SchemaRegistryClient(conf_of(registry.url, acme))
    written = AvroSerializer(acme_client, ORDER)({"id": 1, "item": "a"}, ORDERS)
    assert written is not None
    reader = AvroDeserializer(acme_client)

    with pytest.raises(SerializationError, match="magic byte 1"):
        reader(b"\x01" + written[1:], ORDERS)
    with pytest.raises(SerializationError, match="6 bytes or more"):
        reader(b"\x00\x00", ORDERS)
    with pytest.raises(SerializationError, match="schema id 987654 is not in this Schema Registry"):
        reader(frame(987654, written[5:]), ORDERS)
    # Another tenant's registry has no such id: the record is refused, not read with its schema.
    schema_id = int.from_bytes(written[1:5], "big")
    for theirs in (
        AvroDeserializer(SchemaRegistryClient(conf_of(registry.url, globex))),
        JSONDeserializer(None, schema_registry_client=SchemaRegistryClient(conf_of(registry.url, globex))),
        ProtobufDeserializer(shipment_class(), schema_registry_client=SchemaRegistryClient(conf_of(registry.url, globex))),
    ):
        with pytest.raises(SerializationError, match=f"schema id {schema_id} is not in this Schema Registry"):
            theirs(written[:5] + b"\x00" + written[5:], ORDERS)
    with pytest.raises(SerializationError, match="not a JSON one"):
        JSONDeserializer(None, schema_registry_client=acme_client)(written, ORDERS)
    with pytest.raises(SerializationError, match="does not match Avro schema acme.Order"):
        AvroSerializer(acme_client, ORDER)({"id": "seven", "item": "a"}, ORDERS)
    assert json.loads(acme_client.get_schema(schema_id).schema_str or "")["name"] == "Order"
