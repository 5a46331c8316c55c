"""The controller's changes to the catalog, each in one transaction that bumps the PARTITIONS
snapshot version when it changes a partition (see ``webapp.provisioning.versions``).

Partition rows are locked (``select_for_update``) while they are read and rewritten, so that
an ``AlterPartition`` and a failover of the same partition apply one after the other.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from webapp.catalog.models import Partition
from webapp.fleet.controller.election import PartitionState, after_broker_failure, after_broker_return
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.fleet.registration import register_broker
from webapp.provisioning.models import SnapshotKind
from webapp.provisioning.versions import bump_versions
from weir.errors import ErrorCode
from weir.topic_config import effective_topic_configs

logger = logging.getLogger(__name__)

TENANT_SEPARATOR = "~"  # brokers name a tenant's topic ``<tenant>~<name>`` (broker_nodes.names)


def _state(partition: Partition) -> PartitionState:
    return PartitionState(tuple(partition.replicas), tuple(partition.isr), partition.leader, partition.leader_epoch)


def _unclean_allowed(partition: Partition) -> bool:
    return bool(effective_topic_configs(partition.topic.configs or {})["unclean.leader.election.enable"])


def _store(partition: Partition, state: PartitionState) -> None:
    partition.isr = list(state.isr)
    partition.leader = state.leader
    partition.leader_epoch = state.leader_epoch
    partition.save(update_fields=["isr", "leader", "leader_epoch"])


def mark_broker_online(node_id: int, host: str, port: int, rack: str, live: Collection[int]) -> int:
    """Record broker ``node_id`` as registered and online; elect leaders of the offline
    partitions it can lead again. Returns how many partitions changed.

    Raises ``BrokerRegistrationError`` for an invalid description. ``live`` includes ``node_id``.
    """
    register_broker(node_id, host, port, rack)
    with transaction.atomic():
        BrokerNode.objects.filter(node_id=node_id).update(state=BrokerState.ONLINE, last_seen_at=timezone.now())
        changed = 0
        offline = Partition.objects.select_for_update().select_related("topic").filter(leader=-1).order_by("pk")
        for partition in offline:
            state = after_broker_return(_state(partition), node_id, live, unclean_allowed=_unclean_allowed(partition))
            if state is not None:
                _store(partition, state)
                changed += 1
                logger.info("partition %d of %s: broker %d is back, leader %d at epoch %d", partition.index, partition.topic, node_id, state.leader, state.leader_epoch)
        if changed:
            bump_versions([SnapshotKind.PARTITIONS])
    return changed


def fence_broker(node_id: int, live: Collection[int]) -> int:
    """Mark broker ``node_id`` offline and move its leaderships to live ISR members (offline
    partitions when there are none); drop it from every ISR. Returns how many partitions changed.

    Precondition: ``node_id`` is not in ``live``.
    """
    with transaction.atomic():
        BrokerNode.objects.filter(node_id=node_id).update(state=BrokerState.OFFLINE)
        changed = 0
        # Every partition row is read here: the replicas column is JSON, which not every
        # database can filter on portably, and a failover is rare.
        for partition in Partition.objects.select_for_update().select_related("topic").order_by("pk"):
            state = after_broker_failure(_state(partition), node_id, live, unclean_allowed=_unclean_allowed(partition))
            if state is not None and state != _state(partition):
                _store(partition, state)
                changed += 1
                logger.warning(
                    "partition %d of %s: broker %d fenced, leader %d at epoch %d, ISR %s",
                    partition.index, partition.topic, node_id, state.leader, state.leader_epoch, list(state.isr),
                )
        if changed:
            bump_versions([SnapshotKind.PARTITIONS])
    return changed


@dataclass(frozen=True)
class AlterPartitionResult:
    error_code: int
    isr: tuple[int, ...] = ()
    leader: int = -1
    leader_epoch: int = -1
    changed: bool = False


def alter_partition(qualified_topic: str, index: int, leader_id: int, leader_epoch: int, new_isr: Collection[int]) -> AlterPartitionResult:
    """Store the ISR a leader reports, when it is the current leader at the current epoch.

    FENCED_LEADER_EPOCH when it is not; INVALID_REQUEST when the ISR names a broker that is
    not a replica or leaves out the leader; UNKNOWN_TOPIC_OR_PARTITION for no such partition.
    """
    tenant_id, separator, name = qualified_topic.partition(TENANT_SEPARATOR)
    if not separator:
        return AlterPartitionResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    with transaction.atomic():
        partition = (
            Partition.objects.select_for_update()
            .select_related("topic")
            .filter(topic__tenant__public_id=tenant_id, topic__name=name, index=index)
            .first()
        )
        if partition is None:
            return AlterPartitionResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        current = _state(partition)
        if leader_id != current.leader or leader_epoch != current.leader_epoch:
            return AlterPartitionResult(ErrorCode.FENCED_LEADER_EPOCH, current.isr, current.leader, current.leader_epoch)
        isr = tuple(replica for replica in current.replicas if replica in set(new_isr))
        if len(isr) != len(set(new_isr)) or leader_id not in isr:
            return AlterPartitionResult(ErrorCode.INVALID_REQUEST, current.isr, current.leader, current.leader_epoch)
        if isr == current.isr:
            return AlterPartitionResult(ErrorCode.NO_ERROR, isr, current.leader, current.leader_epoch)
        _store(partition, PartitionState(current.replicas, isr, current.leader, current.leader_epoch))
        bump_versions([SnapshotKind.PARTITIONS])
    logger.info("partition %d of %s: ISR is now %s (leader %d, epoch %d)", index, qualified_topic, list(isr), leader_id, leader_epoch)
    return AlterPartitionResult(ErrorCode.NO_ERROR, isr, current.leader, current.leader_epoch, changed=True)
