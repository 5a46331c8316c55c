"""Confluent Schema Registry's REST API over Django's test client: subjects, versions, ids,
references, deletes, config, mode, compatibility checks, authentication, roles and tenancy."""

from __future__ import annotations

import json

import pytest

from tests.webapp.api.conftest import TenantFixture
from tests.webapp.schemas.conftest import RegistryClient, registry_client
from webapp.accounts.models import Role
from webapp.schemas.limits import MAX_SCHEMA_BYTES
from webapp.schemas.models import Schema, SubjectVersion

pytestmark = pytest.mark.django_db


def record(*fields: dict[str, object], name: str = "Order") -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "acme", "fields": list(fields)})


ORDER_V1 = record({"name": "id", "type": "int"})
ORDER_V2 = record({"name": "id", "type": "long"}, {"name": "note", "type": "string", "default": ""})
ORDER_NO_DEFAULT = record({"name": "id", "type": "int"}, {"name": "note", "type": "string"})


def register(registry: RegistryClient, subject: str, schema: str, **extra: object) -> tuple[int, object]:
    return registry.post(f"subjects/{subject}/versions", {"schema": schema, **extra})


def test_register_then_read_back_by_subject_version_and_id(registry: RegistryClient) -> None:
    assert register(registry, "orders-value", ORDER_V1) == (200, {"id": 1})
    assert register(registry, "orders-value", ORDER_V2) == (200, {"id": 2})
    assert registry.get("subjects") == (200, ["orders-value"])
    assert registry.get("subjects/orders-value/versions") == (200, [1, 2])
    status, latest = registry.get("subjects/orders-value/versions/latest")
    assert (status, latest["version"], latest["id"], latest["schema"]) == (200, 2, 2, ORDER_V2)
    assert "schemaType" not in latest
    assert registry.get("subjects/orders-value/versions/1")[1]["id"] == 1
    assert registry.get("subjects/orders-value/versions/1/schema") == (200, json.loads(ORDER_V1))
    assert registry.get("schemas/ids/1") == (200, {"schema": ORDER_V1})
    assert registry.get("schemas/ids/2/versions") == (200, [{"subject": "orders-value", "version": 2}])
    assert registry.get("schemas/ids/2/subjects") == (200, ["orders-value"])


def test_the_same_schema_is_one_id_across_subjects_and_registering_it_again_changes_nothing(registry: RegistryClient) -> None:
    assert register(registry, "a", ORDER_V1) == (200, {"id": 1})
    spaced = json.dumps(json.loads(ORDER_V1), indent=4)
    assert register(registry, "b", spaced) == (200, {"id": 1})
    assert register(registry, "a", ORDER_V1) == (200, {"id": 1})
    assert registry.get("subjects/a/versions") == (200, [1])
    assert registry.get("schemas/ids/1/subjects") == (200, ["a", "b"])


def test_lookup_finds_the_version_or_names_what_is_missing(registry: RegistryClient) -> None:
    register(registry, "orders-value", ORDER_V1)
    status, found = registry.post("subjects/orders-value", {"schema": ORDER_V1})
    assert (status, found["subject"], found["version"], found["id"]) == (200, "orders-value", 1, 1)
    assert registry.post("subjects/orders-value", {"schema": ORDER_V2})[1]["error_code"] == 40403
    assert registry.post("subjects/nothing", {"schema": ORDER_V1})[1]["error_code"] == 40401


def test_backward_incompatible_schema_is_409_with_reasons_and_nothing_is_stored(registry: RegistryClient) -> None:
    register(registry, "orders-value", ORDER_V1)
    status, error = register(registry, "orders-value", ORDER_NO_DEFAULT)
    assert status == 409 and error["error_code"] == 409
    assert "note" in error["message"] and "no default" in error["message"]
    assert registry.get("subjects/orders-value/versions") == (200, [1])
    assert Schema.objects.count() == 1


def test_compatibility_endpoint_answers_and_verbose_gives_reasons(registry: RegistryClient) -> None:
    register(registry, "orders-value", ORDER_V1)
    assert registry.post("compatibility/subjects/orders-value/versions/latest", {"schema": ORDER_V2}) == (200, {"is_compatible": True})
    status, answer = registry.post("compatibility/subjects/orders-value/versions/1?verbose=true", {"schema": ORDER_NO_DEFAULT})
    assert status == 200 and answer["is_compatible"] is False and "note" in answer["messages"][0]
    assert registry.post("compatibility/subjects/orders-value/versions/7", {"schema": ORDER_V2})[1]["error_code"] == 40402
    assert registry.post("compatibility/subjects/orders-value/versions/x", {"schema": ORDER_V2})[1]["error_code"] == 42202


