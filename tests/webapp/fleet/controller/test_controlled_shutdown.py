"""Controlled shutdown: leaderships move to live ISR members, ISRs shrink, what cannot move is
reported, the session ends; the broker leads again only after it registers again."""

from __future__ import annotations

import pytest

from tests.webapp.fleet.controller.harness import ControllerHarness, placement
from webapp.controller.actions import PartitionRef
from webapp.controller.service import STALE_BROKER_EPOCH
from webapp.fleet.facade import placement_candidates, registered_broker_count
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.provisioning.models import SnapshotKind
from webapp.provisioning.push import push_targets
from webapp.provisioning.versions import current_versions
from weir.errors import ErrorCode

pytestmark = pytest.mark.django_db


@pytest.fixture
def harness() -> ControllerHarness:
    return ControllerHarness()


def test_shutdown_moves_leaderships_shrinks_isrs_and_ends_the_session(harness: ControllerHarness) -> None:
    [led] = harness.topic("orders", replicas=[1, 3, 2], isr=[1, 2, 3], leader=1)
    [followed] = harness.topic("payments", replicas=[2, 1, 3], isr=[2, 1, 3], leader=2)
    [elsewhere] = harness.topic("audit", replicas=[2, 3], isr=[2, 3], leader=2)
    version_before = current_versions()[SnapshotKind.PARTITIONS]

    result = harness.service.controlled_shutdown(1, harness.epochs[1])

    assert (result.error_code, result.remaining) == (ErrorCode.NO_ERROR, ())
    assert placement(led) == (3, 4, [2, 3])  # first other ISR member in replica order
    assert placement(followed) == (2, 4, [2, 3])
    assert placement(elsewhere) == (2, 3, [2, 3])
    assert current_versions()[SnapshotKind.PARTITIONS] == version_before + 1
    assert harness.pushes == 1
    assert BrokerNode.objects.get(node_id=1).state == BrokerState.STOPPED
    # The session ended: heartbeats are stale, and it is not fenced again later.
    assert not harness.service.heartbeat(1, harness.epochs[1])
    assert harness.only_alive(2, 3) == []
    assert BrokerNode.objects.get(node_id=1).state == BrokerState.STOPPED


def test_partitions_without_another_live_isr_member_are_reported_and_kept(harness: ControllerHarness) -> None:
    alone, alone_too = harness.topic("solo", replicas=[1, 2], isr=[1], leader=1, partitions=2)
    [movable] = harness.topic("orders", replicas=[1, 2, 3], isr=[1, 2, 3], leader=1)

    result = harness.service.controlled_shutdown(1, harness.epochs[1])

    assert result.error_code == ErrorCode.NO_ERROR
    assert result.remaining == (PartitionRef(harness.qualified("solo"), 0), PartitionRef(harness.qualified("solo"), 1))
    assert placement(alone) == placement(alone_too) == (1, 3, [1])
    assert placement(movable) == (2, 4, [2, 3])  # what could move moved in the same call
    # Not done: the broker stays online with its session, and asks again.
    assert BrokerNode.objects.get(node_id=1).state == BrokerState.ONLINE
    assert harness.service.heartbeat(1, harness.epochs[1])
    again = harness.service.controlled_shutdown(1, harness.epochs[1])
    assert len(again.remaining) == 2
    assert harness.pushes == 1  # the retry changed nothing


def test_a_broker_shutting_down_is_never_elected(harness: ControllerHarness) -> None:
    harness.topic("solo", replicas=[1, 3], isr=[1], leader=1)  # keeps broker 1 in controlled shutdown (3 may catch up)
    [partition] = harness.topic("payments", replicas=[2, 1, 3], isr=[2, 1], leader=2)
    assert harness.service.controlled_shutdown(1, harness.epochs[1]).remaining
    assert placement(partition) == (2, 4, [2])
    # The leader, not yet aware, puts broker 1 back into the ISR; then the leader dies.
    assert harness.service.alter_partition(harness.qualified("payments"), 0, 2, 4, [2, 1], harness.epochs[2]).error_code == ErrorCode.NO_ERROR
    assert harness.only_alive(1, 3) == [2]
    leader, _, _ = placement(partition)
    assert leader == -1  # offline rather than led by a broker that is stopping


@pytest.mark.parametrize(("node_id", "epoch_of"), [(1, lambda epochs: epochs[1] - 1), (1, lambda epochs: 0), (7, lambda epochs: epochs[1])])
def test_shutdown_with_a_stale_or_unknown_session_is_refused(harness: ControllerHarness, node_id: int, epoch_of) -> None:  # type: ignore[no-untyped-def]
    [partition] = harness.topic("orders", replicas=[1, 2, 3], isr=[1, 2, 3], leader=1)
    result = harness.service.controlled_shutdown(node_id, epoch_of(harness.epochs))
    assert result.error_code == STALE_BROKER_EPOCH
    assert placement(partition) == (1, 3, [1, 2, 3])
    assert harness.service.heartbeat(1, harness.epochs[1])
    assert harness.pushes == 0


@pytest.mark.parametrize("how_it_left", ["controlled shutdown", "session expired"])
def test_a_returning_broker_gets_its_leaderships_back_once_in_the_isr(harness: ControllerHarness, how_it_left: str) -> None:
    [partition] = harness.topic("orders", replicas=[1, 2, 3], isr=[1, 2, 3], leader=1)
    if how_it_left == "controlled shutdown":
        harness.service.controlled_shutdown(1, harness.epochs[1])
    else:
        assert harness.only_alive(2, 3) == [1]
    assert placement(partition) == (2, 4, [2, 3])

    harness.register_again(1)
    assert BrokerNode.objects.get(node_id=1).state == BrokerState.ONLINE
    # Back, but not in the ISR yet: it must not lead.
    assert harness.service.elect_preferred_leaders(imbalance_percentage=10.0) == []
    # It caught up: the leader adds it to the ISR; the next rebalance gives it its leadership back.
    assert harness.service.alter_partition(harness.qualified("orders"), 0, 2, 4, [2, 3, 1], harness.epochs[2]).error_code == ErrorCode.NO_ERROR
    [move] = harness.service.elect_preferred_leaders(imbalance_percentage=10.0)
    assert (move.topic, move.partition, move.previous_leader, move.leader, move.leader_epoch) == (harness.qualified("orders"), 0, 2, 1, 5)
    assert placement(partition) == (1, 5, [1, 2, 3])


def test_a_stopped_broker_gets_no_pushes_and_no_new_replicas(harness: ControllerHarness) -> None:
    harness.service.controlled_shutdown(1, harness.epochs[1])
    assert [broker.node_id for broker in push_targets()] == [2, 3]
    assert sorted(broker.node_id for broker in placement_candidates()) == [2, 3]
    assert registered_broker_count() == 2


def test_partitions_no_other_live_replica_can_take_do_not_hold_the_shutdown_and_go_offline(harness: ControllerHarness) -> None:
    [single] = harness.topic("single", replicas=[1], isr=[1], leader=1)
    [moved] = harness.topic("orders", replicas=[1, 2], isr=[1, 2], leader=1)
    result = harness.service.controlled_shutdown(1, harness.epochs[1])
    assert result.error_code == ErrorCode.NO_ERROR and result.remaining == ()
    assert placement(moved) == (2, 4, [2])
    leader, epoch, isr = placement(single)
    assert (leader, isr) == (-1, [1])  # offline; broker 1 leads it again cleanly when it returns
    assert BrokerNode.objects.get(node_id=1).state == BrokerState.STOPPED
