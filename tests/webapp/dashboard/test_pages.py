"""Every page renders for its audience; jobs and brokers; record rendering."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from tests.webapp.dashboard.conftest import PASSWORD, Member
from webapp.accounts.models import Role
from webapp.dashboard.record_rendering import Format, hex_dump, render_bytes
from webapp.provisioning.models import JobKind, JobState, ProvisioningJob

PAGES = [
    "overview",
    "topics",
    "topic_create",
    "acls",
    "acl_create",
    "service_accounts",
    "service_account_create",
    "api_keys",
    "api_key_create",
    "members",
    "jobs",
]


@pytest.mark.django_db
@pytest.mark.parametrize("page", PAGES)
def test_owner_page_renders(owner: Member, page: str) -> None:
    response = owner.client.get(reverse(f"dashboard:{page}"))
    assert response.status_code == 200
    assert b"csrfmiddlewaretoken" in response.content  # the sign-out form at least


@pytest.mark.django_db
def test_job_page_refreshes_until_the_job_finishes(owner: Member, other_owner: Member) -> None:
    job = ProvisioningJob.objects.create(tenant=owner.tenant, kind=JobKind.CREATE_TOPIC, target="orders", state=JobState.RUNNING, attempts=2)
    running = owner.client.get(reverse("dashboard:job", args=[job.public_id])).content.decode()
    assert 'http-equiv="refresh"' in running and "attempt 2" in running
    ProvisioningJob.objects.filter(pk=job.pk).update(state=JobState.FAILED, error="broker 1 at 127.0.0.1:1: UNAVAILABLE")
    failed = owner.client.get(reverse("dashboard:job", args=[job.public_id])).content.decode()
    assert 'http-equiv="refresh"' not in failed and "broker 1 at 127.0.0.1:1: UNAVAILABLE" in failed
    assert other_owner.client.get(reverse("dashboard:job", args=[job.public_id])).status_code == 404
    assert job.public_id not in other_owner.client.get(reverse("dashboard:jobs")).content.decode()


@pytest.mark.django_db
def test_jobs_list_filters_by_state(owner: Member) -> None:
    done = ProvisioningJob.objects.create(tenant=owner.tenant, kind=JobKind.SYNC_SECURITY, state=JobState.SUCCEEDED)
    failed = ProvisioningJob.objects.create(tenant=owner.tenant, kind=JobKind.SYNC_SECURITY, state=JobState.FAILED)
    content = owner.client.get(reverse("dashboard:jobs"), {"state": "FAILED"}).content.decode()
    assert failed.public_id in content and done.public_id not in content


@pytest.mark.django_db
def test_brokers_page_is_for_members_and_operators(owner: Member, registered_broker: object) -> None:
    assert "ONLINE" in owner.client.get(reverse("dashboard:brokers")).content.decode()
    assert Client().get(reverse("dashboard:brokers")).status_code == 302  # signed out: to the sign-in page
    operator = get_user_model().objects.create_user(username="ops", password=PASSWORD, is_staff=True)
    client = Client()
    client.force_login(operator)
    content = client.get(reverse("dashboard:brokers")).content.decode()
    assert "127.0.0.1:" in content and "ONLINE" in content and "every partition of every tenant" in content


@pytest.mark.django_db
def test_viewer_cannot_browse_or_produce(roles: dict[str, Member]) -> None:
    from tests.webapp.dashboard.test_topics import create_topic

    create_topic(roles[Role.OWNER], "orders")
    viewer = roles[Role.VIEWER]
    assert viewer.client.get(reverse("dashboard:topic_messages", args=["orders"])).status_code == 403
    assert viewer.client.post(reverse("dashboard:topic_produce", args=["orders"]), {"value": "x"}).status_code == 403


@pytest.mark.django_db
def test_browser_shows_a_clear_error_when_no_broker_answers(owner: Member, settings) -> None:  # type: ignore[no-untyped-def]
    from tests.support.processes import free_port
    from tests.webapp.dashboard.test_topics import create_topic

    settings.WEIR_BOOTSTRAP_SERVERS = f"127.0.0.1:{free_port()}"
    create_topic(owner, "orders")
    response = owner.client.get(reverse("dashboard:topic_messages", args=["orders"]), {"partition": 0, "start": "latest", "limit": 10, "format": "text"})
    assert response.status_code == 200
    assert 'class="flash error"' in response.content.decode()


def test_render_json_pretty_prints_and_falls_back_to_text() -> None:
    assert render_bytes(b'{"a":[1,2]}', Format.JSON).text == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    fallback = render_bytes(b"not json", Format.JSON)
    assert fallback.text == "not json" and "not valid JSON" in fallback.note


def test_render_binary_as_text_falls_back_to_hex() -> None:
    rendered = render_bytes(b"\xff\x00ab", Format.TEXT)
    assert rendered.text == "00000000  ff 00 61 62" + " " * 38 + "|..ab|"
    assert "not UTF-8" in rendered.note


def test_render_null_is_not_empty() -> None:
    assert render_bytes(None, Format.TEXT).is_null
    assert render_bytes(b"", Format.TEXT).text == ""


def test_hex_dump_wraps_every_sixteen_bytes() -> None:
    lines = hex_dump(bytes(range(20))).splitlines()
    assert len(lines) == 2 and lines[1].startswith("00000010  10 11 12 13")


def test_render_truncates_huge_payloads() -> None:
    rendered = render_bytes(b"x" * 100_000, Format.TEXT)
    assert rendered.text is not None and len(rendered.text) == 64 * 1024
    assert "of 100000 bytes" in rendered.note
