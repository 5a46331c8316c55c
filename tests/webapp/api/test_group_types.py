"""``/api/v1/consumer-groups`` give each group's ``type`` (CONSUMER: KIP-848; CLASSIC: JoinGroup/SyncGroup) and list by it.

An in-memory admin stands behind ``webapp.consumer_groups``, as in test_groups.py: a KIP-848
group of the weir SDK and a classic group of a stock Kafka client side by side.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.support.fake_group_admin import FakeGroupAdmin, FakeMember
from tests.webapp.api.conftest import TenantFixture
from webapp import consumer_groups
from webapp.accounts.models import Role
from weir import ConsumerGroupState, ConsumerGroupType

pytestmark = pytest.mark.django_db

GROUPS = "/api/v1/consumer-groups"


@pytest.fixture
def cluster(acme: TenantFixture, monkeypatch: pytest.MonkeyPatch) -> FakeGroupAdmin:
    """acme's groups: sdk-app (KIP-848, one member), librdkafka-app (classic, rebalancing), offsets-only (classic, no members)."""
    fake = FakeGroupAdmin()
    fake.add_topic("orders", [10, 20])
    fake.add_group("sdk-app", {("orders", 0): 4}, [FakeMember("m-1", "weir-sdk", [("orders", 0)])], assignor="uniform")
    fake.add_group(
        "librdkafka-app",
        {("orders", 1): 3},
        [FakeMember("rdkafka-1", "rdkafka", [("orders", 1)])],
        assignor="range",
        group_type=ConsumerGroupType.CLASSIC,
        state=ConsumerGroupState.PREPARING_REBALANCE,
    )
    fake.add_group("offsets-only", {("orders", 0): 1}, group_type=ConsumerGroupType.CLASSIC)

    @contextmanager
    def admin_client(tenant_public_id: str) -> Iterator[FakeGroupAdmin]:
        assert tenant_public_id == acme.tenant.public_id
        yield fake

    monkeypatch.setattr(consumer_groups, "admin_client", admin_client)
    return fake


def test_each_group_carries_its_type(acme: TenantFixture, cluster: FakeGroupAdmin) -> None:
    client = acme.client(Role.VIEWER)

    listed = client.get(GROUPS).json()["data"]
    classic = client.get(f"{GROUPS}/librdkafka-app").json()

    assert [(group["consumer_group_id"], group["type"]) for group in listed] == [
        ("librdkafka-app", "CLASSIC"),
        ("offsets-only", "CLASSIC"),
        ("sdk-app", "CONSUMER"),
    ]
    assert (classic["type"], classic["state"], classic["partition_assignor"], classic["members_count"]) == ("CLASSIC", "PREPARING_REBALANCE", "range", 1)


def test_list_filters_by_type_and_refuses_unknown_types(acme: TenantFixture, cluster: FakeGroupAdmin) -> None:
    client = acme.client(Role.VIEWER)

    classic = client.get(GROUPS, {"type": "CLASSIC"}).json()["data"]
    both = client.get(f"{GROUPS}?type=CLASSIC&type=CONSUMER&state=STABLE").json()["data"]
    unknown = client.get(GROUPS, {"type": "SHARE"})

    assert [group["consumer_group_id"] for group in classic] == ["librdkafka-app", "offsets-only"]
    assert [group["consumer_group_id"] for group in both] == ["sdk-app"]
    assert unknown.status_code == 400 and "SHARE" in unknown.json()["errors"]["type"][0] and "CLASSIC" in unknown.json()["errors"]["type"][0]


def test_the_schema_documents_the_type_and_its_filter(acme: TenantFixture) -> None:
    document = acme.client(Role.VIEWER).get("/api/schema/?format=json").json()

    parameters = {parameter["name"]: parameter for parameter in document["paths"]["/api/v1/consumer-groups"]["get"]["parameters"]}
    assert parameters["type"]["schema"]["items"]["enum"] == ["CLASSIC", "CONSUMER"]
    group_schema = document["components"]["schemas"]["ConsumerGroup"]
    assert "type" in group_schema["properties"] and "type" in group_schema["required"]
