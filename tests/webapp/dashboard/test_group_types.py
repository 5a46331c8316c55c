"""The group pages show each group's type (CONSUMER: KIP-848; CLASSIC: JoinGroup/SyncGroup), with an in-memory admin behind ``webapp.consumer_groups``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.urls import reverse

from tests.support.fake_group_admin import FakeGroupAdmin, FakeMember
from tests.webapp.dashboard.conftest import Member
from tests.webapp.dashboard.test_topics import create_topic
from webapp import consumer_groups
from webapp.accounts.models import Role
from weir import ConsumerGroupState, ConsumerGroupType

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(owner: Member, monkeypatch: pytest.MonkeyPatch) -> FakeGroupAdmin:
    """The owner's tenant: sdk-app (KIP-848) and librdkafka-app (classic, completing a rebalance) on topic orders."""
    create_topic(owner, "orders")
    fake = FakeGroupAdmin()
    fake.add_topic("orders", [10, 20])
    fake.add_group("sdk-app", {("orders", 0): 4}, [FakeMember("m-1", "weir-sdk", [("orders", 0)])], assignor="uniform")
    fake.add_group(
        "librdkafka-app",
        {("orders", 1): 3},
        [FakeMember("rdkafka-1", "rdkafka", [("orders", 1)])],
        assignor="range",
        group_type=ConsumerGroupType.CLASSIC,
        state=ConsumerGroupState.COMPLETING_REBALANCE,
    )

    @contextmanager
    def admin_client(tenant_public_id: str) -> Iterator[FakeGroupAdmin]:
        assert tenant_public_id == owner.tenant.public_id
        yield fake

    monkeypatch.setattr(consumer_groups, "admin_client", admin_client)
    return fake


def text(response) -> str:  # type: ignore[no-untyped-def]
    return re.sub(r"\s+", " ", response.content.decode())


def test_list_shows_each_groups_type(roles: dict[str, Member], cluster: FakeGroupAdmin) -> None:
    page = text(roles[Role.VIEWER].client.get(reverse("dashboard:groups")))

    assert "<th>Type</th>" in page
    classic_row = page[page.index("/groups/librdkafka-app/") : page.index("/groups/sdk-app/")]
    consumer_row = page[page.index("/groups/sdk-app/") : page.index("</tbody>")]
    assert '<td class="small group-type">CLASSIC</td>' in classic_row and "COMPLETING_REBALANCE" in classic_row
    assert '<td class="small group-type">CONSUMER</td>' in consumer_row


def test_detail_shows_the_type(roles: dict[str, Member], cluster: FakeGroupAdmin) -> None:
    classic = text(roles[Role.VIEWER].client.get(reverse("dashboard:group", args=["librdkafka-app"])))
    consumer = text(roles[Role.VIEWER].client.get(reverse("dashboard:group", args=["sdk-app"])))

    assert re.search(r"<dt>Type</dt><dd class=\"group-type\"><span title=\"JoinGroup/SyncGroup[^\"]*\">CLASSIC</span>", classic)
    assert re.search(r"<dt>Type</dt><dd class=\"group-type\"><span title=\"Kafka's consumer protocol[^\"]*\">CONSUMER</span>", consumer)
