"""Replication on the dashboard: the topic's replication table and its live fragment, health
counts on the topic list and the overview, and the brokers page with the tenant's counts.

Topics are created by the actions over three brokers (replication factor 3); the rows are
then written as the controller writes them after a failover.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from tests.support.processes import free_port
from tests.webapp.dashboard.conftest import PASSWORD, Member
from webapp.accounts.models import Role
from webapp.catalog.actions.topics import check_create_topic, do_create_topic
from webapp.catalog.models import Partition, Topic
from webapp.fleet.models import BrokerNode, BrokerState

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def three_brokers(registered_broker: BrokerNode) -> None:
    for node_id in (2, 3):
        BrokerNode.objects.create(node_id=node_id, host="127.0.0.1", port=free_port(), state=BrokerState.ONLINE)


def make_topic(member: Member, name: str, partitions: int, configs: dict[str, str] | None = None) -> Topic:
    return do_create_topic(member.actor, check_create_topic(member.actor, name, partitions, 3, configs or {})).topic


def record(topic: Topic, index: int, *, leader: int, isr: list[int], replicas: list[int], epoch: int) -> None:
    Partition.objects.filter(topic=topic, index=index).update(leader=leader, isr=isr, replicas=replicas, leader_epoch=epoch)


@pytest.fixture
def orders(owner: Member) -> Topic:
    """min.insync.replicas 2; p0 in sync, p1 lost a follower, p2 is down to its leader, p3 is offline."""
    topic = make_topic(owner, "orders", 4, {"min.insync.replicas": "2"})
    record(topic, 0, leader=2, replicas=[2, 3, 1], isr=[2, 3, 1], epoch=0)
    record(topic, 1, leader=1, replicas=[1, 2, 3], isr=[1, 2], epoch=1)
    record(topic, 2, leader=3, replicas=[1, 2, 3], isr=[3], epoch=4)
    record(topic, 3, leader=-1, replicas=[2, 3, 1], isr=[2], epoch=7)
    return topic


def row(content: str, partition: int) -> str:
    """The replication table's row of ``partition``, tags and all."""
    match = re.search(rf'<tr data-partition="{partition}">(.*?)</tr>', content, re.S)
    assert match, f"no row for partition {partition}"
    return match.group(1)


def cells(html: str) -> list[str]:
    """The text of each cell of a row."""
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", html, re.S)]


def test_topic_detail_shows_leader_replicas_isr_epoch_and_state_badges(owner: Member, orders: Topic) -> None:
    content = owner.client.get(reverse("dashboard:topic", args=["orders"])).content.decode()

    assert cells(row(content, 0)) == ["0", "2", "2, 3, 1", "2, 3, 1", "0", "ok"]
    assert cells(row(content, 1)) == ["1", "1", "1, 2, 3", "1, 2", "1", "under-replicated"]
    assert cells(row(content, 2)) == ["2", "3", "1, 2, 3", "3", "4", "below min ISR"]
    assert cells(row(content, 3)) == ["3", "none", "2, 3, 1", "2", "7", "offline"]
    assert '<span class="badge under-min-isr">below min ISR</span>' in row(content, 2)
    assert '<span class="replica leader" title="broker 3, leader">3</span>' in row(content, 2)
    assert 'class="replica out-of-sync" title="broker 1, preferred leader, not in sync"' in row(content, 2)
    assert "1 offline" in content and "2 below min ISR" in content and "3 under-replicated" in content
    assert f'data-live-url="{reverse("dashboard:topic_replication", args=["orders"])}"' in content
    assert "unavailable" in content  # offsets: the brokers do not answer here


def test_replication_fragment_follows_the_controllers_latest_records(owner: Member, orders: Topic) -> None:
    url = reverse("dashboard:topic_replication", args=["orders"])
    before = owner.client.get(url)
    record(orders, 3, leader=2, replicas=[2, 3, 1], isr=[2], epoch=8)  # elected again

    after = owner.client.get(url)

    assert "<html" not in before.content.decode() and "no-cache" in after["Cache-Control"]
    assert cells(row(before.content.decode(), 3))[-1] == "offline"
    assert cells(row(after.content.decode(), 3)) == ["3", "2", "2, 3, 1", "2", "8", "below min ISR"]


def test_replication_fragment_is_the_tenants_own(owner: Member, other_owner: Member, orders: Topic) -> None:
    url = reverse("dashboard:topic_replication", args=["orders"])

    assert other_owner.client.get(url).status_code == 404
    assert Client().get(url).status_code == 302


def test_healthy_topic_says_so(owner: Member) -> None:
    make_topic(owner, "payments", 2)

    content = owner.client.get(reverse("dashboard:topic", args=["payments"])).content.decode()

    assert '<span class="badge ok">2 of 2 partitions ok</span>' in content
    assert "min.insync.replicas 1" in content


