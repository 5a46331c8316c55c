"""Replication state in the API: partitions' leader, replicas, ISR and health flags, replica
resources, topic and cluster health counts, and the brokers with the tenant's partition counts.

Partitions are created by the topic actions (three brokers, replication factor 3), then
moved into the states a failover leaves them in by writing the rows as the controller does.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from tests.support.processes import free_port
from tests.webapp.api.conftest import PASSWORD, TenantFixture
from webapp.accounts.models import Role
from webapp.catalog.actions.topics import check_create_topic, do_create_topic
from webapp.catalog.models import Partition, Topic
from webapp.fleet.models import BrokerNode, BrokerState

pytestmark = pytest.mark.django_db


@pytest.fixture
def brokers(registered_broker: BrokerNode) -> list[BrokerNode]:
    """Brokers 1, 2, 3 on ports nothing listens on: describing partitions fails fast."""
    others = [BrokerNode.objects.create(node_id=node_id, host="127.0.0.1", port=free_port(), state=BrokerState.ONLINE) for node_id in (2, 3)]
    return [registered_broker, *others]


def make_topic(fixture: TenantFixture, name: str, partitions: int, configs: dict[str, str] | None = None) -> Topic:
    owner = fixture.actor(Role.OWNER)
    return do_create_topic(owner, check_create_topic(owner, name, partitions, 3, configs or {})).topic


def record(topic: Topic, index: int, *, leader: int, isr: list[int], replicas: list[int] | None = None, epoch: int = 1) -> None:
    """Write partition ``index`` as the controller would after an election or an ISR change."""
    changes: dict[str, object] = {"leader": leader, "isr": isr, "leader_epoch": epoch}
    if replicas is not None:
        changes["replicas"] = replicas
    Partition.objects.filter(topic=topic, index=index).update(**changes)


@pytest.fixture
def orders(acme: TenantFixture, brokers: list[BrokerNode]) -> Topic:
    """acme's ``orders`` with min.insync.replicas 2: p0 in sync, p1 lost a follower, p2 is
    down to its leader (below min ISR), p3 has no leader (offline)."""
    topic = make_topic(acme, "orders", 4, {"min.insync.replicas": "2"})
    record(topic, 0, leader=2, replicas=[2, 3, 1], isr=[2, 3, 1], epoch=0)
    record(topic, 1, leader=1, replicas=[1, 2, 3], isr=[1, 2])
    record(topic, 2, leader=3, replicas=[1, 2, 3], isr=[3], epoch=4)
    record(topic, 3, leader=-1, replicas=[2, 3, 1], isr=[2], epoch=7)
    return topic


def ids(entries: list[dict[str, int]]) -> list[int]:
    return [entry["broker_id"] for entry in entries]


def test_partitions_show_leader_replicas_preferred_first_isr_epoch_and_health(acme: TenantFixture, orders: Topic) -> None:
    response = acme.client(Role.VIEWER).get("/api/v1/topics/orders/partitions")

    assert response.status_code == 200, response.content
    partitions = {entry["partition_id"]: entry for entry in response.json()["data"]}
    assert ids(partitions[0]["replicas"]) == [2, 3, 1] and partitions[0]["leader"] == {"broker_id": 2}
    assert [(entry["is_offline"], entry["is_under_replicated"], entry["is_under_min_isr"]) for _, entry in sorted(partitions.items())] == [
        (False, False, False),
        (False, True, False),
        (False, True, True),
        (True, True, True),
    ]
    assert ids(partitions[1]["isr"]) == [1, 2]
    assert partitions[2]["leader_epoch"] == 4
    assert partitions[3]["leader"] is None and partitions[3]["leader_epoch"] == 7
    assert all(not entry["available"] for entry in partitions.values())  # no broker answers here


def test_single_partition_carries_the_same_health(acme: TenantFixture, orders: Topic) -> None:
    offline = acme.client(Role.VIEWER).get("/api/v1/topics/orders/partitions/3").json()

    assert offline["leader"] is None
    assert (offline["is_offline"], offline["is_under_replicated"], offline["is_under_min_isr"]) == (True, True, True)


def test_topic_counts_its_unhealthy_partitions(acme: TenantFixture, orders: Topic) -> None:
    healthy = make_topic(acme, "payments", 2)
    record(healthy, 0, leader=1, isr=[1])  # under-replicated, yet at the default min.insync.replicas 1

    single = acme.client(Role.VIEWER).get("/api/v1/topics/orders").json()
    listed = {entry["topic_name"]: entry for entry in acme.client(Role.VIEWER).get("/api/v1/topics").json()["results"]}

    counts = ("under_replicated_partitions_count", "under_min_isr_partitions_count", "offline_partitions_count")
    assert tuple(single[name] for name in counts) == (3, 2, 1)
    assert tuple(listed["orders"][name] for name in counts) == (3, 2, 1)
    assert tuple(listed["payments"][name] for name in counts) == (1, 0, 0)


def test_topic_list_costs_a_fixed_number_of_queries(acme: TenantFixture, brokers: list[BrokerNode], django_assert_max_num_queries) -> None:  # type: ignore[no-untyped-def]
    client = acme.client(Role.VIEWER)
    make_topic(acme, "t-0", 2)
    with django_assert_max_num_queries(50) as few:
        client.get("/api/v1/topics")
    for index in range(1, 8):
        make_topic(acme, f"t-{index}", 2)

    with django_assert_max_num_queries(len(few.captured_queries)):
        response = client.get("/api/v1/topics")

    assert len(response.json()["results"]) == 8


def test_replicas_say_which_leads_and_which_are_in_sync(acme: TenantFixture, orders: Topic) -> None:
    response = acme.client(Role.VIEWER).get("/api/v1/topics/orders/partitions/2/replicas")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["kind"] == "KafkaReplicaList"
    assert [(entry["broker_id"], entry["is_leader"], entry["is_in_sync"]) for entry in body["data"]] == [(1, False, False), (2, False, False), (3, True, True)]
    leader = body["data"][2]
    assert (leader["kind"], leader["cluster_id"], leader["topic_name"], leader["partition_id"]) == ("KafkaReplica", acme.tenant.public_id, "orders", 2)
    assert leader["metadata"]["self"].endswith("/api/v1/topics/orders/partitions/2/replicas/3")
    assert leader["broker"]["related"].endswith("/api/v1/brokers/3")


def test_one_replica_and_missing_ones(acme: TenantFixture, orders: Topic) -> None:
    client = acme.client(Role.VIEWER)

    replica = client.get("/api/v1/topics/orders/partitions/3/replicas/2").json()

    assert (replica["broker_id"], replica["is_leader"], replica["is_in_sync"]) == (2, False, True)
    assert client.get("/api/v1/topics/orders/partitions/3/replicas/4").status_code == 404
    assert client.get("/api/v1/topics/orders/partitions/4/replicas").status_code == 404
    assert client.get("/api/v1/topics/orders/partitions/99999999999999999999999/replicas").status_code == 404
    assert client.get("/api/v1/topics/nothing/partitions/0/replicas").status_code == 404


def test_cluster_counts_only_the_callers_partitions(acme: TenantFixture, globex: TenantFixture, orders: Topic) -> None:
    theirs = make_topic(globex, "orders", 2)
    record(theirs, 0, leader=-1, isr=[])
    record(theirs, 1, leader=-1, isr=[])
    BrokerNode.objects.filter(node_id=3).update(state=BrokerState.OFFLINE)

    response = acme.client(Role.VIEWER).get("/api/v1/cluster")

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["kind"], body["cluster_id"]) == ("KafkaCluster", acme.tenant.public_id)
    assert (body["topics_count"], body["partitions_count"]) == (1, 4)
    assert (body["under_replicated_partitions_count"], body["under_min_isr_partitions_count"], body["offline_partitions_count"]) == (3, 2, 1)
    assert (body["brokers_count"], body["broker_states"]) == (3, {"ONLINE": 2, "OFFLINE": 1})
    assert body["brokers"]["related"].endswith("/api/v1/brokers")
    assert body["topics"]["related"].endswith("/api/v1/topics")
    assert globex.client(Role.VIEWER).get("/api/v1/cluster").json()["offline_partitions_count"] == 2


def test_brokers_count_the_callers_partitions_they_lead_and_host(acme: TenantFixture, globex: TenantFixture, orders: Topic) -> None:
    theirs = make_topic(globex, "elsewhere", 3)
    for index in range(3):
        record(theirs, index, leader=1, replicas=[1, 2, 3], isr=[1, 2, 3])
    BrokerNode.objects.filter(node_id=2).update(state="SHUTDOWN")  # any state, including ones added later

    response = acme.client(Role.VIEWER).get("/api/v1/brokers")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["kind"] == "KafkaBrokerList"
    # orders: leaders 2, 1, 3 and none; every partition has a replica on each broker.
    assert [(entry["broker_id"], entry["state"], entry["leader_partitions_count"], entry["replica_partitions_count"]) for entry in body["data"]] == [
        (1, "ONLINE", 1, 4),
        (2, "SHUTDOWN", 1, 4),
        (3, "ONLINE", 1, 4),
    ]
    assert "elsewhere" not in response.content.decode()
    single = acme.client(Role.VIEWER).get("/api/v1/brokers/1").json()
    assert (single["kind"], single["leader_partitions_count"], single["replica_partitions_count"]) == ("KafkaBroker", 1, 4)
    assert set(single) >= {"host", "port", "rack", "last_seen_at"}


def test_operator_outside_any_tenant_counts_every_partition(acme: TenantFixture, globex: TenantFixture, orders: Topic) -> None:
    make_topic(globex, "elsewhere", 2)  # placed with its own leaders, every replica on each broker
    operator = get_user_model().objects.create_user(username="operator", password=PASSWORD, is_staff=True)
    client = APIClient()
    client.force_login(operator)

    data = client.get("/api/v1/brokers").json()["data"]

    assert sum(entry["leader_partitions_count"] for entry in data) == 3 + 2
    assert [entry["replica_partitions_count"] for entry in data] == [6, 6, 6]


@pytest.mark.parametrize("path", ["/api/v1/brokers/4", "/api/v1/brokers/99999999999999999999999"])
def test_unknown_broker_answers_404(acme: TenantFixture, brokers: list[BrokerNode], path: str) -> None:
    assert acme.client(Role.VIEWER).get(path).status_code == 404
