"""The controller against the database: failover, returns, AlterPartition; pushes recorded."""

from __future__ import annotations

import pytest

from webapp.accounts.models import Tenant
from webapp.catalog.models import Partition, Topic
from webapp.controller.service import STALE_BROKER_EPOCH, ControllerService
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.provisioning.models import SnapshotKind
from webapp.provisioning.versions import current_versions
from weir.errors import ErrorCode

pytestmark = pytest.mark.django_db


class ManualMonotonic:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Harness:
    def __init__(self) -> None:
        self.clock = ManualMonotonic()
        self.pushes = 0
        self.service = ControllerService(session_timeout_ms=9000, monotonic=self.clock, first_epoch=1, push=self._push)
        self.tenant = Tenant.objects.create(name="Acme", slug="acme")
        self.epochs = {node_id: self.service.register(node_id, "127.0.0.1", 9000 + node_id, "").broker_epoch for node_id in (1, 2, 3)}
        self.pushes = 0  # registrations push (and create the internal topics); count from here

    def _push(self) -> None:
        self.pushes += 1

    def topic(self, name: str, leader: int, isr: list[int], configs: dict[str, str] | None = None) -> Partition:
        topic = Topic.objects.create(tenant=self.tenant, name=name, partition_count=1, replication_factor=3, configs=configs or {})
        return Partition.objects.create(topic=topic, index=0, replicas=[1, 2, 3], isr=isr, leader=leader, leader_epoch=3)

    def only_alive(self, *node_ids: int) -> list[int]:
        """Let the sessions of the other brokers expire, then check sessions."""
        self.clock.now += 5.0
        for node_id in node_ids:
            assert self.service.heartbeat(node_id, self.epochs[node_id])
        self.clock.now += 5.0
        for node_id in node_ids:
            assert self.service.heartbeat(node_id, self.epochs[node_id])
        return self.service.check_sessions()


@pytest.fixture
def harness() -> Harness:
    return Harness()


def test_expired_leader_is_replaced_by_an_isr_member_with_a_higher_epoch(harness: Harness) -> None:
    partition = harness.topic("orders", leader=1, isr=[1, 2, 3])
    version_before = current_versions()[SnapshotKind.PARTITIONS]
    assert harness.only_alive(2, 3) == [1]
    partition.refresh_from_db()
    assert (partition.leader, partition.leader_epoch, partition.isr) == (2, 4, [2, 3])
    assert BrokerNode.objects.get(node_id=1).state == BrokerState.OFFLINE
    assert current_versions()[SnapshotKind.PARTITIONS] > version_before
    assert harness.pushes == 1


def test_whole_isr_down_without_unclean_election_leaves_the_partition_offline(harness: Harness) -> None:
    partition = harness.topic("orders", leader=1, isr=[1])
    harness.only_alive(2, 3)
    partition.refresh_from_db()
    assert (partition.leader, partition.leader_epoch, partition.isr) == (-1, 4, [1])


def test_unclean_election_enabled_on_the_topic_elects_an_out_of_sync_replica(harness: Harness) -> None:
    partition = harness.topic("orders", leader=1, isr=[1], configs={"unclean.leader.election.enable": "true"})
    harness.only_alive(2, 3)
    partition.refresh_from_db()
    assert (partition.leader, partition.leader_epoch, partition.isr) == (2, 4, [2])


def test_returning_isr_member_leads_its_offline_partition_again(harness: Harness) -> None:
    partition = harness.topic("orders", leader=1, isr=[1])
    harness.only_alive(2, 3)
    new_epoch = harness.service.register(1, "127.0.0.1", 9001, "").broker_epoch
    assert new_epoch > harness.epochs[1]
    assert not harness.service.heartbeat(1, harness.epochs[1])
    partition.refresh_from_db()
    assert (partition.leader, partition.leader_epoch) == (1, 5)
    assert BrokerNode.objects.get(node_id=1).state == BrokerState.ONLINE


def test_alter_partition_from_the_current_leader_stores_the_isr(harness: Harness) -> None:
    partition = harness.topic("orders", leader=1, isr=[1, 2, 3])
    qualified = f"{harness.tenant.public_id}~orders"
    result = harness.service.alter_partition(qualified, 0, 1, 3, [3, 1], harness.epochs[1])
    assert (result.error_code, result.isr, result.leader_epoch) == (ErrorCode.NO_ERROR, (1, 3), 3)
    partition.refresh_from_db()
    assert partition.isr == [1, 3]
    assert harness.pushes == 1


@pytest.mark.parametrize(
    ("leader_id", "leader_epoch", "new_isr", "expected"),
    [
        (1, 2, [1, 2], ErrorCode.FENCED_LEADER_EPOCH),  # an older epoch
        (2, 3, [2, 3], ErrorCode.FENCED_LEADER_EPOCH),  # not the leader
        (1, 3, [2, 3], ErrorCode.INVALID_REQUEST),  # leaves out the leader
        (1, 3, [1, 7], ErrorCode.INVALID_REQUEST),  # not a replica
    ],
)
def test_alter_partition_refuses_stale_or_invalid_changes(harness: Harness, leader_id: int, leader_epoch: int, new_isr: list[int], expected: int) -> None:
    partition = harness.topic("orders", leader=1, isr=[1, 2, 3])
    result = harness.service.alter_partition(f"{harness.tenant.public_id}~orders", 0, leader_id, leader_epoch, new_isr, 0)
    assert result.error_code == expected
    partition.refresh_from_db()
    assert partition.isr == [1, 2, 3]
    assert harness.pushes == 0


def test_alter_partition_with_a_replaced_broker_epoch_is_stale(harness: Harness) -> None:
    harness.topic("orders", leader=1, isr=[1, 2, 3])
    harness.service.register(1, "127.0.0.1", 9001, "")
    result = harness.service.alter_partition(f"{harness.tenant.public_id}~orders", 0, 1, 3, [1, 2], harness.epochs[1])
    assert result.error_code == STALE_BROKER_EPOCH


def test_alter_partition_of_an_unknown_partition(harness: Harness) -> None:
    result = harness.service.alter_partition(f"{harness.tenant.public_id}~missing", 0, 1, 3, [1], 0)
    assert result.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
