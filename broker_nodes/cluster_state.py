"""The managed-mode cluster map: brokers and every tenant's partition assignment, from the control plane.

A broker starts standalone (issue 2): it owns its topics and leads every partition. The
first ``ApplyPartitions`` snapshot makes it managed: from then on the control plane decides
which topics exist, which broker replicates and leads each partition, and with which leader
epoch; this map answers Metadata for the whole cluster and tells Produce and Fetch whether
this broker leads a partition.

On disk: ``<data_dir>/cluster-state.json`` = ``{"format": 1, "snapshot": ClusterSnapshot.to_json()}``,
replaced atomically. The map is stored before the topic registry and the logs follow it,
and at every start the broker makes them follow the stored map again, so a crash in
between is repaired (see :class:`ClusterState`).

Topic names in the map are qualified (``tenant~name``, see ``broker_nodes.names``). Internal
topics (``__consumer_offsets``, ``__usage``) are part of the map too, replicated like any
topic: they come without a tenant and keep their plain name, and only names starting with
``__`` may come without a tenant. A managed broker holds exactly the map's topics; only a
standalone broker creates internal topics itself.

A partition the broker cannot host (its directory cannot be created: a name too long for the
file system, a file in the way, a disk fault) must not stop the rest of the map: every other
partition is applied, and the ones that failed are kept here (:meth:`ClusterState.record_failures`)
for ApplyPartitions and DescribeState to report. Each is tried again at every push, and
logged once when it starts failing and once when it stops, never at every push.

Thread-safety: the current snapshot and the failed partitions are immutable values replaced by
one reference assignment; readers never lock. Writers (``store``, ``record_failures``) are
serialized by the caller (the broker applies snapshots under one lock).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from broker_nodes import names
from broker_nodes.storage.atomic_files import write_atomically
from broker_nodes.topic_registry import TopicMetadata, compact_json, is_internal_topic_name
from grpc_protos.weir.v1 import admin_pb2
from log_formats.topic_names import INTERNAL_TOPIC_PREFIX
from weir.topic_config import InvalidConfigError, validate_topic_configs

CLUSTER_STATE_FILE_NAME = "cluster-state.json"  # in the data directory, next to topics.json
CLUSTER_STATE_FORMAT = 1  # the "format" field of cluster-state.json
NO_LEADER = -1  # leader_id of a partition without a leader, as in Kafka's metadata

logger = logging.getLogger(__name__)


class StaleSnapshotError(Exception):
    """A snapshot older than the one applied (gRPC FAILED_PRECONDITION): a delayed push must never roll back."""

    retriable = False

    def __init__(self, kind: str, version: int, applied_version: int) -> None:
        super().__init__(f"{kind} snapshot version {version} is older than the applied version {applied_version}")
        self.kind = kind
        self.version = version
        self.applied_version = applied_version


class InvalidSnapshotError(ValueError):
    """A snapshot that contradicts itself (gRPC INVALID_ARGUMENT); nothing of it is applied."""

    retriable = False

    def __init__(self, reason: str) -> None:
        super().__init__(f"invalid snapshot: {reason}")
        self.reason = reason


class NotLeaderOrFollowerError(Exception):
    """This broker does not lead the partition (NOT_LEADER_OR_FOLLOWER): the client refreshes metadata."""

    retriable = True

    def __init__(self, topic: str, partition: int, leader_id: int) -> None:
        super().__init__(f"this broker is not the leader of partition {partition} of topic {names.plain(topic)!r} (the leader is broker {leader_id})")
        self.topic = topic
        self.partition = partition
        self.leader_id = leader_id


@dataclass(frozen=True, slots=True)
class PartitionAssignment:
    partition: int
    leader_id: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "partition": self.partition,
            "leader_id": self.leader_id,
            "leader_epoch": self.leader_epoch,
            "replicas": list(self.replicas),
            "isr": list(self.isr),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PartitionAssignment:
        """From its entry in cluster-state.json as json.load decodes it (values of any JSON type)."""
        return cls(int(data["partition"]), int(data["leader_id"]), int(data["leader_epoch"]), tuple(data["replicas"]), tuple(data["isr"]))


@dataclass(frozen=True, slots=True)
class ManagedTopic:
    """One topic of the map. ``partitions[i].partition == i`` for every i (checked on parse)."""

    tenant_id: str
    name: str  # plain, as the tenant knows it
    topic_id: str
    configs: Mapping[str, str]  # overrides only
    partitions: tuple[PartitionAssignment, ...]

    @property
    def qualified_name(self) -> str:
        return names.qualify(self.tenant_id, self.name)

    @property
    def internal(self) -> bool:
        """An internal topic of the cluster (``__consumer_offsets``...): the only topics without a tenant."""
        return not self.tenant_id

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0

    def to_json(self) -> dict[str, object]:
        return {
            "tenant_id": self.tenant_id,
            "name": self.name,
            "topic_id": self.topic_id,
            "configs": dict(self.configs),
            "partitions": [partition.to_json() for partition in self.partitions],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ManagedTopic:
        """From its entry in cluster-state.json as json.load decodes it."""
        return cls(
            tenant_id=str(data["tenant_id"]),
            name=str(data["name"]),
            topic_id=str(data["topic_id"]),
            configs=MappingProxyType({str(key): str(value) for key, value in dict(data["configs"]).items()}),
            partitions=tuple(PartitionAssignment.from_json(entry) for entry in data["partitions"]),
        )


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    node_id: int
    host: str
    port: int
    rack: str = ""
    kafka_port: int = 0  # the broker's Kafka-protocol listener (same host); 0 when it has none


@dataclass(frozen=True, slots=True)
class _ParsedTopic:
    """One topic entry of an ``ApplyPartitions`` request as parsed and checked, with the forms the
    broker derives from it (its registry entry, its cluster-state.json entry). The controller
    pushes the whole map at every change, so the next request carries nearly every entry again
    byte for byte: those reuse this instead of being parsed, checked and derived again."""

    topic: ManagedTopic
    metadata: TopicMetadata
    document: dict[str, object]
    text: str  # ``document`` as cluster-state.json holds it (compact JSON, keys sorted)

    @classmethod
    def of(cls, qualified: str, topic: ManagedTopic) -> _ParsedTopic:
        metadata = TopicMetadata(
            name=qualified,
            topic_id=topic.topic_id,
            partitions=len(topic.partitions),
            replication_factor=topic.replication_factor,
            configs=MappingProxyType(dict(topic.configs)),
            internal=topic.internal,
        )
        document = topic.to_json()
        return cls(topic, metadata, document, compact_json(document))


@dataclass(frozen=True)
class ClusterSnapshot:
    """One applied ``ApplyPartitions`` request: immutable, topics keyed by qualified name.

    ``parsed`` holds, by the serialized bytes of each topic entry of the request it was parsed
    from, the parsed topic and its derived forms (empty for a snapshot built otherwise); it is
    no part of the map's value (not compared) and only saves work.
    """

    version: int
    cluster_id: str
    brokers: tuple[BrokerEndpoint, ...]
    topics: Mapping[str, ManagedTopic] = field(default_factory=lambda: MappingProxyType({}))
    parsed: Mapping[bytes, _ParsedTopic] = field(default_factory=lambda: MappingProxyType({}), compare=False, repr=False)

    @classmethod
    def from_request(cls, request: admin_pb2.ApplyPartitionsRequest, previous: ClusterSnapshot | None = None) -> ClusterSnapshot:
        """Parse and check a request; InvalidSnapshotError names the first contradiction.

        A topic entry identical, byte for byte, to one of ``previous`` (the map applied before, when
        it was parsed from a request) is the same topic: its parsed form is reused, and only the
        checks across entries (names and topic ids unique) run again for it.
        """
        if request.version < 1:
            raise InvalidSnapshotError(f"version must be 1 or more, not {request.version}")
        brokers = tuple(BrokerEndpoint(node.node_id, node.host, node.port, node.rack, node.kafka_port) for node in request.brokers)
        if len({broker.node_id for broker in brokers}) != len(brokers):
            raise InvalidSnapshotError("a broker node id occurs more than once")
        known = previous.parsed if previous is not None else {}
        topics: dict[str, ManagedTopic] = {}
        topic_ids: set[str] = set()
        parsed: dict[bytes, _ParsedTopic] = {}
        for entry in request.topics:
            serialized = entry.SerializeToString()
            reused = known.get(serialized)
            if reused is None:
                reused = _ParsedTopic.of(*_parse_topic(entry))
            topic = reused.topic
            qualified = reused.metadata.name
            if qualified in topics:
                raise InvalidSnapshotError(f"topic {topic.name!r} of tenant {topic.tenant_id!r} occurs more than once")
            if topic.topic_id in topic_ids:
                raise InvalidSnapshotError(f"topic {topic.name!r} has an empty or repeated topic id {topic.topic_id!r}")
            topics[qualified] = topic
            topic_ids.add(topic.topic_id)
            parsed[serialized] = reused
        return cls(request.version, request.cluster_id, brokers, MappingProxyType(topics), MappingProxyType(parsed))

    @functools.cached_property
    def _derived_by_name(self) -> Mapping[str, _ParsedTopic]:
        derived = {item.metadata.name: item for item in self.parsed.values()}
        return MappingProxyType({qualified: derived.get(qualified) or _ParsedTopic.of(qualified, topic) for qualified, topic in self.topics.items()})

    def _derived(self) -> Mapping[str, _ParsedTopic]:
        """Each topic's derived forms by qualified name: the parsed ones, the others computed at
        the first call (an applied map asks twice: for the registry and for cluster-state.json)."""
        return self._derived_by_name

    def changed_topics(self, previous: ClusterSnapshot) -> set[str]:
        """Qualified names of the topics that differ between ``previous`` and this map: added,
        removed, or changed in any way (topic id, configs, replicas, leaders, ISR, epochs)."""
        changed = {name for name in previous.topics if name not in self.topics}
        for name, topic in self.topics.items():
            before = previous.topics.get(name)
            # A topic reused from the previous request is the same object: no comparison needed.
            if before is not topic and before != topic:
                changed.add(name)
        return changed

    def topic_metadata(self) -> list[TopicMetadata]:
        """The map's topics as the topic registry keeps them (qualified names), sorted by name."""
        derived = self._derived()
        return [derived[qualified].metadata for qualified in sorted(derived)]

    def broker(self, node_id: int) -> BrokerEndpoint | None:
        """The endpoint of broker ``node_id``; None when the map does not list it."""
        return next((broker for broker in self.brokers if broker.node_id == node_id), None)

    def led_partitions(self, topic: str, node_id: int) -> dict[int, int]:
        """partition -> leader epoch of every partition of ``topic`` that broker ``node_id`` leads (empty when the topic is not in the map)."""
        managed_topic = self.topics.get(topic)
        if managed_topic is None:
            return {}
        return {assignment.partition: assignment.leader_epoch for assignment in managed_topic.partitions if assignment.leader_id == node_id}

    def to_json(self, *, topics: bool = True) -> dict[str, object]:
        """The map as cluster-state.json keeps it (the topics' entries may be shared with other
        snapshots' documents: read, never change them); ``topics=False`` leaves the topics out."""
        document: dict[str, object] = {
            "version": self.version,
            "cluster_id": self.cluster_id,
            "brokers": [
                {"node_id": broker.node_id, "host": broker.host, "port": broker.port, "rack": broker.rack, "kafka_port": broker.kafka_port}
                for broker in self.brokers
            ],
        }
        if topics:
            derived = self._derived()
            document["topics"] = [derived[qualified].document for qualified in sorted(derived)]
        return document

    def to_json_text(self) -> str:
        """:meth:`to_json` as compact JSON with sorted keys, each topic's part serialized once per
        parsed entry (a push of a thousand topics adds one: the others' text is reused)."""
        derived = self._derived()
        topics = ",".join(derived[qualified].text for qualified in sorted(derived))
        # Sorted, the keys are brokers, cluster_id, topics, version: the topics go before the last one.
        head = compact_json(self.to_json(topics=False))
        version = f',"version":{self.version}}}'
        return f'{head.removesuffix(version)},"topics":[{topics}]{version}'

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClusterSnapshot:
        """From the snapshot in cluster-state.json as json.load decodes it."""
        brokers = tuple(
            BrokerEndpoint(int(item["node_id"]), str(item["host"]), int(item["port"]), str(item.get("rack", "")), int(item.get("kafka_port", 0)))
            for item in data["brokers"]
        )
        topics = (ManagedTopic.from_json(item) for item in data["topics"])
        return cls(int(data["version"]), str(data["cluster_id"]), brokers, MappingProxyType({topic.qualified_name: topic for topic in topics}))


