"""Preferred-leader election against the database: the controller's periodic one (imbalance
percentage) and ``manage.py elect_leaders``."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.webapp.fleet.controller.harness import ControllerHarness, placement
from webapp.accounts.models import Tenant
from webapp.catalog.models import Partition, Topic
from webapp.controller.actions import UnknownTopicError
from webapp.controller.management.commands import elect_leaders
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.provisioning.models import SnapshotKind
from webapp.provisioning.versions import current_versions

pytestmark = pytest.mark.django_db


def test_rebalance_moves_only_brokers_above_the_imbalance_percentage() -> None:
    harness = ControllerHarness()
    # Broker 1 prefers 10 partitions and leads 9: 10% is not above 10%.
    partitions = harness.topic("orders", replicas=[1, 2, 3], isr=[1, 2, 3], leader=1, partitions=10)
    Partition.objects.filter(pk=partitions[9].pk).update(leader=2)
    version_before = current_versions()[SnapshotKind.PARTITIONS]
    assert harness.service.elect_preferred_leaders(imbalance_percentage=10.0) == []
    assert current_versions()[SnapshotKind.PARTITIONS] == version_before
    assert harness.pushes == 0
    # It leads 8 of 10: 20% is above, both move back at a higher epoch.
    Partition.objects.filter(pk=partitions[8].pk).update(leader=3)
    moves = harness.service.elect_preferred_leaders(imbalance_percentage=10.0)
    assert [(move.partition, move.previous_leader, move.leader, move.leader_epoch) for move in moves] == [(8, 3, 1, 4), (9, 2, 1, 4)]
    assert placement(partitions[8]) == placement(partitions[9]) == (1, 4, [1, 2, 3])
    assert current_versions()[SnapshotKind.PARTITIONS] == version_before + 1
    assert harness.pushes == 1


def test_preferred_replica_without_a_session_is_not_elected() -> None:
    harness = ControllerHarness()
    [partition] = harness.topic("orders", replicas=[1, 2, 3], isr=[1, 2, 3], leader=2)
    harness.only_alive(2, 3)  # broker 1's session expires
    Partition.objects.filter(pk=partition.pk).update(isr=[1, 2, 3])  # even in the ISR, a broker without a session never leads
    assert harness.service.elect_preferred_leaders() == []
    assert placement(partition)[0] == 2


def test_election_limited_to_one_topic_and_an_unknown_topic() -> None:
    harness = ControllerHarness()
    [orders] = harness.topic("orders", replicas=[1, 2], isr=[1, 2], leader=2)
    [payments] = harness.topic("payments", replicas=[1, 2], isr=[1, 2], leader=2)
    [move] = harness.service.elect_preferred_leaders(topic=harness.qualified("payments"))
    assert (move.topic, move.leader) == (harness.qualified("payments"), 1)
    assert placement(orders)[0] == 2 and placement(payments)[0] == 1
    with pytest.raises(UnknownTopicError):
        harness.service.elect_preferred_leaders(topic=harness.qualified("missing"))
    with pytest.raises(UnknownTopicError):
        harness.service.elect_preferred_leaders(topic="no-tenant-separator")


@pytest.fixture
def pushes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The controller epochs of the command's pushes (no broker is running)."""
    recorded: list[int] = []
    monkeypatch.setattr(elect_leaders, "push_partitions", recorded.append)
    return recorded


def _cluster() -> tuple[Tenant, list[Partition]]:
    for node_id, state in ((1, BrokerState.ONLINE), (2, BrokerState.ONLINE), (3, BrokerState.OFFLINE)):
        BrokerNode.objects.create(node_id=node_id, host="127.0.0.1", port=9000 + node_id, state=state)
    tenant = Tenant.objects.create(name="Acme", slug="acme")
    rows = []
    for name, replicas in (("orders", [1, 2]), ("payments", [1, 2]), ("audit", [3, 2])):
        topic = Topic.objects.create(tenant=tenant, name=name, partition_count=1, replication_factor=2)
        rows.append(Partition.objects.create(topic=topic, index=0, replicas=replicas, isr=replicas, leader=2, leader_epoch=6))
    return tenant, rows


def test_elect_leaders_command_moves_every_partition_it_can_and_prints_the_moves(pushes: list[int]) -> None:
    tenant, (orders, payments, audit) = _cluster()
    output = io.StringIO()
    call_command("elect_leaders", stdout=output)
    assert output.getvalue().splitlines() == [
        f"{tenant.public_id}~orders partition 0: leader 2 -> 1 (leader epoch 7)",
        f"{tenant.public_id}~payments partition 0: leader 2 -> 1 (leader epoch 7)",
        "2 partition(s) moved; cluster map pushed to the brokers",
    ]
    assert placement(orders)[0] == placement(payments)[0] == 1
    assert placement(audit)[0] == 2  # its preferred replica, broker 3, is offline
    assert pushes == [0]  # not a controller's map


def test_elect_leaders_command_for_one_topic(pushes: list[int]) -> None:
    tenant, (orders, payments, _) = _cluster()
    output = io.StringIO()
    call_command("elect_leaders", "--topic", f"{tenant.public_id}:payments", stdout=output)
    assert output.getvalue().splitlines()[0] == f"{tenant.public_id}~payments partition 0: leader 2 -> 1 (leader epoch 7)"
    assert (placement(orders)[0], placement(payments)[0]) == (2, 1)
    output = io.StringIO()
    call_command("elect_leaders", "--topic", f"{tenant.public_id}:payments", stdout=output)
    assert "every partition is led by its preferred replica" in output.getvalue()
    assert pushes == [0]


@pytest.mark.parametrize(("argument", "message"), [("orders", "TENANT_ID:NAME"), (":orders", "TENANT_ID:NAME"), ("tn-nobody:orders", "no topic")])
def test_elect_leaders_command_refuses_a_bad_or_unknown_topic(pushes: list[int], argument: str, message: str) -> None:
    _cluster()
    with pytest.raises(CommandError, match=message):
        call_command("elect_leaders", "--topic", argument, stdout=io.StringIO())
    assert pushes == []
