"""The cluster's internal topics in the catalog: ``__consumer_offsets``, ``__transaction_state`` and ``__usage``.

They are Topic rows without a tenant, replicated like any topic, and managed by the
controller alone (no tenant can name, list or change them). :func:`ensure_internal_topics`
runs when a controller becomes active and after every broker registration:

* a missing internal topic is created with replication factor ``min(3, brokers not
  offline)`` and placed by the same placement code as tenants' topics;
* when more brokers are available than a partition has replicas (below the target of 3),
  new replicas are appended to its replica list. They are not in the ISR: they fetch from
  the leader, which adds them once they have caught up (AlterPartition). The leader and its
  epoch do not change, replica lists never shrink and partition counts never change (a
  group's coordinator is the partition ``hash(group) % count``, a transactional id's that
  of ``hash(id) % count``).

``__transaction_state`` is configured as Kafka configures it and as ``__consumer_offsets`` is
here: compacted, the same segment size and min.insync.replicas. Partition counts come from
settings (``WEIR_OFFSETS_TOPIC_NUM_PARTITIONS``, ``WEIR_TRANSACTION_STATE_TOPIC_NUM_PARTITIONS``
like Kafka's transaction.state.log.num.partitions, ``WEIR_USAGE_TOPIC_NUM_PARTITIONS``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from webapp.catalog.facade import Partition, Topic
from webapp.controller.epoch import controller_transaction
from webapp.fleet.facade import REPLICATION_TARGET, PlacementBroker, placement_candidates, placement_order
from webapp.provisioning.facade import SnapshotKind, bump_versions, place_partitions

logger = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"  # committed offsets (broker_nodes.coordinator)
TRANSACTION_STATE_TOPIC = "__transaction_state"  # transaction states (broker_nodes.coordinator.transactions)
USAGE_TOPIC = "__usage"  # usage records of the metering pipeline
OFFSETS_SEGMENT_BYTES = 104857600  # Kafka's offsets.topic.segment.bytes
USAGE_RETENTION_MS = 7 * 24 * 60 * 60 * 1000  # a week of usage records


@dataclass(frozen=True)
class InternalTopic:
    """What one internal topic should be: its name, partition count and config overrides."""

    name: str
    partitions: int
    configs: Mapping[str, str]


@dataclass(frozen=True)
class InternalTopicsChange:
    """What :func:`ensure_internal_topics` did: topics created, partitions given new replicas."""

    created: tuple[str, ...] = ()
    grown_partitions: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.created) or self.grown_partitions > 0


def _partition_count_setting(name: str) -> int:
    value = getattr(settings, name)
    if not isinstance(value, int) or value < 1:
        raise ImproperlyConfigured(f"{name} must be a whole number of partitions, at least 1 (it is {value!r})")
    return value


def internal_topics() -> tuple[InternalTopic, ...]:
    """The internal topics of this deployment. Raises ImproperlyConfigured for a bad count."""
    return (
        InternalTopic(
            OFFSETS_TOPIC,
            _partition_count_setting("WEIR_OFFSETS_TOPIC_NUM_PARTITIONS"),
            {"cleanup.policy": "compact", "segment.bytes": str(OFFSETS_SEGMENT_BYTES)},
        ),
        InternalTopic(
            TRANSACTION_STATE_TOPIC,
            _partition_count_setting("WEIR_TRANSACTION_STATE_TOPIC_NUM_PARTITIONS"),
            {"cleanup.policy": "compact", "segment.bytes": str(OFFSETS_SEGMENT_BYTES)},
        ),
        InternalTopic(
            USAGE_TOPIC,
            _partition_count_setting("WEIR_USAGE_TOPIC_NUM_PARTITIONS"),
            {"cleanup.policy": "delete", "retention.ms": str(USAGE_RETENTION_MS)},
        ),
    )


def target_replication_factor(available_brokers: int) -> int:
    """Replicas each internal partition should have with ``available_brokers`` brokers."""
    return min(REPLICATION_TARGET, available_brokers)


def grown_replicas(replicas: Sequence[int], brokers: list[PlacementBroker], target: int, partition_index: int) -> list[int]:
    """``replicas`` with brokers appended until there are ``target`` of them (pure).

    The candidates are the brokers not yet replicas, in placement order, rotated by the
    partition index so that consecutive partitions take different brokers. When every broker
    has a rack, a candidate on a rack the partition does not use yet is preferred. Never
    removes or reorders a replica; returns ``replicas`` unchanged when it has ``target`` or more.
    """
    grown = list(replicas)
    candidates = [broker for broker in placement_order(brokers) if broker.node_id not in grown]
    if len(grown) >= target or not candidates:
        return grown
    shift = partition_index % len(candidates)
    candidates = candidates[shift:] + candidates[:shift]
    rack_aware = all(broker.rack for broker in brokers)
    rack_of = {broker.node_id: broker.rack for broker in brokers}
    while len(grown) < target and candidates:
        used_racks = {rack_of.get(node_id) for node_id in grown}
        chosen = candidates[0]
        if rack_aware:
            chosen = next((broker for broker in candidates if broker.rack not in used_racks), chosen)
        grown.append(chosen.node_id)
        candidates.remove(chosen)
    return grown


def ensure_internal_topics(*, controller_epoch: int) -> InternalTopicsChange:
    """Create the missing internal topics and grow replica lists up to the target (see the
    module docstring), in one controller transaction that bumps the PARTITIONS snapshot
    version when anything changed. Does nothing while no broker is available. The caller
    pushes the new cluster map when the result says ``changed``.

    Raises ``ControllerFencedError`` (nothing written) when ``controller_epoch`` is no longer
    current, ImproperlyConfigured for a bad partition count setting.
    """
    wanted = internal_topics()
    with controller_transaction(controller_epoch):
        brokers = placement_candidates()
        if not brokers:
            return InternalTopicsChange()
        target = target_replication_factor(len(brokers))
        existing = {topic.name: topic for topic in Topic.objects.select_for_update().filter(tenant__isnull=True, name__in=[spec.name for spec in wanted])}
        created = []
        for spec in wanted:
            if spec.name not in existing:
                topic = Topic.objects.create(
                    tenant=None, name=spec.name, partition_count=spec.partitions, replication_factor=target, configs=dict(spec.configs)
                )
                place_partitions(topic, 0, spec.partitions)
                created.append(spec.name)
                logger.info("internal topic %s created: %d partitions, replication factor %d", spec.name, spec.partitions, target)
        grown = _grow_replicas(list(existing.values()), brokers, target)
        change = InternalTopicsChange(tuple(created), grown)
        if change.changed:
            bump_versions([SnapshotKind.PARTITIONS])
    return change


def _grow_replicas(topics: list[Topic], brokers: list[PlacementBroker], target: int) -> int:
    grown_partitions = 0
    for topic in topics:
        changed = []
        for partition in Partition.objects.select_for_update().filter(topic=topic).order_by("index"):
            replicas = grown_replicas(partition.replicas, brokers, target, partition.index)
            if replicas != list(partition.replicas):
                # The first broker to register got every partition at RF 1: rotate the grown
                # list so that preferred leaders (and with them group coordinators) spread over
                # the brokers; the preferred election moves leadership once they are in the ISR.
                shift = partition.index % len(replicas)
                partition.replicas = replicas[shift:] + replicas[:shift]
                # A new epoch carries the new replica list to the leader (see election's rule).
                partition.leader_epoch += 1
                changed.append(partition)
        grown_in_topic = len(changed)
        if changed:
            Partition.objects.bulk_update(changed, ["replicas", "leader_epoch"])
            Topic.objects.filter(pk=topic.pk, replication_factor__lt=target).update(replication_factor=target)
            logger.info("internal topic %s: %d partitions given new replicas (target %d)", topic.name, grown_in_topic, target)
        grown_partitions += grown_in_topic
    return grown_partitions