def _parse_topic(entry: admin_pb2.TopicAssignment) -> tuple[str, ManagedTopic]:
    """(qualified name, topic) of one topic entry of a request, checked on its own; the checks
    across entries are the caller's."""
    if not entry.name or names.TENANT_SEPARATOR in entry.name or names.TENANT_SEPARATOR in entry.tenant_id:
        raise InvalidSnapshotError(f"topic name {entry.name!r} of tenant {entry.tenant_id!r} is empty or contains {names.TENANT_SEPARATOR!r}")
    if not entry.tenant_id and not is_internal_topic_name(entry.name):
        raise InvalidSnapshotError(f"topic {entry.name!r} has no tenant id; only internal topics (names starting with {INTERNAL_TOPIC_PREFIX!r}) may have none")
    if entry.tenant_id and is_internal_topic_name(entry.name):
        raise InvalidSnapshotError(
            f"topic {entry.name!r} of tenant {entry.tenant_id!r}: names starting with {INTERNAL_TOPIC_PREFIX!r} are reserved for internal topics"
        )
    partitions = tuple(
        PartitionAssignment(item.partition, item.leader_id, item.leader_epoch, tuple(item.replicas), tuple(item.isr))
        for item in sorted(entry.partitions, key=lambda item: item.partition)
    )
    if not partitions or [item.partition for item in partitions] != list(range(len(partitions))):
        raise InvalidSnapshotError(f"topic {entry.name!r} must have partitions numbered 0..n-1")
    if not entry.topic_id:
        raise InvalidSnapshotError(f"topic {entry.name!r} has an empty or repeated topic id {entry.topic_id!r}")
    try:
        validate_topic_configs({config.name: config.value for config in entry.configs})
    except InvalidConfigError as error:
        raise InvalidSnapshotError(f"topic {entry.name!r} of tenant {entry.tenant_id!r}: {error}") from None
    topic = ManagedTopic(
        entry.tenant_id,
        entry.name,
        entry.topic_id,
        MappingProxyType({config.name: config.value for config in entry.configs}),
        partitions,
    )
    return topic.qualified_name, topic


