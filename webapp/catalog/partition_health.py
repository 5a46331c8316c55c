"""How healthy partitions are, from the Partition rows the controller keeps: offline,
under-replicated, below min.insync.replicas; and how many of them each broker leads and hosts.

The rules are Kafka's (``kafka-topics --describe``, TopicCommand's PartitionDescription):

* offline: the partition has no leader (``leader == -1``: no ISR member was alive to elect);
* under-replicated: its ISR is smaller than its replica list (an offline partition whose ISR
  still names its last leader counts too);
* below min ISR: offline, or its ISR is smaller than the topic's effective
  ``min.insync.replicas`` (acks=all produce requests fail with NOT_ENOUGH_REPLICAS).

Only database rows are read, never the brokers: a page or an API call shows a failover as
soon as the controller has written it, and costs a fixed number of queries whatever the
partition count. The counts overlap (a partition may be both offline and under-replicated),
as Kafka's do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.db.models import F, Func, IntegerField, QuerySet

from webapp.accounts.facade import Tenant
from webapp.catalog.models import Partition, Topic
from weir.topic_config import TOPIC_CONFIGS

NO_LEADER = -1  # Partition.leader of a partition without a leader

MIN_INSYNC_REPLICAS = "min.insync.replicas"

# A partition's state, most severe first; the names double as CSS classes in the dashboard.
OFFLINE = "offline"
UNDER_MIN_ISR = "under-min-isr"
UNDER_REPLICATED = "under-replicated"
OK = "ok"

STATE_LABELS = {OFFLINE: "offline", UNDER_MIN_ISR: "below min ISR", UNDER_REPLICATED: "under-replicated", OK: "ok"}


@dataclass(frozen=True)
class PartitionHealth:
    """The three flags of one partition; ``state`` is the most severe one that holds."""

    is_offline: bool
    is_under_replicated: bool
    is_under_min_isr: bool

    @property
    def state(self) -> str:
        if self.is_offline:
            return OFFLINE
        if self.is_under_min_isr:
            return UNDER_MIN_ISR
        if self.is_under_replicated:
            return UNDER_REPLICATED
        return OK

    @property
    def label(self) -> str:
        return STATE_LABELS[self.state]


def partition_health(leader: int, replicas: Sequence[int], isr: Sequence[int], min_insync_replicas: int) -> PartitionHealth:
    """The health of a partition led by ``leader`` (-1: none) with these replicas and ISR."""
    return partition_health_of_sizes(leader, len(replicas), len(isr), min_insync_replicas)


def partition_health_of_sizes(leader: int, replica_count: int, isr_size: int, min_insync_replicas: int) -> PartitionHealth:
    """:func:`partition_health` from the sizes of the replica list and the ISR, which is all it reads."""
    is_offline = leader < 0
    return PartitionHealth(
        is_offline=is_offline,
        is_under_replicated=isr_size < replica_count,
        is_under_min_isr=is_offline or isr_size < min_insync_replicas,
    )


class JSONArrayLength(Func):
    """The length of a JSON array column, computed by the database (``jsonb_array_length`` on
    PostgreSQL, ``json_array_length`` on SQLite): counting needs no decoded list in Python."""

    function = "JSON_ARRAY_LENGTH"
    output_field = IntegerField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        return super().as_sql(compiler, connection, function="JSONB_ARRAY_LENGTH", **extra_context)


def min_insync_replicas(configs: Mapping[str, str]) -> int:
    """The effective ``min.insync.replicas`` of a topic with these overrides (else the default).

    Overrides are validated when stored (``webapp.catalog.actions.topics``), so parsing
    cannot fail here.
    """
    key = TOPIC_CONFIGS[MIN_INSYNC_REPLICAS]
    return int(key.parse(configs.get(MIN_INSYNC_REPLICAS, key.default)))  # type: ignore[arg-type]


@dataclass
class HealthCounts:
    """How many partitions there are and how many are in each unhealthy condition."""

    partitions: int = 0
    under_replicated: int = 0
    under_min_isr: int = 0
    offline: int = 0

    def add(self, health: PartitionHealth) -> None:
        self.partitions += 1
        self.under_replicated += health.is_under_replicated
        self.under_min_isr += health.is_under_min_isr
        self.offline += health.is_offline

    @property
    def healthy(self) -> bool:
        return not (self.under_replicated or self.under_min_isr or self.offline)


def topic_partition_health(topic: Topic) -> list[tuple[Partition, PartitionHealth]]:
    """Each partition of ``topic`` in index order with its health.

    Reads ``topic.partitions.all()``: prefetch ``partitions`` when doing this for many topics
    (one query for all of them).
    """
    minimum = min_insync_replicas(topic.configs)
    partitions = sorted(topic.partitions.all(), key=lambda partition: partition.index)
    return [(partition, partition_health(partition.leader, partition.replicas, partition.isr, minimum)) for partition in partitions]


def topic_health_counts(topic: Topic) -> HealthCounts:
    """The counts over ``topic``'s partitions (see :func:`topic_partition_health` on queries)."""
    counts = HealthCounts()
    for _, health in topic_partition_health(topic):
        counts.add(health)
    return counts