def test_levels_per_subject_and_global_with_default_to_global(registry: RegistryClient) -> None:
    assert registry.get("config") == (200, {"compatibilityLevel": "BACKWARD"})
    assert registry.get("config/orders-value")[1]["error_code"] == 40408
    assert registry.get("config/orders-value?defaultToGlobal=true") == (200, {"compatibilityLevel": "BACKWARD"})
    assert registry.put("config/orders-value", {"compatibility": "none"}) == (200, {"compatibility": "NONE"})
    register(registry, "orders-value", ORDER_V1)
    assert register(registry, "orders-value", ORDER_NO_DEFAULT) == (200, {"id": 2})
    assert registry.put("config", {"compatibility": "FULL_TRANSITIVE"}) == (200, {"compatibility": "FULL_TRANSITIVE"})
    assert registry.delete("config/orders-value") == (200, {"compatibilityLevel": "NONE"})
    assert registry.get("config/orders-value?defaultToGlobal=true") == (200, {"compatibilityLevel": "FULL_TRANSITIVE"})
    assert registry.put("config", {"compatibility": "SIDEWAYS"})[1]["error_code"] == 42203
    assert registry.delete("config") == (200, {"compatibilityLevel": "FULL_TRANSITIVE"})
    assert registry.get("config") == (200, {"compatibilityLevel": "BACKWARD"})


def test_transitive_level_checks_every_live_version(registry: RegistryClient) -> None:
    registry.put("config/s", {"compatibility": "NONE"})
    register(registry, "s", record({"name": "id", "type": "int"}))
    register(registry, "s", record({"name": "other", "type": "string"}))
    registry.put("config/s", {"compatibility": "BACKWARD"})
    candidate = record({"name": "other", "type": "string"}, {"name": "more", "type": "int", "default": 0})
    assert registry.post("compatibility/subjects/s/versions", {"schema": candidate}) == (200, {"is_compatible": True})
    registry.put("config/s", {"compatibility": "BACKWARD_TRANSITIVE"})
    status, error = register(registry, "s", candidate)
    assert status == 409 and "version 1" in error["message"]


def test_soft_then_permanent_delete_follow_confluents_rules(registry: RegistryClient) -> None:
    register(registry, "s", ORDER_V1)
    register(registry, "s", ORDER_V2)
    assert registry.delete("subjects/s/versions/1?permanent=true")[1]["error_code"] == 40407
    assert registry.delete("subjects/s/versions/1") == (200, 1)
    assert registry.delete("subjects/s/versions/1")[1]["error_code"] == 40406
    assert registry.get("subjects/s/versions") == (200, [2])
    assert registry.get("subjects/s/versions?deleted=true") == (200, [1, 2])
    assert registry.get("schemas/ids/1")[0] == 200  # a soft-deleted version's id still resolves
    assert registry.delete("subjects/s?permanent=true")[1]["error_code"] == 40405
    assert registry.delete("subjects/s") == (200, [2])
    assert registry.delete("subjects/s")[1]["error_code"] == 40404
    assert registry.get("subjects") == (200, [])
    assert registry.get("subjects?deleted=true") == (200, ["s"])
    assert registry.get("subjects/s/versions/latest")[1]["error_code"] == 40401
    assert registry.get("subjects/s/versions/2?deleted=true")[1]["version"] == 2
    assert registry.delete("subjects/s?permanent=true") == (200, [1, 2])
    assert registry.get("schemas/ids/1")[1]["error_code"] == 40403
    assert registry.delete("subjects/s")[1]["error_code"] == 40401
    assert not SubjectVersion.objects.exists()


def test_re_registering_a_soft_deleted_schema_makes_a_new_version_with_the_same_id(registry: RegistryClient) -> None:
    register(registry, "s", ORDER_V1)
    registry.delete("subjects/s/versions/1")
    assert register(registry, "s", ORDER_V1) == (200, {"id": 1})
    assert registry.get("subjects/s/versions") == (200, [2])


def test_references_resolve_and_a_referenced_version_cannot_be_deleted(registry: RegistryClient) -> None:
    address = json.dumps({"type": "record", "name": "Address", "namespace": "acme", "fields": [{"name": "city", "type": "string"}]})
    assert register(registry, "address", address) == (200, {"id": 1})
    order = record({"name": "ship_to", "type": "acme.Address"})
    references = [{"name": "acme.Address", "subject": "address", "version": 1}]
    assert register(registry, "order", order, references=references) == (200, {"id": 2})
    assert registry.get("schemas/ids/2")[1]["references"] == references
    assert registry.get("subjects/address/versions/1/referencedby") == (200, [2])
    assert registry.delete("subjects/address/versions/1")[1]["error_code"] == 42206
    assert register(registry, "order", order)[1]["error_code"] == 42201  # the named type is unknown without it
    missing = [{"name": "acme.Address", "subject": "address", "version": 9}]
    status, error = register(registry, "other", order, references=missing)
    assert (status, error["error_code"]) == (422, 42201) and "does not exist" in error["message"]


