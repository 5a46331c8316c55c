"""Controller epochs: each takeover increases the epoch, a superseded controller changes nothing,
and the cluster maps a controller pushes carry its epoch."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from tests.webapp.fleet.controller.harness import ControllerHarness, placement
from webapp.accounts.models import Tenant
from webapp.catalog.models import Partition, Topic
from webapp.controller import actions
from webapp.controller.epoch import ControllerFencedError, become_active, current_epoch
from webapp.controller.pusher import ClusterMapPusher
from webapp.controller.service import ControllerService
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.provisioning.broker_client import BrokerAddress
from webapp.provisioning.models import SnapshotKind
from webapp.provisioning.snapshots import Snapshots, build_snapshots
from webapp.provisioning.versions import current_versions

pytestmark = pytest.mark.django_db


def test_each_takeover_increases_the_controller_epoch() -> None:
    first = become_active("host-a:1")
    second = become_active("host-b:2")
    assert second == first + 1
    assert current_epoch() == (second, "host-b:2")


def test_a_service_given_no_epoch_takes_the_next_one() -> None:
    before, _ = current_epoch()
    service = ControllerService(session_timeout_ms=9000, push=lambda: None)
    assert service.controller_epoch == before + 1
    assert current_epoch()[0] == service.controller_epoch


def _database_state() -> tuple[list[tuple[int, int, list[int]]], list[tuple[int, str]], int]:
    partitions = [(p.leader, p.leader_epoch, p.isr) for p in Partition.objects.order_by("pk")]
    brokers = list(BrokerNode.objects.order_by("node_id").values_list("node_id", "state"))
    return partitions, brokers, current_versions()[SnapshotKind.PARTITIONS]


# Each action of the catalog, called by a controller whose epoch is ``stale``.
ACTIONS: dict[str, Callable[[ControllerHarness, int], object]] = {
    "mark_broker_online": lambda h, stale: actions.mark_broker_online(4, "127.0.0.1", 9004, "", {1, 2, 3, 4}, controller_epoch=stale),
    "fence_broker": lambda h, stale: actions.fence_broker(1, {2, 3}, controller_epoch=stale),
    "alter_partition": lambda h, stale: actions.alter_partition(h.qualified("orders"), 0, 1, 3, [1, 2], controller_epoch=stale),
    "controlled_shutdown": lambda h, stale: actions.controlled_shutdown(1, {2, 3}, controller_epoch=stale),
    "elect_preferred_leaders": lambda h, stale: actions.elect_preferred_leaders({1, 2, 3}, controller_epoch=stale),
}


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_an_action_of_a_superseded_controller_is_refused_and_changes_nothing(action: str) -> None:
    harness = ControllerHarness()
    harness.topic("orders", replicas=[1, 2, 3], isr=[1, 2, 3], leader=1)
    harness.topic("payments", replicas=[1, 2, 3], isr=[1, 2, 3], leader=2)  # the preferred election would move it
    stale = harness.service.controller_epoch
    newer = become_active("successor:1")
    before = _database_state()
    with pytest.raises(ControllerFencedError) as raised:
        ACTIONS[action](harness, stale)
    assert (raised.value.epoch, raised.value.current_epoch, raised.value.holder) == (stale, newer, "successor:1")
    assert _database_state() == before
    assert not BrokerNode.objects.filter(node_id=4).exists()


def test_a_superseded_service_is_fenced_for_every_later_call() -> None:
    harness = ControllerHarness()
    [partition] = harness.topic("orders", replicas=[1, 2, 3], isr=[1, 2, 3], leader=1)
    become_active("successor:1")
    with pytest.raises(ControllerFencedError):
        harness.only_alive(2, 3)  # broker 1's session expired: the failover is refused
    assert harness.service.fenced
    assert placement(partition) == (1, 3, [1, 2, 3])
    assert BrokerNode.objects.get(node_id=1).state == BrokerState.ONLINE
    # Calls that would not touch the database are refused too, once fenced.
    with pytest.raises(ControllerFencedError):
        harness.service.heartbeat(2, harness.epochs[2])
    with pytest.raises(ControllerFencedError):
        harness.service.register(5, "127.0.0.1", 9005, "")
    with pytest.raises(ControllerFencedError):
        harness.service.controlled_shutdown(2, harness.epochs[2])
    assert harness.pushes == 0


def test_check_still_active_notices_a_newer_controller() -> None:
    harness = ControllerHarness()
    harness.service.check_still_active()
    assert not harness.service.fenced
    become_active("successor:1")
    with pytest.raises(ControllerFencedError):
        harness.service.check_still_active()
    assert harness.service.fenced


def test_partitions_snapshot_carries_the_controller_epoch_given() -> None:
    assert build_snapshots([SnapshotKind.PARTITIONS], controller_epoch=7).partitions.controller_epoch == 7
    # Provisioning jobs and the reconciler do not come from a controller: 0.
    assert build_snapshots([SnapshotKind.PARTITIONS]).partitions.controller_epoch == 0


def test_the_controller_pushes_maps_stamped_with_its_epoch_in_the_background() -> None:
    pushed: list[tuple[int, int]] = []
    arrived = threading.Event()
    release = threading.Event()

    def push_one(address: BrokerAddress, snapshots: Snapshots) -> None:
        release.wait(10)  # a slow broker: the decision is answered before its push ends
        pushed.append((address.node_id, snapshots.partitions.controller_epoch))
        arrived.set()

    epoch = become_active()
    pusher = ClusterMapPusher(epoch, push_one=push_one, targets=lambda: [BrokerAddress(1, "127.0.0.1:1")])
    service = ControllerService(session_timeout_ms=9000, first_epoch=1, controller_epoch=epoch, push=pusher.request)
    try:
        for node_id in (1, 2):
            service.register(node_id, "127.0.0.1", 9000 + node_id, "")
        tenant = Tenant.objects.create(name="Acme", slug="acme")
        topic = Topic.objects.create(tenant=tenant, name="orders", partition_count=1, replication_factor=2)
        Partition.objects.create(topic=topic, index=0, replicas=[1, 2], isr=[1, 2], leader=2, leader_epoch=0)
        assert service.elect_preferred_leaders()  # answered while the pushes wait
        assert not arrived.is_set()
        release.set()
        assert arrived.wait(10)
        # The worker pushes the newest map it was given; every one carries this controller's epoch.
        assert pushed and all(pushed_epoch == epoch for _, pushed_epoch in pushed)
    finally:
        release.set()
        pusher.stop()
