"""Schema-aware records in the dashboard, through Django's client and the registry's actions (no
broker): keys and values in Confluent's wire format decode by the tenant's schema (Avro, JSON
Schema, Protobuf with its message indexes), an unknown or another tenant's id is shown as such over
the hex, lookups are cached per request, and the produce form validates typed JSON against a
chosen version and encodes it."""

from __future__ import annotations

import json
import struct

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.webapp.dashboard.conftest import Member
from tests.webapp.dashboard.test_topics import create_topic
from webapp.dashboard.data_plane import BrowsedRecord
from webapp.dashboard.forms.messages import ProduceForm
from webapp.dashboard.record_scan import ScanResult
from webapp.dashboard.views import messages as message_views
from webapp.schemas.facade import Decoded, EncodingError, UnknownSchema, WireDecoder, delete_version, encode, register

pytestmark = pytest.mark.django_db

ORDER = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}]}
CUSTOMER = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]}
PROTO = 'syntax = "proto3";\npackage shop;\nmessage Payment { string id = 1; int64 cents = 2; }\nmessage Refund { int32 amount = 1; message Reason { string text = 1; } }\n'


def seed(member: Member) -> dict[str, int]:
    """Registers one schema of each type; their ids by subject."""
    ids = {
        "orders-value": register(member.actor, "orders-value", {"schema": json.dumps(ORDER)}).schema_id,
        "customers-value": register(member.actor, "customers-value", {"schema": json.dumps(CUSTOMER), "schemaType": "JSON"}).schema_id,
        "payments-value": register(member.actor, "payments-value", {"schema": PROTO, "schemaType": "PROTOBUF"}).schema_id,
    }
    return ids


def header(schema_id: int) -> bytes:
    return struct.pack(">bI", 0, schema_id)


def test_each_type_round_trips_through_encode_and_the_decoder(owner: Member) -> None:
    ids = seed(owner)
    decoder = WireDecoder(owner.tenant)
    avro = encode(owner.tenant, "orders-value", 1, '{"id": "o-1", "qty": 3}')
    assert avro[:5] == header(ids["orders-value"]) and avro[5:] == b"\x06o-1\x06"
    decoded = decoder.decode(avro)
    assert isinstance(decoded, Decoded) and json.loads(decoded.text) == {"id": "o-1", "qty": 3}
    assert (decoded.subject, decoded.version, decoded.schema_type) == ("orders-value", 1, "AVRO")
    document = encode(owner.tenant, "customers-value", 1, '{"name": "Ada"}')
    assert document == header(ids["customers-value"]) + b'{"name": "Ada"}'
    assert json.loads(decoder.decode(document).text) == {"name": "Ada"}  # type: ignore[union-attr]
    proto = encode(owner.tenant, "payments-value", 1, '{"id": "p-1", "cents": "250"}')
    assert proto[:6] == header(ids["payments-value"]) + b"\x00"
    assert json.loads(decoder.decode(proto).text) == {"id": "p-1", "cents": "250"}  # type: ignore[union-attr]


def test_protobuf_message_indexes_pick_the_message_and_nested_ones(owner: Member) -> None:
    ids = seed(owner)
    decoder = WireDecoder(owner.tenant)
    # indexes [1] (zig-zag: count 1 -> 2, index 1 -> 2): Refund; amount = 5
    refund = decoder.decode(header(ids["payments-value"]) + b"\x02\x02" + b"\x08\x05")
    assert isinstance(refund, Decoded) and json.loads(refund.text) == {"amount": 5}
    # indexes [1, 0]: Refund.Reason; text = "late"
    reason = decoder.decode(header(ids["payments-value"]) + b"\x04\x02\x00" + b"\x0a\x04late")
    assert json.loads(reason.text) == {"text": "late"}  # type: ignore[union-attr]
    missing = decoder.decode(header(ids["payments-value"]) + b"\x02\x08")
    assert isinstance(missing, Decoded) and "message index 4 is not in the schema" in missing.error


def test_unknown_and_other_tenants_ids_are_unknown_and_plain_bytes_are_not_decoded(owner: Member, other_owner: Member) -> None:
    seed(owner)
    other_ids = seed(other_owner)
    register(other_owner.actor, "extra", {"schema": '"string"'})
    decoder = WireDecoder(owner.tenant)
    assert decoder.decode(header(4) + b"\x02a") == UnknownSchema(4)  # the other tenant's 4th id
    assert decoder.decode(header(other_ids["orders-value"]) + b"\x00")  # the same number is this tenant's own schema
    assert decoder.decode(b'{"plain": "json"}') is None and decoder.decode(b"\x00\x01") is None and decoder.decode(None) is None
    broken = decoder.decode(header(1) + b"\x06o")
    assert isinstance(broken, Decoded) and broken.error.startswith("does not decode with this schema")


