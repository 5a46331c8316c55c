"""A tenant's schema registry survives backup -> restore into an empty database: the REST API
answers the same ids, versions (soft-deleted ones too), references and settings, and a schema
registered afterwards gets an id above every id handed out before, even one permanently deleted."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

# The registry tests' tenant fixtures (a member key per role), as they are.
from tests.webapp.api.conftest import TenantFixture, acme, fast_password_hashing, globex, tenant_factory  # noqa: F401
from tests.webapp.backup.test_document import minimal_document
from tests.webapp.schemas.conftest import RegistryClient, registry_client
from webapp.backup.document import check_document, encode_document, parse_backup_bytes
from webapp.backup.dump import dump_control_plane
from webapp.backup.errors import BackupFormatError
from webapp.backup.load import restore_control_plane
from webapp.backup.schema import SECTIONS_BY_NAME
from webapp.schemas.compatibility import LEVELS, MODES

pytestmark = pytest.mark.django_db


def record(name: str, *fields: dict[str, object]) -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "acme", "fields": list(fields)})


ADDRESS_V1 = record("Address", {"name": "street", "type": "string"})
ADDRESS_V2 = record("Address", {"name": "street", "type": "string"}, {"name": "city", "type": "string", "default": ""})
ORDER = record("Order", {"name": "id", "type": "int"}, {"name": "ship_to", "type": "acme.Address"})
SCRATCH = record("Scratch", {"name": "x", "type": "int"})
PAYMENT = record("Payment", {"name": "amount", "type": "long"})
REFERENCES = [{"name": "acme.Address", "subject": "address", "version": 1}]

# What a client reads of the registry: each must answer the same after the restore.
READS = (
    "subjects",
    "subjects?deleted=true",
    "subjects/address/versions",
    "subjects/address/versions?deleted=true",
    "subjects/address/versions/2?deleted=true",
    "subjects/order-value/versions/1",
    "schemas/ids/1",
    "schemas/ids/2",
    "schemas/ids/3",
    "schemas/ids/2/versions",
    "config",
    "config/order-value",
    "mode/order-value",
)


def ok(answer: tuple[int, Any]) -> Any:
    status, body = answer
    assert status == 200, body
    return body


def fill_registry(registry: RegistryClient) -> None:
    assert ok(registry.post("subjects/address/versions", {"schema": ADDRESS_V1})) == {"id": 1}
    assert ok(registry.post("subjects/order-value/versions", {"schema": ORDER, "references": REFERENCES})) == {"id": 2}
    assert ok(registry.post("subjects/address/versions", {"schema": ADDRESS_V2})) == {"id": 3}
    assert ok(registry.delete("subjects/address/versions/2")) == 2  # soft: kept, readable with ?deleted=true
    # Id 4 is handed out, then its schema is gone for good: a restore must not hand it out again.
    assert ok(registry.post("subjects/scratch/versions", {"schema": SCRATCH})) == {"id": 4}
    ok(registry.delete("subjects/scratch"))
    ok(registry.delete("subjects/scratch?permanent=true"))
    ok(registry.put("config", {"compatibility": "NONE"}))
    ok(registry.put("config/order-value", {"compatibility": "FULL"}))
    ok(registry.put("mode/order-value", {"mode": "READONLY"}))


def test_a_restored_registry_answers_the_same_and_never_reuses_an_id(acme: TenantFixture, globex: TenantFixture) -> None:
    registry = registry_client(acme)
    fill_registry(registry)
    ok(registry_client(globex).post("subjects/address/versions", {"schema": ADDRESS_V1}))  # ids are per tenant: globex has its own 1
    before = {path: registry.get(path) for path in READS}
    assert before["schemas/ids/2"][1]["references"] == REFERENCES

    document = dump_control_plane()
    restored = check_document(parse_backup_bytes(encode_document(document, compress=True), "backup.json.gz"))
    assert [row["schema"] for row in document["sections"]["schema_references"]] == [[acme.tenant.public_id, 2]]
    report = restore_control_plane(restored, clear_existing=True)
    assert {name: report.restored[name] for name in ("schema_registries", "schemas", "schema_references", "subject_versions", "subject_settings")} == {
        "schema_registries": 2,
        "schemas": 4,  # acme's 1, 2, 3 and globex's 1
        "schema_references": 1,
        "subject_versions": 4,  # address 1 and 2 (deleted), order-value 1, globex's address 1
        "subject_settings": 1,
    }

    assert {path: registry.get(path) for path in READS} == before
    assert dump_control_plane()["sections"] == document["sections"]
    assert ok(registry.post("subjects/payments-value/versions", {"schema": PAYMENT})) == {"id": 5}
    assert registry.post("subjects/order-value/versions", {"schema": ORDER, "references": REFERENCES})[0] != 200  # still READONLY


def schema_document() -> dict[str, Any]:
    """The minimal document plus a schema and a version of it."""
    document = minimal_document()
    sections = document["sections"]
    sections["tenants"].append({"public_id": "tn-other", "name": "Other", "slug": "other", "plan": "free", "created_at": sections["tenants"][0]["created_at"]})
    when = sections["tenants"][0]["created_at"]
    sections["schemas"] = [
        {"tenant": "tn-abc", "schema_id": 1, "schema_type": "AVRO", "text": '"int"', "fingerprint": "f1", "created_at": when},
        {"tenant": "tn-other", "schema_id": 1, "schema_type": "AVRO", "text": '"int"', "fingerprint": "f1", "created_at": when},
    ]
    sections["subject_versions"] = [{"tenant": "tn-abc", "subject": "s", "version": 1, "schema": ["tn-abc", 1], "deleted": False, "created_at": when}]
    return document


def test_a_composite_reference_is_checked_as_the_targets_key() -> None:
    checked = check_document(schema_document())
    assert checked.sections["subject_versions"][0]["schema"] == ("tn-abc", 1)
    for bad, message in (
        (3, "expected a list of 2 values (tenant, schema_id)"),
        (["tn-abc"], "expected a list of 2 values"),
        (["tn-abc", "1"], "expected a whole number"),
        (["tn-abc", 2], 'names ["tn-abc", 2], which is not in sections.schemas'),
        (["tn-nobody", 1], "which is not in sections.schemas"),
    ):
        document = copy.deepcopy(schema_document())
        document["sections"]["subject_versions"][0]["schema"] = bad
        with pytest.raises(BackupFormatError, match="sections.subject_versions") as raised:
            check_document(document)
        assert message in str(raised.value)


def test_a_row_cannot_name_another_tenants_schema() -> None:
    document = schema_document()
    document["sections"]["subject_versions"][0]["schema"] = ["tn-other", 1]
    with pytest.raises(BackupFormatError) as raised:
        check_document(document)
    assert "sections.subject_versions[0].schema" in str(raised.value) and "whose tenant is not this row's tenant 'tn-abc'" in str(raised.value)


def test_settings_choices_follow_the_registry() -> None:
    for name in ("schema_registries", "subject_settings"):
        section = SECTIONS_BY_NAME[name]
        assert section.field_named("compatibility").choices == LEVELS
        assert section.field_named("mode").choices == MODES