def test_bad_input_answers_confluents_codes(registry: RegistryClient) -> None:
    assert register(registry, "s", '{"type": "record"}')[1]["error_code"] == 42201
    assert register(registry, "s", "not json")[1]["error_code"] == 42201
    assert register(registry, "s", ORDER_V1, schemaType="XML")[1]["error_code"] == 42201
    assert registry.post("subjects/s/versions", {"nothing": 1})[0] == 400
    assert registry.call("POST", "subjects/s/versions", None)[0] == 400
    too_big = json.dumps({"type": "record", "name": "Big", "doc": "x" * MAX_SCHEMA_BYTES, "fields": []})
    status, error = register(registry, "s", too_big)
    assert (status, error["error_code"]) == (422, 42201) and "1 MiB" in error["message"]
    assert register(registry, "bad\x01name", ORDER_V1)[1]["error_code"] == 42208
    assert registry.get("subjects/s/versions/0")[1]["error_code"] == 42202
    assert registry.get("subjects/none/versions/1")[1]["error_code"] == 40401
    assert registry.get("schemas/ids/99999999999")[1]["error_code"] == 40403
    assert registry.get("no/such/path")[0] == 404
    assert registry.call("PATCH", "subjects", {})[0] == 405
    assert not Schema.objects.exists()


def test_plain_json_content_type_is_accepted(registry: RegistryClient) -> None:
    assert registry.call("POST", "subjects/s/versions", {"schema": ORDER_V1}, content_type="application/json") == (200, {"id": 1})


def test_modes_readonly_refuses_writes_and_import_takes_explicit_ids(registry: RegistryClient, acme: TenantFixture) -> None:
    assert registry.get("mode") == (200, {"mode": "READWRITE"})
    assert registry.put("mode/s", {"mode": "READONLY"}) == (200, {"mode": "READONLY"})
    assert register(registry, "s", ORDER_V1)[1]["error_code"] == 42205
    assert registry.delete("mode/s") == (200, {"mode": "READONLY"})
    assert register(registry, "s", ORDER_V1) == (200, {"id": 1})
    assert register(registry, "s", ORDER_V2, id=40)[1]["error_code"] == 42205  # an id outside IMPORT
    assert registry.put("mode", {"mode": "IMPORT"})[1]["error_code"] == 42205  # schemas exist: needs force
    assert registry.put("mode?force=true", {"mode": "IMPORT"}) == (200, {"mode": "IMPORT"})
    assert register(registry, "t", ORDER_V2, id=40) == (200, {"id": 40})
    assert register(registry, "u", ORDER_V2, id=41)[1]["error_code"] == 42207
    assert register(registry, "u", ORDER_NO_DEFAULT, id=1)[1]["error_code"] == 42205  # id 1 holds another schema
    assert register(registry, "u", ORDER_NO_DEFAULT)[1]["error_code"] == 42205  # IMPORT needs the id
    assert registry.put("mode", {"mode": "SIDEWAYS"})[1]["error_code"] == 42204
    registry.put("mode", {"mode": "READWRITE"})
    assert register(registry, "u", ORDER_NO_DEFAULT) == (200, {"id": 41})  # ids continue after imported ones
    assert registry_client(acme, Role.DEVELOPER).put("mode", {"mode": "READONLY"})[1]["error_code"] == 40301


def test_keys_authenticate_and_roles_decide(acme: TenantFixture) -> None:
    status, error = registry_client(None).get("subjects")
    assert (status, error["error_code"]) == (401, 40101)
    wrong = registry_client(acme)
    wrong.authorization = "Basic " + "d3Jvbmc6a2V5"
    assert wrong.get("subjects")[1]["error_code"] == 40101
    viewer = registry_client(acme, Role.VIEWER)
    assert viewer.get("subjects") == (200, [])
    assert register(viewer, "s", ORDER_V1)[1]["error_code"] == 40301
    assert register(registry_client(acme, Role.DEVELOPER), "s", ORDER_V1) == (200, {"id": 1})
    assert viewer.post("compatibility/subjects/s/versions/latest", {"schema": ORDER_V2}) == (200, {"is_compatible": True})