class TopicKeyAndConfigs(Protocol):
    """What :func:`health_counts_by_topic` reads of a topic: a Topic, or a row with these columns."""

    @property
    def pk(self) -> Any: ...
    @property
    def configs(self) -> Mapping[str, Any]: ...


def health_counts_by_topic(topics: Sequence[TopicKeyAndConfigs]) -> dict[int, HealthCounts]:
    """The counts of each of ``topics`` by primary key, from one query over their partitions.

    The rows are read as tuples of the leader and the sizes of the replica list and the ISR (the
    database counts them), not Partition instances: for a page of 50 topics, building an instance
    per partition (and prefetching them onto each topic) cost more CPU than the rest of the page,
    and decoding two JSON lists per partition only to count them was the next largest cost. A
    topic without partitions counts zero of each.
    """
    counts = {topic.pk: HealthCounts() for topic in topics}
    minimum_by_topic = {topic.pk: min_insync_replicas(topic.configs) for topic in topics}
    rows = (
        Partition.objects.filter(topic_id__in=list(counts))
        .order_by()
        .annotate(replica_count=JSONArrayLength("replicas"), isr_size=JSONArrayLength("isr"))
        .values_list("topic_id", "leader", "replica_count", "isr_size")
    )
    for topic_id, leader, replica_count, isr_size in rows:
        counts[topic_id].add(partition_health_of_sizes(leader, replica_count, isr_size, minimum_by_topic[topic_id]))
    return counts


def topic_row_with_health_counts(topics: QuerySet[Topic], fields: Sequence[str]) -> tuple[Any, HealthCounts] | None:
    """The topic ``topics`` holds (narrowed to one, e.g. by tenant and name) as a row of ``fields``
    (``values_list(named=True)``; they must include ``pk`` and ``configs``) and its partitions'
    counts, from one query: a row per partition joined to its topic, or a row without partition
    columns for a topic that has none. None when ``topics`` holds no topic.

    One query instead of the topic's and then its partitions': each query costs a GET of one
    topic about as much CPU as everything else it does.
    """
    rows = list(
        topics.annotate(
            partition_leader=F("partitions__leader"),
            partition_replica_count=JSONArrayLength("partitions__replicas"),
            partition_isr_size=JSONArrayLength("partitions__isr"),
        )
        .order_by()
        .values_list(*fields, "partition_leader", "partition_replica_count", "partition_isr_size", named=True)
    )
    if not rows:
        return None
    topic = rows[0]
    if any(row.pk != topic.pk for row in rows):
        raise Topic.MultipleObjectsReturned("topic_row_with_health_counts needs a queryset of at most one topic")
    counts = HealthCounts()
    minimum = min_insync_replicas(topic.configs)
    for row in rows:
        if row.partition_leader is not None:
            counts.add(partition_health_of_sizes(row.partition_leader, row.partition_replica_count, row.partition_isr_size, minimum))
    return topic, counts


def tenant_health_counts(tenant: Tenant) -> HealthCounts:
    """The counts over every partition of ``tenant``'s topics, in one query."""
    counts = HealthCounts()
    minimum_by_topic: dict[int, int] = {}
    rows = Partition.objects.filter(topic__tenant=tenant).values_list("topic_id", "topic__configs", "leader", "replicas", "isr")
    for topic_id, configs, leader, replicas, isr in rows.iterator():
        if topic_id not in minimum_by_topic:
            minimum_by_topic[topic_id] = min_insync_replicas(configs)
        counts.add(partition_health(leader, replicas, isr, minimum_by_topic[topic_id]))
    return counts


@dataclass
class BrokerPartitionCounts:
    """How many of the counted partitions a broker leads, and how many it holds a replica of."""

    leader: int = 0
    replicas: int = 0


def broker_partition_counts(tenant: Tenant | None) -> dict[int, BrokerPartitionCounts]:
    """Per broker node id, the partitions of ``tenant``'s topics it leads and hosts (one query).

    ``tenant=None`` counts every partition, internal topics included: the operators' view.
    Brokers that host none of them are absent. Only counts leave this function, never topic
    names, so it may describe shared brokers to any tenant.
    """
    partitions = Partition.objects.all() if tenant is None else Partition.objects.filter(topic__tenant=tenant)
    counts: dict[int, BrokerPartitionCounts] = {}
    for leader, replicas in partitions.values_list("leader", "replicas").iterator():
        for broker_id in replicas:
            counts.setdefault(broker_id, BrokerPartitionCounts()).replicas += 1
        if leader != NO_LEADER:
            counts.setdefault(leader, BrokerPartitionCounts()).leader += 1
    return counts


def replica_states(leader: int, replicas: Iterable[int], isr: Iterable[int]) -> list[tuple[int, bool, bool]]:
    """``(broker_id, is_leader, is_in_sync)`` for each replica, the preferred leader first."""
    in_sync = set(isr)
    return [(broker_id, broker_id == leader, broker_id in in_sync) for broker_id in replicas]
