"""Consumer group pages: list, detail (members, lag), reset with preview then confirm,
delete; roles, other tenants, brokers down.

An in-memory admin per tenant stands behind ``webapp.consumer_groups`` (any group state at
once); the brokers-down test uses the real client against a port nothing listens on, and
the last test runs against a real broker with a real consumer group.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.urls import reverse

from tests.support.fake_group_admin import FakeGroupAdmin, FakeMember
from tests.support.group_broker import join_and_commit, produce
from tests.support.processes import free_port
from tests.webapp.dashboard.conftest import Member
from tests.webapp.dashboard.test_topics import create_topic
from tests.webapp.group_broker import control_plane_broker, provision_topic, tenant_client_config
from webapp import consumer_groups
from webapp.accounts.models import Role
from weir import ConsumerGroupState

pytestmark = pytest.mark.django_db


@pytest.fixture
def admins(monkeypatch: pytest.MonkeyPatch) -> dict[str, FakeGroupAdmin]:
    """One fake cluster per tenant public id, made on first use."""
    fakes: dict[str, FakeGroupAdmin] = {}

    @contextmanager
    def admin_client(tenant_public_id: str) -> Iterator[FakeGroupAdmin]:
        yield fakes.setdefault(tenant_public_id, FakeGroupAdmin())

    monkeypatch.setattr(consumer_groups, "admin_client", admin_client)
    return fakes


@pytest.fixture
def cluster(owner: Member, admins: dict[str, FakeGroupAdmin]) -> FakeGroupAdmin:
    """The owner's tenant: topic orders (catalog and brokers); groups busy (two members) and idle."""
    create_topic(owner, "orders")
    create_topic(owner, "payments", partitions=1)
    fake = admins.setdefault(owner.tenant.public_id, FakeGroupAdmin())
    fake.add_topic("orders", [10, 20])
    fake.add_topic("payments", [5])
    fake.add_group(
        "busy",
        {("orders", 0): 4, ("orders", 1): 20},
        [
            FakeMember("member-a", "client-a", [("orders", 0)], instance_id="app-1"),
            FakeMember("member-b", "client-b", [("orders", 1)], target=[("orders", 1), ("payments", 0)]),
        ],
        state=ConsumerGroupState.RECONCILING,  # member-b is still moving
    )
    fake.add_group("idle", {("orders", 0): 7})
    return fake


def text(response) -> str:  # type: ignore[no-untyped-def]
    return re.sub(r"\s+", " ", response.content.decode())


def test_nav_links_to_the_groups_page(owner: Member, cluster: FakeGroupAdmin) -> None:
    assert f'href="{reverse("dashboard:groups")}"' in owner.client.get(reverse("dashboard:overview")).content.decode()


def test_list_shows_state_members_and_total_lag(roles: dict[str, Member], cluster: FakeGroupAdmin) -> None:
    response = roles[Role.VIEWER].client.get(reverse("dashboard:groups"))
    page = text(response)

    assert response.status_code == 200
    assert '<span class="badge RECONCILING">RECONCILING</span>' in page and '<span class="badge EMPTY">EMPTY</span>' in page
    busy_row = page[page.index("/groups/busy/") : page.index("/groups/idle/")]
    assert '<td class="number">2</td> <td class="number">6</td>' in busy_row


def test_detail_shows_members_assignments_and_lag_per_partition(roles: dict[str, Member], cluster: FakeGroupAdmin) -> None:
    viewer = text(roles[Role.VIEWER].client.get(reverse("dashboard:group", args=["busy"])))
    developer = text(roles[Role.DEVELOPER].client.get(reverse("dashboard:group", args=["busy"])))

    assert "member-a" in viewer and "app-1" in viewer and "client-b" in viewer
    assert "orders[0]" in viewer and "moving to: orders[1], payments[0]" in viewer
    assert '<td>orders</td> <td class="number">0</td> <td class="number">4</td> <td class="number">10</td> <td class="number">6</td>' in viewer
    assert "Reset offsets" not in viewer and "Reset offsets" in developer
    assert "/groups/busy/reset-offsets/?topic=orders" in developer