def test_tenants_never_see_each_others_subjects_or_ids(acme: TenantFixture, globex: TenantFixture) -> None:
    ours, theirs = registry_client(acme), registry_client(globex)
    register(ours, "orders-value", ORDER_V1)
    register(ours, "orders-value", ORDER_V2)
    assert theirs.get("subjects") == (200, [])
    assert theirs.get("schemas/ids/1")[1]["error_code"] == 40403
    assert theirs.get("subjects/orders-value/versions")[1]["error_code"] == 40401
    assert theirs.delete("subjects/orders-value")[1]["error_code"] == 40401
    # Ids are per tenant: the other tenant's first schema is its id 1, even for the same text.
    assert register(theirs, "orders-value", ORDER_V2) == (200, {"id": 1})
    assert ours.get("schemas/ids/2")[1]["schema"] == ORDER_V2


def test_subject_names_with_slashes_route_to_the_subject(registry: RegistryClient) -> None:
    assert register(registry, "team%2Forders", ORDER_V1) == (200, {"id": 1})
    assert registry.get("subjects") == (200, ["team/orders"])
    assert registry.get("subjects/team%2Forders/versions/1")[1]["subject"] == "team/orders"


def test_schema_types_lists_the_available_formats(registry: RegistryClient) -> None:
    status, types = registry.get("schemas/types")
    assert status == 200 and "AVRO" in types


def test_changes_are_in_the_audit_log_as_rest_calls(registry: RegistryClient, acme: TenantFixture) -> None:
    from webapp.audit.facade import AuditEvent, Door

    register(registry, "s", ORDER_V1)
    registry.put("config/s", {"compatibility": "FULL"})
    registry.delete("subjects/s")
    events = list(AuditEvent.objects.filter(tenant=acme.tenant).order_by("at", "pk").values_list("action", "target", "door"))
    assert events[-3:] == [("schema.register", "s", Door.REST), ("schema.set_compatibility", "s", Door.REST), ("schema.delete_subject", "s", Door.REST)]


def test_a_body_over_the_upload_limit_is_413(registry: RegistryClient, settings) -> None:  # type: ignore[no-untyped-def]
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    status, error = register(registry, "s", json.dumps({"type": "record", "name": "Big", "doc": "x" * 2000, "fields": []}))
    assert (status, error["error_code"]) == (413, 413)


def test_protobuf_schemas_register_with_their_type_and_are_checked(registry: RegistryClient) -> None:
    v1 = 'syntax = "proto3";\npackage acme;\nmessage Order { int32 id = 1; string item = 2; }\n'
    v2 = 'syntax = "proto3";\npackage acme;\nmessage Order { int32 id = 1; string item = 2; int64 quantity = 3; }\n'
    assert register(registry, "orders-proto", v1, schemaType="PROTOBUF") == (200, {"id": 1})
    assert register(registry, "orders-proto", v2, schemaType="PROTOBUF") == (200, {"id": 2})
    assert registry.get("schemas/ids/2")[1]["schemaType"] == "PROTOBUF"
    assert registry.get("subjects/orders-proto/versions/latest")[1]["schemaType"] == "PROTOBUF"
    assert register(registry, "orders-proto", "message {", schemaType="PROTOBUF")[1]["error_code"] == 42201
    status, error = register(registry, "orders-proto", ORDER_V1)
    assert status == 409 and "schema type changed from PROTOBUF to AVRO" in error["message"]


def test_a_subject_deleted_whole_may_reference_itself_but_not_be_referenced_from_outside(registry: RegistryClient) -> None:
    address = json.dumps({"type": "record", "name": "Address", "namespace": "acme", "fields": [{"name": "city", "type": "string"}]})
    register(registry, "s", address)
    holder = record({"name": "a", "type": "acme.Address"}, name="Holder")
    references = [{"name": "acme.Address", "subject": "s", "version": 1}]
    registry.put("config/s", {"compatibility": "NONE"})
    assert register(registry, "s", holder, references=references) == (200, {"id": 2})
    assert registry.delete("subjects/s/versions/1")[1]["error_code"] == 42206
    assert registry.delete("subjects/s") == (200, [1, 2])


def test_versions_per_subject_are_limited(registry: RegistryClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("webapp.schemas.limits.MAX_VERSIONS_PER_SUBJECT", 2)
    registry.put("config/s", {"compatibility": "NONE"})
    register(registry, "s", ORDER_V1)
    register(registry, "s", ORDER_V2)
    status, error = register(registry, "s", ORDER_NO_DEFAULT)
    assert (status, error["error_code"]) == (422, 42205) and "limit" in error["message"]
    assert register(registry, "s", ORDER_V1) == (200, {"id": 1})  # a schema already there is found, not added
    assert registry.get("contexts") == (200, ["."])


def test_a_deleted_tenant_takes_its_registry_with_it(registry: RegistryClient, acme: TenantFixture) -> None:
    register(registry, "s", ORDER_V1)
    registry.put("config/s", {"compatibility": "NONE"})
    acme.tenant.delete()
    assert not Schema.objects.exists() and not SubjectVersion.objects.exists()