def test_topic_list_highlights_unhealthy_counts(owner: Member, orders: Topic) -> None:
    make_topic(owner, "payments", 2)

    content = owner.client.get(reverse("dashboard:topics")).content.decode()

    orders_row = re.search(r'<tr>\s*<td><a href="[^"]*/orders/">orders</a>(.*?)</tr>', content, re.S).group(1)  # type: ignore[union-attr]
    payments_row = re.search(r'<tr>\s*<td><a href="[^"]*/payments/">payments</a>(.*?)</tr>', content, re.S).group(1)  # type: ignore[union-attr]
    assert '<span class="badge under-replicated">3</span>' in orders_row
    assert '<span class="badge under-min-isr">2</span>' in orders_row
    assert '<span class="badge offline">1</span>' in orders_row
    assert payments_row.count('<span class="badge ok">0</span>') == 3


def test_overview_counts_only_the_tenants_partitions(owner: Member, other_owner: Member, orders: Topic) -> None:
    theirs = make_topic(other_owner, "orders", 2)
    for index in range(2):
        record(theirs, index, leader=-1, isr=[], replicas=[1, 2, 3], epoch=3)

    content = owner.client.get(reverse("dashboard:overview")).content.decode()

    health = content[content.index('id="partition-health"') :]
    assert '<span class="badge offline">1</span></div><div class="label">offline partitions' in health
    assert '<span class="badge under-min-isr">2</span></div><div class="label">partitions below min ISR' in health
    assert '<span class="badge under-replicated">3</span></div><div class="label">under-replicated partitions' in health
    assert reverse("dashboard:brokers") in content


def broker_rows(content: str) -> dict[int, list[str]]:
    rows = re.findall(r'<tr data-broker="(\d+)">(.*?)</tr>', content, re.S)
    return {int(node_id): cells(html) for node_id, html in rows}


def test_brokers_page_shows_states_and_the_viewers_tenant_counts(owner: Member, other_owner: Member, orders: Topic, make_member) -> None:  # type: ignore[no-untyped-def]
    theirs = make_topic(other_owner, "secret-plans", 3)
    for index in range(3):
        record(theirs, index, leader=3, isr=[3], replicas=[3, 1, 2], epoch=1)
    BrokerNode.objects.filter(node_id=1).update(state=BrokerState.OFFLINE)
    BrokerNode.objects.filter(node_id=2).update(state="SHUTDOWN")  # a state added later renders by its name
    viewer = make_member(owner.tenant, Role.VIEWER)

    content = viewer.client.get(reverse("dashboard:brokers")).content.decode()

    rows = broker_rows(content)
    assert [rows[node][3:4] + rows[node][5:7] for node in (1, 2, 3)] == [["OFFLINE", "1", "4"], ["SHUTDOWN", "1", "4"], ["ONLINE", "1", "4"]]
    assert '<span class="badge SHUTDOWN">SHUTDOWN</span>' in content
    assert "secret-plans" not in content
    assert f'data-live-url="{reverse("dashboard:broker_table")}"' in content


def test_broker_table_fragment_refreshes_counts_and_states(owner: Member, orders: Topic) -> None:
    url = reverse("dashboard:broker_table")
    BrokerNode.objects.filter(node_id=3).update(state=BrokerState.OFFLINE)
    record(orders, 2, leader=1, replicas=[1, 2, 3], isr=[1], epoch=5)  # broker 3's partition failed over to 1

    response = owner.client.get(url)

    content = response.content.decode()
    assert "<html" not in content and "no-cache" in response["Cache-Control"]
    assert broker_rows(content)[1][5] == "2" and broker_rows(content)[3][5] == "0"
    assert broker_rows(content)[3][3] == "OFFLINE"
    assert Client().get(url).status_code == 302


def test_operator_outside_any_tenant_sees_every_partition_counted(owner: Member, other_owner: Member, orders: Topic) -> None:
    make_topic(other_owner, "elsewhere", 2)
    operator = get_user_model().objects.create_user(username="ops", password=PASSWORD, is_staff=True)
    client = Client()
    client.force_login(operator)

    rows = broker_rows(client.get(reverse("dashboard:broker_table")).content.decode())

    assert [rows[node][6] for node in (1, 2, 3)] == ["6", "6", "6"]


def test_operator_member_counts_the_current_tenant(owner: Member, other_owner: Member, orders: Topic) -> None:
    make_topic(other_owner, "elsewhere", 2)
    get_user_model().objects.filter(pk=owner.membership.user.pk).update(is_staff=True)

    rows = broker_rows(owner.client.get(reverse("dashboard:brokers")).content.decode())

    assert [rows[node][6] for node in (1, 2, 3)] == ["4", "4", "4"]


def test_overview_shows_both_doors_with_the_brokers_kafka_listeners(owner: Member) -> None:
    content = owner.client.get(reverse("dashboard:overview")).content.decode()
    assert "No registered broker has a Kafka listener yet." in content

    BrokerNode.objects.filter(node_id=2).update(kafka_port=19092)
    BrokerNode.objects.filter(node_id=3).update(kafka_port=19093, state=BrokerState.OFFLINE)
    content = owner.client.get(reverse("dashboard:overview")).content.decode()

    assert "from weir import Producer" in content
    # Live brokers first, then those known to be down.
    assert "bootstrap.servers=127.0.0.1:19092,127.0.0.1:19093" in content
    assert "sasl.mechanism=PLAIN" in content and "security.protocol=SASL_PLAINTEXT" in content