def test_unknown_and_other_tenants_groups_are_not_found(owner: Member, other_owner: Member, cluster: FakeGroupAdmin) -> None:
    assert owner.client.get(reverse("dashboard:group", args=["nobody"])).status_code == 404
    assert other_owner.client.get(reverse("dashboard:group", args=["busy"])).status_code == 404
    assert "busy" not in other_owner.client.get(reverse("dashboard:groups")).content.decode()


def test_reset_previews_then_applies_exactly_the_previewed_offsets(owner: Member, cluster: FakeGroupAdmin) -> None:
    url = reverse("dashboard:group_reset_offsets", args=["idle"])

    form = owner.client.get(url, {"topic": "orders"})
    preview = owner.client.post(url, {"topics": ["orders"], "to": "latest"})
    assert 'value="orders" id="id_topics_0" checked>' in form.content.decode() and 'value="payments" id="id_topics_1">' in form.content.decode()
    assert preview.status_code == 200 and 'id="plan"' in preview.content.decode()
    assert '<td>orders</td><td class="number">0</td><td class="number">7</td><td class="number">10</td>' in preview.content.decode()
    assert cluster.groups["idle"].offsets == {("orders", 0): 7}  # the preview wrote nothing
    plan = re.search(r'name="plan" value="([^"]*)"', preview.content.decode()).group(1)  # type: ignore[union-attr]
    assert plan == "orders,0,10;orders,1,20"

    cluster.topics["orders"].timestamps[0].append(0)  # a record arrives between preview and confirm
    confirmed = owner.client.post(url, {"plan": plan})

    assert confirmed.status_code == 302 and confirmed["Location"] == reverse("dashboard:group", args=["idle"])
    assert cluster.groups["idle"].offsets == {("orders", 0): 10, ("orders", 1): 20}
    assert "Reset the offsets of group idle on 2 partitions." in owner.client.get(confirmed["Location"]).content.decode()


def test_reset_to_a_time_and_to_an_offset(owner: Member, cluster: FakeGroupAdmin) -> None:
    url = reverse("dashboard:group_reset_offsets", args=["idle"])

    by_offset = owner.client.post(url, {"topics": ["payments"], "to": "offset", "offset": 2}).content.decode()
    missing_time = owner.client.post(url, {"topics": ["orders"], "to": "timestamp"}).content.decode()

    assert "payments,0,2" in by_offset
    assert "Give the time to reset to." in missing_time and 'id="plan"' not in missing_time


def test_reset_of_an_active_group_warns_on_preview_and_refuses_on_confirm(owner: Member, cluster: FakeGroupAdmin) -> None:
    url = reverse("dashboard:group_reset_offsets", args=["busy"])

    preview = text(owner.client.post(url, {"topics": ["orders"], "to": "earliest"}))
    confirmed = owner.client.post(url, {"plan": "orders,0,0;orders,1,0"})

    assert "The group has 2 active members" in preview
    assert confirmed.status_code == 200
    assert "Consumer group &#x27;busy&#x27; has 2 active members: stop them before resetting its offsets." in confirmed.content.decode()
    assert cluster.groups["busy"].offsets == {("orders", 0): 4, ("orders", 1): 20}


def test_tampered_plan_is_refused(owner: Member, cluster: FakeGroupAdmin) -> None:
    response = owner.client.post(reverse("dashboard:group_reset_offsets", args=["idle"]), {"plan": "orders,zero,1"})

    assert "is not topic,partition,offset" in response.content.decode()
    assert "alter_consumer_group_offsets" not in cluster.calls


