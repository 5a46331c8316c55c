"""The controller's changes to the catalog, each in one transaction that bumps the PARTITIONS
snapshot version when it changes a partition (see ``webapp.provisioning.versions``).

Each transaction first checks the controller epoch (``epoch.controller_transaction``): a
controller that has been replaced gets ``ControllerFencedError`` and changes nothing.

Partition rows are locked (``select_for_update``) while they are read and rewritten, so that
an ``AlterPartition`` and a failover of the same partition apply one after the other.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from django.db.models import Q, QuerySet
from django.utils import timezone

from log_formats.topic_names import is_internal_topic_name, qualify, split_qualified_name  # brokers name a tenant's topic ``<tenant>~<name>``
from webapp.catalog.facade import Partition, Topic
from webapp.controller.election import (
    PartitionState,
    after_broker_failure,
    after_broker_return,
    after_controlled_shutdown,
    preferred_elections,
    requested_election,
)
from webapp.controller.epoch import controller_transaction, operator_transaction
from webapp.controller.registration import register_broker
from webapp.fleet.facade import BrokerNode, BrokerState
from webapp.provisioning.facade import SnapshotKind, bump_versions
from weir.errors import ErrorCode
from weir.topic_config import effective_topic_configs

logger = logging.getLogger(__name__)


def _state(partition: Partition) -> PartitionState:
    return PartitionState(tuple(partition.replicas), tuple(partition.isr), partition.leader, partition.leader_epoch)


def _unclean_allowed(partition: Partition) -> bool:
    return bool(effective_topic_configs(partition.topic.configs or {})["unclean.leader.election.enable"])


def _store(partition: Partition, state: PartitionState) -> None:
    partition.isr = list(state.isr)
    partition.leader = state.leader
    partition.leader_epoch = state.leader_epoch
    partition.save(update_fields=["isr", "leader", "leader_epoch"])


def mark_broker_online(node_id: int, host: str, port: int, rack: str, live: Collection[int], *, controller_epoch: int, kafka_port: int = 0) -> int:
    """Record broker ``node_id`` as registered and online; elect leaders of the offline
    partitions it can lead again. Returns how many partitions changed.

    Raises ``BrokerRegistrationError`` for an invalid description, ``ControllerFencedError``
    when ``controller_epoch`` is no longer current (nothing is written then). ``live``
    includes ``node_id``.
    """
    with controller_transaction(controller_epoch):
        register_broker(node_id, host, port, rack, kafka_port)
        BrokerNode.objects.filter(node_id=node_id).update(state=BrokerState.ONLINE, last_seen_at=timezone.now())
        changed = 0
        offline = Partition.objects.select_for_update().select_related("topic").filter(leader=-1).order_by("pk")
        for partition in offline:
            state = after_broker_return(_state(partition), node_id, live, unclean_allowed=_unclean_allowed(partition))
            if state is not None:
                _store(partition, state)
                changed += 1
                logger.info(
                    "partition %d of %s: broker %d is back, leader %d at epoch %d", partition.index, partition.topic, node_id, state.leader, state.leader_epoch
                )
        if changed:
            bump_versions([SnapshotKind.PARTITIONS])
    return changed


def fence_broker(node_id: int, live: Collection[int], *, controller_epoch: int) -> int:
    """Mark broker ``node_id`` offline and move its leaderships to live ISR members (offline
    partitions when there are none); drop it from every ISR. Returns how many partitions changed.

    Precondition: ``node_id`` is not in ``live``. Raises ``ControllerFencedError`` when
    ``controller_epoch`` is no longer current.
    """
    with controller_transaction(controller_epoch):
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
                    partition.index,
                    partition.topic,
                    node_id,
                    state.leader,
                    state.leader_epoch,
                    list(state.isr),
                )
        if changed:
            bump_versions([SnapshotKind.PARTITIONS])
    return changed


def _topic_of_qualified_name(qualified_topic: str) -> Q | None:
    """The partition filter of a broker's topic name: ``tenant~name`` is a tenant's topic, a
    plain ``__name`` an internal topic (no tenant); None for any other plain name."""
    tenant_id, name = split_qualified_name(qualified_topic)
    if tenant_id:
        return Q(topic__tenant__public_id=tenant_id, topic__name=name)
    if is_internal_topic_name(qualified_topic):
        return Q(topic__tenant__isnull=True, topic__name=qualified_topic)
    return None


@dataclass(frozen=True)
class AlterPartitionResult:
    error_code: int
    isr: tuple[int, ...] = ()
    leader: int = -1
    leader_epoch: int = -1
    changed: bool = False


def alter_partition(
    qualified_topic: str, index: int, leader_id: int, leader_epoch: int, new_isr: Collection[int], *, controller_epoch: int
) -> AlterPartitionResult:
    """Store the ISR a leader reports, when it is the current leader at the current epoch.

    FENCED_LEADER_EPOCH when it is not; INVALID_REQUEST when the ISR names a broker that is
    not a replica or leaves out the leader; UNKNOWN_TOPIC_OR_PARTITION for no such partition.
    Raises ``ControllerFencedError`` when ``controller_epoch`` is no longer current.
    """
    topic_filter = _topic_of_qualified_name(qualified_topic)
    if topic_filter is None:
        return AlterPartitionResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    with controller_transaction(controller_epoch):
        partition = Partition.objects.select_for_update().select_related("topic").filter(topic_filter, index=index).first()
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


def _locked_partitions_with_topics() -> QuerySet[Partition]:
    """Partition rows locked to commit, with their topic and tenant (to name the topic). Only
    the partition rows are locked: PostgreSQL cannot lock the nullable side of an outer join
    (internal topics have no tenant)."""
    return Partition.objects.select_for_update(of=("self",)).select_related("topic__tenant")


def qualified_topic_name(topic: Topic) -> str:
    """The name brokers know ``topic`` by: ``tenant~name``, or the plain name of an internal topic."""
    if topic.tenant_id is None:
        return topic.name
    return qualify(topic.tenant.public_id, topic.name)


@dataclass(frozen=True)
class PartitionRef:
    topic: str  # qualified, as brokers name it
    partition: int


@dataclass(frozen=True)
class ControlledShutdownOutcome:
    changed: int  # partitions whose leader or ISR changed
    remaining: tuple[PartitionRef, ...] = ()  # still led by the broker: no other live ISR member

    @property
    def complete(self) -> bool:
        return not self.remaining


def controlled_shutdown(node_id: int, live: Collection[int], *, controller_epoch: int) -> ControlledShutdownOutcome:
    """Move every leadership of broker ``node_id`` to another live ISR member and drop it from
    every ISR it can leave (``election.after_controlled_shutdown``); when it leads nothing any
    more, mark it STOPPED. Returns what changed and the partitions it still leads.

    Precondition: ``node_id`` is not in ``live``. Raises ``ControllerFencedError`` when
    ``controller_epoch`` is no longer current.
    """
    remaining: list[PartitionRef] = []
    # Led partitions without another live replica: nothing can take them over, waiting would
    # not help; they go offline with the broker (as a fence would do), as in Kafka.
    unmovable: list[Partition] = []
    with controller_transaction(controller_epoch):
        changed = 0
        # Every partition row is read, as in fence_broker: a shutdown is rare.
        for partition in _locked_partitions_with_topics().order_by("pk"):
            current = _state(partition)
            state = after_controlled_shutdown(current, node_id, live)
            if state is not None and state != current:
                _store(partition, state)
                changed += 1
                logger.info(
                    "partition %d of %s: broker %d is shutting down, leader %d at epoch %d, ISR %s",
                    partition.index,
                    partition.topic,
                    node_id,
                    state.leader,
                    state.leader_epoch,
                    list(state.isr),
                )
            if (state or current).leader == node_id:
                if any(replica != node_id and replica in live for replica in current.replicas):
                    # Another live replica may still catch up and join the ISR: the broker asks again.
                    remaining.append(PartitionRef(qualified_topic_name(partition.topic), partition.index))
                else:
                    unmovable.append(partition)
        if not remaining:
            for partition in unmovable:
                state = after_broker_failure(_state(partition), node_id, live, unclean_allowed=_unclean_allowed(partition))
                if state is not None:
                    _store(partition, state)
                    changed += 1
                    logger.warning("partition %d of %s: broker %d stopped and no other replica is alive: offline", partition.index, partition.topic, node_id)
            BrokerNode.objects.filter(node_id=node_id).update(state=BrokerState.STOPPED)
        if changed:
            bump_versions([SnapshotKind.PARTITIONS])
    return ControlledShutdownOutcome(changed, tuple(remaining))


class UnknownTopicError(LookupError):
    """No topic by the name given. Not retriable."""

    retriable = False


@dataclass(frozen=True)
class LeaderMove:
    topic: str  # qualified, as brokers name it
    partition: int
    previous_leader: int
    leader: int
    leader_epoch: int


def elect_preferred_leaders(
    live: Collection[int], *, controller_epoch: int | None, imbalance_percentage: float | None = None, topic: str | None = None
) -> list[LeaderMove]:
    """Give leadership back to each partition's preferred replica where it is alive and in the
    ISR (``election.preferred_elections``). Returns the moves, in partition order.

    ``imbalance_percentage``: only brokers whose share of non-preferred leaders is above it
    (the periodic rebalance); ``None``: every partition that can move. ``topic`` (qualified
    name) limits the election to one topic; ``UnknownTopicError`` when there is no such topic.
    ``controller_epoch``: the controller's epoch (``ControllerFencedError`` when superseded),
    or ``None`` for an operator's command, which waits for any controller transaction in
    flight and checks nothing.
    """
    topic_filter = Q() if topic is None else _topic_of_qualified_name(topic)
    if topic_filter is None:
        raise UnknownTopicError(f"no topic {topic!r}: expected tenant~name or an internal topic's name")
    with controller_transaction(controller_epoch) if controller_epoch is not None else operator_transaction():
        partitions = {partition.pk: partition for partition in _locked_partitions_with_topics().filter(topic_filter).order_by("pk")}
        if topic is not None and not partitions:
            raise UnknownTopicError(f"no topic {topic!r}")
        elected = preferred_elections({pk: _state(partition) for pk, partition in partitions.items()}, live, imbalance_percentage=imbalance_percentage)
        moves = []
        for pk in sorted(elected):
            partition, state = partitions[pk], elected[pk]
            moves.append(LeaderMove(qualified_topic_name(partition.topic), partition.index, partition.leader, state.leader, state.leader_epoch))
            _store(partition, state)
            logger.info("partition %d of %s: preferred leader %d elected at epoch %d", partition.index, partition.topic, state.leader, state.leader_epoch)
        if moves:
            bump_versions([SnapshotKind.PARTITIONS])
    return moves


@dataclass(frozen=True)
class ElectionOutcome:
    """One partition's answer to a tenant's election: Kafka's error code and why, and the move
    when its leader changed."""

    topic: str  # the tenant's plain name
    partition: int
    error_code: int
    message: str = ""
    move: LeaderMove | None = None


def elect_requested_leaders(
    tenant_id: str, requested: Sequence[tuple[str, int]] | None, live: Collection[int], *, unclean: bool, controller_epoch: int
) -> list[ElectionOutcome]:
    """A tenant's election (Kafka's ElectLeaders, ``election.requested_election``) of the
    partitions ``requested`` (plain topic name, index), or of every partition of its topics
    when ``None``. Only tenant ``tenant_id``'s topics are ever seen: another tenant's topic
    answers UNKNOWN_TOPIC_OR_PARTITION, like one that does not exist.

    One outcome per requested partition, in order (duplicates once); with ``None``, each
    partition whose election was needed, as Kafka leaves out ELECTION_NOT_NEEDED there.
    ``ControllerFencedError`` when ``controller_epoch`` is no longer current (nothing written).
    """
    wanted = None if requested is None else list(dict.fromkeys(requested))
    with controller_transaction(controller_epoch):
        rows = _locked_partitions_with_topics().filter(topic__tenant__public_id=tenant_id)
        if wanted is not None:
            rows = rows.filter(topic__name__in={name for name, _ in wanted})
        partitions = {(partition.topic.name, partition.index): partition for partition in rows.order_by("topic__name", "index")}
        outcomes = []
        for name, index in partitions if wanted is None else wanted:
            partition = partitions.get((name, index))
            if partition is None:
                outcomes.append(ElectionOutcome(name, index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{name} [{index}]: no such topic or partition"))
                continue
            decision = requested_election(_state(partition), live, unclean=unclean, unclean_allowed=_unclean_allowed(partition))
            if decision.state is None:
                if wanted is not None or decision.error_code != ErrorCode.ELECTION_NOT_NEEDED:
                    outcomes.append(ElectionOutcome(name, index, decision.error_code, f"{name} [{index}]: {decision.reason}"))
                continue
            move = LeaderMove(qualified_topic_name(partition.topic), index, partition.leader, decision.state.leader, decision.state.leader_epoch)
            _store(partition, decision.state)
            outcomes.append(ElectionOutcome(name, index, ErrorCode.NO_ERROR, move=move))
            logger.info(
                "partition %d of %s: %s election by its tenant elected leader %d at epoch %d",
                index,
                move.topic,
                "unclean" if unclean else "preferred",
                move.leader,
                move.leader_epoch,
            )
        if any(outcome.move is not None for outcome in outcomes):
            bump_versions([SnapshotKind.PARTITIONS])
    return outcomes
