"""The Schemas page through Django's client (no broker): subjects, versions, a version's schema with
its references, the diff, registering (with the compatibility check's reasons), the compatibility
level and soft deletes behind confirmations, roles, and another tenant's subject as 404."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from tests.webapp.dashboard.conftest import Member
from webapp.accounts.models import Role
from webapp.schemas.facade import effective_settings, register, version_summaries

pytestmark = pytest.mark.django_db

ORDER_V1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}
ORDER_V2 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int", "default": 1}]}
# A new field without a default: it cannot read data written with v2 (BACKWARD refuses it).
ORDER_BAD = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}, {"name": "total", "type": "double"}]}


def seed(member: Member) -> None:
    register(member.actor, "orders-value", {"schema": json.dumps(ORDER_V1)})
    register(member.actor, "orders-value", {"schema": json.dumps(ORDER_V2)})
    register(member.actor, "money", {"schema": json.dumps({"type": "fixed", "name": "Money", "size": 8})})
    register(
        member.actor,
        "invoice-value",
        {
            "schema": json.dumps({"type": "record", "name": "Invoice", "fields": [{"name": "amount", "type": "Money"}]}),
            "references": [{"name": "Money", "subject": "money", "version": 1}],
        },
    )
    register(member.actor, "gone", {"schema": json.dumps({"type": "string"})})
    member.client.post(reverse("dashboard:schema_version_delete", args=["gone", 1]), {"confirm": "gone/1"})


def test_the_list_shows_each_subject_with_latest_version_type_level_and_soft_deletes(owner: Member) -> None:
    seed(owner)
    html = owner.client.get(reverse("dashboard:schemas")).content.decode()
    assert f'href="{reverse("dashboard:schemas")}" class="current">Schemas</a>' in html
    orders = html[html.index(">orders-value<") :].split("</tr>")[0]
    assert ">2</a>" in orders and "AVRO" in orders and "BACKWARD" in orders and "live" in orders
    gone = html[html.index(">gone<") :].split("</tr>")[0]
    assert "soft-deleted" in gone


def test_a_version_is_pretty_printed_with_its_references_linked_and_two_versions_diff(owner: Member) -> None:
    seed(owner)
    html = owner.client.get(reverse("dashboard:schema_version", args=["invoice-value", 1])).content.decode()
    assert f'href="{reverse("dashboard:schema_version", args=["money", 1])}">money version 1</a>' in html
    assert "  &quot;name&quot;: &quot;Invoice&quot;," in html
    diff = owner.client.get(reverse("dashboard:schema_subject", args=["orders-value"]), {"old": 1, "new": 2}).content.decode()
    assert '<span class="diff-add">+      &quot;default&quot;: 1,</span>' in diff
    assert "--- orders-value v1" in diff and "+++ orders-value v2" in diff
    bad = owner.client.get(reverse("dashboard:schema_subject", args=["orders-value"]), {"old": 1, "new": 9})
    assert bad.status_code == 200 and "Select a valid choice" in bad.content.decode()


def test_another_tenants_subject_is_not_found(owner: Member, other_owner: Member) -> None:
    seed(other_owner)
    for url in (
        reverse("dashboard:schema_subject", args=["orders-value"]),
        reverse("dashboard:schema_version", args=["orders-value", 1]),
        reverse("dashboard:schema_version_delete", args=["orders-value", 1]),
    ):
        assert owner.client.get(url).status_code == 404
    assert owner.client.post(reverse("dashboard:schema_compatibility", args=["orders-value"]), {"level": "NONE", "confirm": "NONE"}).status_code == 404
    assert "orders-value" not in owner.client.get(reverse("dashboard:schemas")).content.decode()


def test_registering_shows_the_compatibility_checks_reasons_and_stores_nothing(owner: Member) -> None:
    seed(owner)
    url = reverse("dashboard:schema_register")
    response = owner.client.post(url, {"subject": "orders-value", "schema_type": "AVRO", "schema": json.dumps(ORDER_BAD)})
    html = response.content.decode()
    assert response.status_code == 400
    assert "not compatible" in html and "total" in html and '<ul class="reasons">' in html
    assert [row.version for row in version_summaries(owner.tenant, "orders-value")] == [1, 2]
    unparsable = owner.client.post(url, {"subject": "x", "schema_type": "AVRO", "schema": "{nope"})
    assert unparsable.status_code == 400 and "is not JSON" in unparsable.content.decode()
    ok = owner.client.post(url, {"subject": "orders-value", "schema_type": "AVRO", "schema": json.dumps({**ORDER_V2, "doc": "v3"})})
    assert ok.status_code == 302 and ok["Location"] == reverse("dashboard:schema_version", args=["orders-value", 3])


def test_viewers_read_but_only_developers_change(owner: Member, roles: dict[str, Member]) -> None:
    seed(owner)
    viewer = roles[Role.VIEWER]
    html = viewer.client.get(reverse("dashboard:schema_subject", args=["orders-value"])).content.decode()
    assert "BACKWARD" in html and "Register a new version" not in html and "Change…" not in html
    assert viewer.client.get(reverse("dashboard:schema_register")).status_code == 403
    assert viewer.client.post(reverse("dashboard:schema_compatibility", args=["orders-value"]), {"level": "NONE", "confirm": "NONE"}).status_code == 403
    assert viewer.client.post(reverse("dashboard:schema_version_delete", args=["orders-value", 1]), {"confirm": "orders-value/1"}).status_code == 403
    developer = roles[Role.DEVELOPER]
    assert "Change…" in developer.client.get(reverse("dashboard:schema_subject", args=["orders-value"])).content.decode()


def test_the_compatibility_level_changes_only_after_confirmation(owner: Member) -> None:
    seed(owner)
    url = reverse("dashboard:schema_compatibility", args=["orders-value"])
    asked = owner.client.post(url, {"level": "FULL"})
    assert asked.status_code == 200 and "from BACKWARD to FULL?" in asked.content.decode()
    assert effective_settings(owner.tenant, "orders-value").compatibility == "BACKWARD"
    done = owner.client.post(url, {"confirm": "FULL"})  # what the confirmation page sends
    assert done.status_code == 302 and effective_settings(owner.tenant, "orders-value").compatibility == "FULL"
    assert effective_settings(owner.tenant, "invoice-value").compatibility == "BACKWARD"
    listed = owner.client.get(reverse("dashboard:schemas")).content.decode()
    assert "<td>FULL</td>" in listed[listed.index(">orders-value<") :].split("</tr>")[0]
    assert "<td>BACKWARD</td>" in listed[listed.index(">invoice-value<") :].split("</tr>")[0]
    assert owner.client.post(url, {"level": "SIDEWAYS"}).status_code == 302  # an invalid level changes nothing
    assert effective_settings(owner.tenant, "orders-value").compatibility == "FULL"


def test_a_version_is_soft_deleted_only_after_confirmation_and_a_referenced_one_is_refused(owner: Member) -> None:
    seed(owner)
    url = reverse("dashboard:schema_version_delete", args=["orders-value", 1])
    asked = owner.client.post(url, {})
    assert asked.status_code == 200 and "Soft-delete version 1 of orders-value?" in asked.content.decode()
    assert "soft-deleted" not in owner.client.get(reverse("dashboard:schema_version", args=["orders-value", 1])).content.decode()
    assert owner.client.post(url, {"confirm": "orders-value/1"}).status_code == 302
    assert "soft-deleted" in owner.client.get(reverse("dashboard:schema_version", args=["orders-value", 1])).content.decode()
    referenced = owner.client.post(reverse("dashboard:schema_version_delete", args=["money", 1]), {"confirm": "money/1"}, follow=True)
    assert "One or more references exist" in referenced.content.decode()
