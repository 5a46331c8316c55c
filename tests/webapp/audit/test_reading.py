"""The audit log read back: REST (paginated, filtered, tenant-scoped, admins only) and the dashboard page with its exports."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client

from webapp.accounts.facade import Role
from webapp.audit.context import audit_source
from webapp.audit.models import Door
from webapp.audit.recording import record_event

pytestmark = pytest.mark.django_db


def _record(fixture, role: str, action: str, target: str, door: str = Door.REST) -> None:  # type: ignore[no-untyped-def]
    with audit_source(door, "127.0.0.1"):
        record_event(fixture.actor(role), action, target, {"note": target})


def test_api_lists_only_the_callers_tenant_newest_first_and_pages(acme, globex) -> None:  # type: ignore[no-untyped-def]
    for index in range(3):
        _record(acme, Role.OWNER, "topic.create", f"acme-{index}")
    _record(globex, Role.OWNER, "topic.create", "globex-secret-topic")
    first = acme.client(Role.ADMIN).get("/api/v1/audit-log", {"action": "topic", "page_size": 2})
    assert first.status_code == 200, first.content
    body = first.json()
    assert [row["target"] for row in body["results"]] == ["acme-2", "acme-1"]
    second = acme.client(Role.ADMIN).get(body["next"])
    assert [row["target"] for row in second.json()["results"]] == ["acme-0"]
    assert "globex" not in first.content.decode() + second.content.decode()


def test_api_filters_by_actor_and_door(acme) -> None:  # type: ignore[no-untyped-def]
    _record(acme, Role.OWNER, "topic.create", "by-owner", Door.DASHBOARD)
    _record(acme, Role.DEVELOPER, "topic.create", "by-developer", Door.REST)
    client = acme.client(Role.OWNER)
    by_actor = client.get("/api/v1/audit-log", {"actor": acme.members[Role.DEVELOPER].principal}).json()["results"]
    assert [row["target"] for row in by_actor] == ["by-developer"]
    by_door = client.get("/api/v1/audit-log", {"door": "dashboard"}).json()["results"]
    assert [row["target"] for row in by_door] == ["by-owner"]
    assert by_door[0]["client_ip"] == "127.0.0.1" and by_door[0]["actor_name"] == "acme-owner"


def test_api_refuses_bad_filters_naming_them_and_non_admins(acme) -> None:  # type: ignore[no-untyped-def]
    client = acme.client(Role.ADMIN)
    bad_time = client.get("/api/v1/audit-log", {"since": "yesterday"})
    assert bad_time.status_code == 400 and "since" in bad_time.json()["errors"]
    reversed_range = client.get("/api/v1/audit-log", {"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"})
    assert reversed_range.status_code == 400 and "until" in reversed_range.json()["errors"]
    assert client.get("/api/v1/audit-log", {"door": "teleport"}).status_code == 400
    assert acme.client(Role.DEVELOPER).get("/api/v1/audit-log").status_code == 403


def _page_client(fixture, role: str = Role.OWNER) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(fixture.members[role].user)
    return client


def test_page_shows_filters_and_exports_the_tenants_events(acme, globex) -> None:  # type: ignore[no-untyped-def]
    _record(acme, Role.OWNER, "acl.delete", "acl-1")
    _record(acme, Role.OWNER, "=cmd|' /C calc'!A0", "formula")
    _record(globex, Role.OWNER, "acl.delete", "globex-acl")
    client = _page_client(acme)
    page = client.get("/audit-log/", {"action": "acl"})
    assert page.status_code == 200
    html = page.content.decode()
    assert "acl-1" in html and "globex-acl" not in html and "formula" not in html
    assert 'href="/audit-log/"' in client.get("/").content.decode()  # in the navigation
    exported = client.get("/audit-log/", {"export": "csv"})
    assert exported["Content-Disposition"].startswith("attachment;")
    rows = list(csv.DictReader(io.StringIO(exported.content.decode())))
    assert {row["target"] for row in rows} >= {"acl-1", "formula"} and "globex-acl" not in exported.content.decode()
    assert next(row for row in rows if row["target"] == "formula")["action"].startswith("'=")  # never a spreadsheet formula
    as_json = client.get("/audit-log/", {"export": "json", "action": "acl.delete"}).json()
    assert [row["target"] for row in as_json] == ["acl-1"]


def test_page_says_what_is_wrong_with_a_filter_and_is_for_admins(acme) -> None:  # type: ignore[no-untyped-def]
    client = _page_client(acme)
    bad = client.get("/audit-log/", {"until": "31/01/2026"})
    assert bad.status_code == 400 and "until" in bad.content.decode() and "ISO 8601" in bad.content.decode()
    assert _page_client(acme, Role.DEVELOPER).get("/audit-log/").status_code == 403
    assert 'href="/audit-log/"' not in _page_client(acme, Role.DEVELOPER).get("/").content.decode()