@dataclass(frozen=True, slots=True)
class PartitionFailure:
    """A partition of the map this broker should host but could not apply, and the typed error
    why (LogDirectoryError, PartitionDirectoryNameTooLongError...; ``broker_nodes.server.errors``
    gives its Kafka code). ``topic`` is qualified."""

    topic: str
    partition: int
    topic_id: str
    error: Exception

    @property
    def retriable(self) -> bool:
        return bool(getattr(self.error, "retriable", False))


class ClusterState:
    """The applied cluster map of one broker (None while standalone). See the module docstring.

    Applying a snapshot stores the map first and then makes the registry and logs follow;
    at startup the broker makes them follow the stored map again, which repairs a crash in
    between (applying a map twice changes nothing the second time).
    """

    def __init__(self, data_dir: Path, node_id: int) -> None:
        self._path = Path(data_dir) / CLUSTER_STATE_FILE_NAME
        self._node_id = node_id
        self._snapshot: ClusterSnapshot | None = None
        self._failures: Mapping[tuple[str, int], PartitionFailure] = MappingProxyType({})

    @property
    def snapshot(self) -> ClusterSnapshot | None:
        return self._snapshot

    @property
    def failed_partitions(self) -> tuple[PartitionFailure, ...]:
        """The partitions the last apply could not host, by topic and partition."""
        return tuple(failure for _, failure in sorted(self._failures.items()))

    def record_failures(self, failures: list[PartitionFailure]) -> None:
        """Make ``failures`` the partitions that could not be applied, logging the changes only.

        A partition is logged when it starts failing or fails for another reason than before,
        and when it no longer fails (hosted now, or gone from the map); a map pushed every
        second with the same bad partition logs nothing more.
        """
        previous = self._failures
        current = {(failure.topic, failure.partition): failure for failure in failures}
        for key, failure in sorted(current.items()):
            known = previous.get(key)
            if known is None or str(known.error) != str(failure.error):
                logger.error(
                    "partition %d of topic %s cannot be hosted on this broker: %s (every other partition of the map is applied; this one is tried again at each push)",
                    failure.partition,
                    failure.topic,
                    failure.error,
                )
        for key in sorted(previous.keys() - current.keys()):
            logger.info("partition %d of topic %s no longer fails to apply", key[1], key[0])
        self._failures = MappingProxyType(current)

    @property
    def managed(self) -> bool:
        return self._snapshot is not None

    @property
    def version(self) -> int:
        """The applied version; 0 while standalone."""
        snapshot = self._snapshot
        return snapshot.version if snapshot is not None else 0

    def load(self) -> ClusterSnapshot | None:
        """Read cluster-state.json (absent: standalone)."""
        try:
            document = json.loads(self._path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        if document.get("format") != CLUSTER_STATE_FORMAT:
            raise ValueError(f"{self._path}: unsupported format {document.get('format')!r}")
        self._snapshot = ClusterSnapshot.from_json(document["snapshot"])
        return self._snapshot

    def check_not_stale(self, version: int) -> None:
        if version < self.version:
            raise StaleSnapshotError("partitions", version, self.version)

    def store(self, snapshot: ClusterSnapshot, *, sync_directory: bool = True) -> None:
        """Persist ``snapshot`` and make it the current map.

        ``sync_directory=False``: the file is written and fsynced but its rename is durable only
        once the caller fsyncs the data directory (a power loss before that leaves the previous
        map, whole); the broker does it once per applied map for this file, topics.json and the
        new partition directories.
        """
        text = f'{{"format":{CLUSTER_STATE_FORMAT},"snapshot":{snapshot.to_json_text()}}}'
        write_atomically(self._path, text.encode("utf-8"), sync_directory=sync_directory)
        self._snapshot = snapshot

    def hosts(self, topic: str, partition: int) -> bool:
        """Whether this broker keeps a log of the partition: a replica in the map, or any partition while standalone."""
        snapshot = self._snapshot
        managed_topic = snapshot.topics.get(topic) if snapshot is not None else None
        if managed_topic is None:
            return True
        return partition < len(managed_topic.partitions) and self._node_id in managed_topic.partitions[partition].replicas

    def leader_epoch(self, topic: str, partition: int, standalone_epoch: int) -> int:
        """The leader epoch this broker leads the partition with; NotLeaderOrFollowerError when it does not.

        Topics outside the map (every topic while standalone) are led here with ``standalone_epoch``.
        """
        snapshot = self._snapshot
        managed_topic = snapshot.topics.get(topic) if snapshot is not None else None
        if managed_topic is None or partition >= len(managed_topic.partitions) or partition < 0:
            return standalone_epoch
        assignment = managed_topic.partitions[partition]
        if assignment.leader_id != self._node_id:
            raise NotLeaderOrFollowerError(topic, partition, assignment.leader_id)
        return assignment.leader_epoch