def test_delete_needs_the_typed_group_id_and_an_empty_group(owner: Member, cluster: FakeGroupAdmin) -> None:
    mistyped = owner.client.post(reverse("dashboard:group_delete", args=["idle"]), {"confirmation": "idl"})
    active = owner.client.post(reverse("dashboard:group_delete", args=["busy"]), {"confirmation": "busy"})
    deleted = owner.client.post(reverse("dashboard:group_delete", args=["idle"]), {"confirmation": "idle"})

    assert "That is not the group&#x27;s id." in mistyped.content.decode()
    assert "has 2 active members: stop them before deleting it." in active.content.decode()
    assert deleted.status_code == 302 and deleted["Location"] == reverse("dashboard:groups")
    assert "idle" not in cluster.groups and "busy" in cluster.groups


def test_viewers_may_not_reset_or_delete(roles: dict[str, Member], cluster: FakeGroupAdmin) -> None:
    viewer = roles[Role.VIEWER].client

    assert viewer.get(reverse("dashboard:group_reset_offsets", args=["idle"])).status_code == 403
    assert viewer.post(reverse("dashboard:group_reset_offsets", args=["idle"]), {"plan": "orders,0,0"}).status_code == 403
    assert viewer.post(reverse("dashboard:group_delete", args=["idle"]), {"confirmation": "idle"}).status_code == 403
    assert cluster.groups["idle"].offsets == {("orders", 0): 7} and "idle" in cluster.groups


def test_pages_say_when_no_broker_answers(owner: Member, settings) -> None:  # type: ignore[no-untyped-def]
    settings.WEIR_BOOTSTRAP_SERVERS = f"127.0.0.1:{free_port()}"

    for page in (reverse("dashboard:groups"), reverse("dashboard:group", args=["busy"])):
        response = owner.client.get(page)
        assert response.status_code == 503
        assert 'class="flash error"' in response.content.decode() and "No broker answers at" in response.content.decode()
    create_topic(owner, "orders")
    preview = owner.client.post(reverse("dashboard:group_reset_offsets", args=["busy"]), {"topics": ["orders"], "to": "latest"})
    assert preview.status_code == 200
    assert "No broker answers at" in preview.content.decode() and 'id="plan"' not in preview.content.decode()


# ------------------------------------------------------------------ end to end


def test_group_pages_against_a_real_broker_and_consumer(owner: Member, other_owner: Member, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A consumer of the owner's tenant commits 6+4 records, 3 more arrive: the pages show
    the group, its member and lag; once the consumer left, a previewed reset is confirmed and
    the group deleted."""
    with control_plane_broker(tmp_path / "broker", settings):
        provision_topic(owner.actor, "orders", partitions=2)
        config = tenant_client_config(owner.actor)
        produce(config, "orders", {0: 6, 1: 4})
        consumer = join_and_commit(config, "orders", "billing", records=10)
        try:
            produce(config, "orders", {0: 3})

            listing = text(owner.client.get(reverse("dashboard:groups")))
            assert '<span class="badge STABLE">STABLE</span>' in listing and '<td class="number">1</td> <td class="number">3</td>' in listing
            detail = text(owner.client.get(reverse("dashboard:group", args=["billing"])))
            assert "billing-client" in detail and "orders[0], orders[1]" in detail
            assert '<td>orders</td> <td class="number">0</td> <td class="number">6</td> <td class="number">9</td> <td class="number">3</td>' in detail
            assert other_owner.client.get(reverse("dashboard:group", args=["billing"])).status_code == 404
        finally:
            consumer.close()

        url = reverse("dashboard:group_reset_offsets", args=["billing"])
        preview = owner.client.post(url, {"topics": ["orders"], "to": "earliest"}).content.decode()
        plan = re.search(r'name="plan" value="([^"]*)"', preview).group(1)  # type: ignore[union-attr]
        assert plan == "orders,0,0;orders,1,0"
        assert owner.client.post(url, {"plan": plan}).status_code == 302
        assert "<dt>Total lag</dt><dd>13</dd>" in text(owner.client.get(reverse("dashboard:group", args=["billing"])))
        assert owner.client.post(reverse("dashboard:group_delete", args=["billing"]), {"confirmation": "billing"}).status_code == 302
        after = owner.client.get(reverse("dashboard:groups")).content.decode()
        assert "Deleted consumer group billing" in after and reverse("dashboard:group", args=["billing"]) not in after
