"""``POST /consumer-groups/{id}/offsets:undo-reset``: the offsets from just before the last applied reset, once, while the group is inactive."""

from __future__ import annotations

import pytest

from tests.support.fake_group_admin import FakeGroupAdmin
from tests.webapp.api.test_groups import admins, cluster, reset  # noqa: F401  (fixtures)
from webapp.accounts.facade import Role
from webapp.audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def _undo(fixture, group_id: str, role: str = Role.DEVELOPER):  # type: ignore[no-untyped-def]
    return fixture.client(role).post(f"/api/v1/consumer-groups/{group_id}/offsets:undo-reset")


def test_undo_restores_the_offsets_before_the_applied_reset_once(acme, cluster: FakeGroupAdmin) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    assert _undo(acme, "idle").status_code == 404  # nothing to undo yet
    assert reset(acme, "idle", dry_run=False, to="earliest", topics=["orders"]).status_code == 200
    assert cluster.groups["idle"].offsets == {("orders", 0): 0, ("orders", 1): 0}
    assert _undo(acme, "idle", Role.VIEWER).status_code == 403
    undone = _undo(acme, "idle")
    assert undone.status_code == 200, undone.json()
    assert [(row["topic_name"], row["partition_id"], row["new_offset"]) for row in undone.json()["data"]] == [("orders", 0, 7)]
    assert cluster.groups["idle"].offsets == {("orders", 0): 7, ("orders", 1): 0}  # orders-1 had no commit before: it keeps the reset's
    assert _undo(acme, "idle").status_code == 404  # an undo is not undone
    doors = list(AuditEvent.objects.filter(tenant=acme.tenant, action="group.reset_offsets").values_list("door", flat=True))
    assert doors == ["rest", "rest"]


def test_undo_is_refused_after_new_commits(acme, cluster: FakeGroupAdmin) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    reset(acme, "idle", dry_run=False, to="latest", topics=["orders"])
    cluster.groups["idle"].offsets[("orders", 1)] = 15
    refused = _undo(acme, "idle")
    assert refused.status_code == 409 and "orders [1] is at 15, not 20" in refused.json()["message"]
    assert cluster.groups["idle"].offsets[("orders", 0)] == 10