def test_a_schema_whose_reference_was_deleted_since_shows_why_over_the_hex(owner: Member) -> None:
    register(owner.actor, "money", {"schema": json.dumps({"type": "fixed", "name": "Money", "size": 2})})
    invoice = {"type": "record", "name": "Invoice", "fields": [{"name": "amount", "type": "Money"}]}
    references = [{"name": "Money", "subject": "money", "version": 1}]
    schema_id = register(owner.actor, "invoice-value", {"schema": json.dumps(invoice), "references": references}).schema_id
    delete_version(owner.actor, "invoice-value", 1, permanent=False)
    delete_version(owner.actor, "money", 1, permanent=False)
    decoded = WireDecoder(owner.tenant).decode(header(schema_id) + b"ab")
    assert isinstance(decoded, Decoded) and (decoded.subject, decoded.version) == ("invoice-value", 1)
    assert decoded.error.startswith("the registered schema cannot be used: ") and "money" in decoded.error


def test_lookups_are_cached_per_decoder(owner: Member) -> None:
    ids = seed(owner)
    decoder = WireDecoder(owner.tenant)
    payload = encode(owner.tenant, "orders-value", 1, '{"id": "a", "qty": 1}')
    decoder.decode(payload)
    decoder.decode(header(77))
    with CaptureQueriesContext(connection) as queries:
        for _ in range(5):
            decoder.decode(payload)
            decoder.decode(header(77))
    assert len(queries) == 0 and ids


def test_json_schema_encoding_follows_references_to_other_subjects(owner: Member) -> None:
    address = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    register(owner.actor, "address", {"schema": json.dumps(address), "schemaType": "JSON"})
    person = {"type": "object", "properties": {"home": {"$ref": "address.json"}}}
    references = [{"name": "address.json", "subject": "address", "version": 1}]
    register(owner.actor, "people-value", {"schema": json.dumps(person), "schemaType": "JSON", "references": references})
    with pytest.raises(EncodingError) as refused:
        encode(owner.tenant, "people-value", 1, '{"home": {"city": 3}}')
    assert refused.value.message == "Field home/city: 3 is not of type 'string'"
    assert encode(owner.tenant, "people-value", 1, '{"home": {"city": "Oslo"}}').endswith(b'{"home": {"city": "Oslo"}}')


@pytest.mark.parametrize(
    ("subject", "typed", "message"),
    [
        ("orders-value", '{"id": "o", "qty": "three"}', "Order.qty is <three>"),
        ("customers-value", '{"age": 3}', "'name' is a required property"),
        ("customers-value", '{"name": "A", "age": "x"}', "Field age: 'x' is not of type 'integer'"),
        ("payments-value", '{"id": "p", "colour": "red"}', 'no field named "colour"'),
        ("orders-value", "{oops", "Not valid JSON"),
    ],
)
def test_encoding_names_the_field_that_does_not_fit(owner: Member, subject: str, typed: str, message: str) -> None:
    seed(owner)
    with pytest.raises(EncodingError) as refused:
        encode(owner.tenant, subject, 1, typed)
    assert message in refused.value.message


def test_the_produce_form_encodes_key_and_value_and_shows_a_field_error(owner: Member) -> None:
    seed(owner)
    create_topic(owner, "orders")
    form = ProduceForm(
        {"key": '{"name": "Ada"}', "key_schema": "customers-value/1", "value": '{"id": "o-1", "qty": 2}', "value_schema": "orders-value/1"},
        partition_count=2,
        tenant=owner.tenant,
    )
    assert form.is_valid(), form.errors
    assert form.record_value() == encode(owner.tenant, "orders-value", 1, '{"id": "o-1", "qty": 2}')
    assert form.record_key() == encode(owner.tenant, "customers-value", 1, '{"name": "Ada"}')
    page = owner.client.post(reverse("dashboard:topic_produce", args=["orders"]), {"value": '{"id": "o-1"}', "value_schema": "orders-value/1"})
    html = page.content.decode()
    assert page.status_code == 200 and "The value does not fit orders-value version 1" in html and "Order.qty" in html
    assert "orders-value v1 (AVRO, id 1)" in html


def test_the_browser_shows_decoded_records_with_their_schema_and_unknown_ids_as_hex(owner: Member, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = seed(owner)
    create_topic(owner, "orders")
    value = encode(owner.tenant, "orders-value", 1, '{"id": "o-7", "qty": 4}')
    records = [
        BrowsedRecord(offset=0, timestamp=None, timestamp_is_log_append_time=False, key=header(99) + b"k", value=value, headers=[]),
    ]
    # The data plane's scan is replaced (the broker scan has its own tests): what is rendered is under test.
    monkeypatch.setattr(message_views, "scan_topic", lambda *args, **kwargs: ScanResult(records, 1, 10, 1, "", {0: 1}))
    html = owner.client.get(reverse("dashboard:topic_messages", args=["orders"]), {"start": "latest", "partition": "0"}).content.decode()
    link = reverse("dashboard:schema_version", args=["orders-value", 1])
    assert f'schema id {ids["orders-value"]} (<a href="{link}">orders-value v1</a>)' in html
    assert "&quot;id&quot;: &quot;o-7&quot;" in html
    assert "unknown schema id 99" in html and "00 00 00 00 63 6b" in html
