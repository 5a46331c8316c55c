"""Resetting chosen partitions, and undoing a reset while the group is still inactive (an
in-memory admin behind ``webapp.consumer_groups``, as in test_groups.py)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.support.fake_group_admin import FakeGroupAdmin, FakeMember
from tests.webapp.dashboard.conftest import Member
from tests.webapp.dashboard.test_groups import admins, cluster  # noqa: F401  (fixtures)
from webapp.audit.models import AuditEvent
from webapp.dashboard.forms.groups import parse_partition_numbers

pytestmark = pytest.mark.django_db


def _preview_and_confirm(owner: Member, group_id: str, fields: dict[str, object]) -> str:
    url = reverse("dashboard:group_reset_offsets", args=[group_id])
    preview = owner.client.post(url, fields).content.decode()
    plan = re.search(r'name="plan" value="([^"]*)"', preview)
    assert plan is not None, preview
    assert owner.client.post(url, {"plan": plan.group(1)}).status_code == 302
    return plan.group(1)


def test_reset_of_chosen_partitions_leaves_the_others(owner: Member, cluster: FakeGroupAdmin) -> None:  # noqa: F811
    cluster.groups["idle"].offsets[("orders", 1)] = 3
    plan = _preview_and_confirm(owner, "idle", {"topics": ["orders"], "to": "earliest", "partitions": "1"})
    assert plan == "orders,1,0"
    assert cluster.groups["idle"].offsets == {("orders", 0): 7, ("orders", 1): 0}
    missing = owner.client.post(reverse("dashboard:group_reset_offsets", args=["idle"]), {"topics": ["orders", "payments"], "to": "latest", "partitions": "1"})
    assert "payments has no partition 1 (it has 0-0)" in missing.content.decode()
    garbled = owner.client.post(reverse("dashboard:group_reset_offsets", args=["idle"]), {"topics": ["orders"], "to": "latest", "partitions": "1-x"})
    assert "is not a partition number" in garbled.content.decode()


def test_partition_numbers_parse_lists_and_ranges() -> None:
    assert parse_partition_numbers("0, 2-4,3") == (0, 2, 3, 4)
    assert parse_partition_numbers("") == ()


def test_undo_writes_back_the_offsets_from_just_before_the_reset_once(owner: Member, cluster: FakeGroupAdmin) -> None:  # noqa: F811
    _preview_and_confirm(owner, "idle", {"topics": ["orders"], "to": "latest"})
    assert cluster.groups["idle"].offsets == {("orders", 0): 10, ("orders", 1): 20}
    event = AuditEvent.objects.get(action="group.reset_offsets")
    assert event.summary["previous"] == {"orders:0": 7, "orders:1": None} and event.door == "dashboard"
    detail = owner.client.get(reverse("dashboard:group", args=["idle"])).content.decode()
    undo_url = reverse("dashboard:group_undo_reset", args=["idle"])
    assert f'href="{undo_url}"' in detail
    page = owner.client.get(undo_url).content.decode()
    assert "orders [1]" in page  # nothing was committed there before: it keeps its offset
    assert owner.client.post(undo_url).status_code == 200 and cluster.groups["idle"].offsets[("orders", 0)] == 10  # no confirmation: nothing
    done = owner.client.post(undo_url, {"confirm": event.public_id})
    assert done.status_code == 302
    assert cluster.groups["idle"].offsets == {("orders", 0): 7, ("orders", 1): 20}
    assert AuditEvent.objects.filter(action="group.reset_offsets", summary__undo_of=event.public_id).exists()
    assert f'href="{undo_url}"' not in owner.client.get(reverse("dashboard:group", args=["idle"])).content.decode()


def test_undo_is_refused_once_the_group_committed_or_has_members(owner: Member, cluster: FakeGroupAdmin) -> None:  # noqa: F811
    _preview_and_confirm(owner, "idle", {"topics": ["orders"], "to": "latest", "partitions": "0"})
    event = AuditEvent.objects.get(action="group.reset_offsets")
    undo_url = reverse("dashboard:group_undo_reset", args=["idle"])
    cluster.groups["idle"].offsets[("orders", 0)] = 12  # a consumer ran and committed since
    refused = owner.client.post(undo_url, {"confirm": event.public_id})
    assert refused.status_code == 409 and "orders [0] is at 12, not 10" in refused.content.decode()
    cluster.groups["idle"].offsets[("orders", 0)] = 10
    cluster.groups["idle"].members.append(FakeMember("member-c", "client-c", [("orders", 0)]))
    active = owner.client.post(undo_url, {"confirm": event.public_id})
    assert active.status_code == 409 and "has 1 active member" in active.content.decode()
    assert cluster.groups["idle"].offsets[("orders", 0)] == 10
