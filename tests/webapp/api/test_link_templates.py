"""Links in list pages: each route is reversed once per request, and every link is the URL
DRF's ``reverse`` gives (quoting included)."""

from __future__ import annotations

import pytest
from rest_framework.reverse import reverse
from rest_framework.test import APIRequestFactory

from tests.webapp.api.conftest import TenantFixture
from webapp.accounts.models import Role
from webapp.api.serializers import common
from webapp.catalog.actions.topics import check_create_topic, do_create_topic
from webapp.fleet.models import BrokerNode

pytestmark = pytest.mark.django_db


@pytest.fixture
def reversals(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The route names ``link`` reversed (DRF's reverse still does the work)."""
    names: list[str] = []

    def counting_reverse(name: str, *args: object, **kwargs: object) -> str:
        names.append(name)
        return reverse(name, *args, **kwargs)

    monkeypatch.setattr(common, "reverse", counting_reverse)
    return names


def test_a_page_of_topics_reverses_each_route_once_whatever_its_length(acme: TenantFixture, registered_broker: BrokerNode, reversals: list[str]) -> None:
    owner = acme.actor(Role.OWNER)
    for index in range(12):
        do_create_topic(owner, check_create_topic(owner, f"t-{index}", 1, 1, {}))
    reversals.clear()
    body = acme.client(Role.VIEWER).get("/api/v1/topics").json()
    assert len(body["results"]) == 12
    assert len(reversals) == len(set(reversals)) and len(reversals) <= 4
    # What the links say is what reverse() says for each topic.
    topic = next(entry for entry in body["results"] if entry["topic_name"] == "t-7")
    assert topic["metadata"]["self"] == "http://testserver/api/v1/topics/t-7"
    assert topic["configs"]["related"].startswith("http://testserver/api/v1/topics/t-7/")


def test_a_link_equals_drfs_reverse_for_plain_and_quoted_values() -> None:
    request = APIRequestFactory().get("/api/v1/topics")
    for name in ("orders", "orders.v2_x-y", "with space", "a%b", "90817263545"):
        assert common.link(request, "api:topic-detail", topic_name=name) == reverse("api:topic-detail", kwargs={"topic_name": name}, request=request)
    assert common.link(request, "api:topic-partition-detail", topic_name="orders", partition_id=3) == reverse(
        "api:topic-partition-detail", kwargs={"topic_name": "orders", "partition_id": 3}, request=request
    )


def test_a_link_of_several_arguments_puts_each_where_its_route_has_it_whatever_the_order_given() -> None:
    request = APIRequestFactory().get("/api/v1/topics")
    expected = reverse("api:topic-partition-replica", kwargs={"topic_name": "orders", "partition_id": 3, "broker_id": 12}, request=request)
    assert common.link(request, "api:topic-partition-replica", broker_id=12, topic_name="orders", partition_id=3) == expected
    assert common.link(request, "api:topic-partition-replica", topic_name="orders", partition_id=3, broker_id=12) == expected
    # The template of the same route is reused with other values, quoting when they need it.
    assert common.link(request, "api:topic-partition-replica", broker_id=1, topic_name="a b", partition_id=0) == reverse(
        "api:topic-partition-replica", kwargs={"topic_name": "a b", "partition_id": 0, "broker_id": 1}, request=request
    )
