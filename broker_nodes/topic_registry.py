"""The topics this standalone broker hosts: names, ids, partition counts and config overrides.

Until the controller exists (issue 3), the broker itself is the authority on which topics
exist. The registry validates every change (Kafka's topic name rules, partition counts, the
replication factor a single broker can offer, config overrides) and persists the whole set
atomically to ``<data_dir>/topics.json`` before the change becomes visible.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from broker_nodes.storage.atomic_files import write_atomically
from log_formats.log_files import MAX_DIRECTORY_NAME_BYTES, partition_directory_name

# MAX_PARTITIONS_PER_TOPIC guards the broker against one request creating millions of logs; it
# lives with the name rules because its widest partition number bounds tenants' topic names.
from log_formats.topic_names import INTERNAL_TOPIC_PREFIX, MAX_PARTITIONS_PER_TOPIC, InvalidTopicNameError, is_internal_topic_name, validate_topic_name
from weir.topic_config import validate_topic_configs

TOPICS_FILE_NAME = "topics.json"  # in the data directory; never a partition directory name
TOPICS_FILE_VERSION = 1  # the "version" field of topics.json
MAX_NAME_IN_ERROR = 40  # an over-long invalid name is cut to this many characters in its error message


class TopicRegistryError(Exception):
    """Base of the registry's errors; each names the topic."""

    retriable = False

    def __init__(self, topic: str, message: str) -> None:
        super().__init__(message)
        self.topic = topic


class InvalidTopicError(TopicRegistryError):
    """A name that breaks Kafka's topic name rules, or a reserved/internal topic (INVALID_TOPIC_EXCEPTION)."""

    def __init__(self, topic: str, reason: str) -> None:
        super().__init__(topic, f"invalid topic name {topic!r}: {reason}")
        self.reason = reason


class TopicAlreadyExistsError(TopicRegistryError):
    def __init__(self, topic: str) -> None:
        super().__init__(topic, f"topic {topic!r} already exists")


class UnknownTopicOrPartitionError(TopicRegistryError):
    """The topic, or this partition of it, is not hosted here (UNKNOWN_TOPIC_OR_PARTITION)."""

    retriable = True

    def __init__(self, topic: str, partition: int | None = None) -> None:
        if partition is None:
            message = f"topic {topic!r} does not exist"
        else:
            message = f"partition {partition} of topic {topic!r} does not exist"
        super().__init__(topic, message)
        self.partition = partition


class InvalidPartitionsError(TopicRegistryError):
    def __init__(self, topic: str, reason: str) -> None:
        super().__init__(topic, f"invalid partition count for topic {topic!r}: {reason}")
        self.reason = reason


class InvalidReplicationFactorError(TopicRegistryError):
    def __init__(self, topic: str, reason: str) -> None:
        super().__init__(topic, f"invalid replication factor for topic {topic!r}: {reason}")
        self.reason = reason


class PartitionDirectoryNameTooLongError(InvalidTopicError):
    """A partition whose directory name ``<topic>-<partition>`` would not fit one directory
    entry (INVALID_TOPIC_EXCEPTION): it can never be created, so it is refused before the
    file system is asked. The control plane keeps tenants' names short enough; this is for
    maps that bypass it."""

    def __init__(self, topic: str, partition: int, size: int) -> None:
        shown = topic if len(topic) <= MAX_NAME_IN_ERROR else topic[:MAX_NAME_IN_ERROR] + "..."
        super().__init__(
            shown,
            f"partition {partition} would need a directory name of {size} bytes, more than the {MAX_DIRECTORY_NAME_BYTES} bytes a directory name may have",
        )
        self.topic = topic
        self.partition = partition
        self.size = size


def check_partition_directory_name(topic: str, partition: int) -> None:
    """Raise PartitionDirectoryNameTooLongError unless the partition's directory name fits."""
    size = len(partition_directory_name(topic, partition).encode("utf-8"))
    if size > MAX_DIRECTORY_NAME_BYTES:
        raise PartitionDirectoryNameTooLongError(topic, partition, size)


def check_topic_name(name: str) -> None:
    """Raise InvalidTopicError unless ``name`` follows Kafka's rules (internal names pass)."""
    try:
        validate_topic_name(name)
    except InvalidTopicNameError as error:
        shown = name if len(name) <= MAX_NAME_IN_ERROR else name[:MAX_NAME_IN_ERROR] + "..."
        raise InvalidTopicError(shown, error.reason) from None


@dataclass(frozen=True)
class TopicMetadata:
    """One topic as the registry knows it. Immutable: a change produces a new value."""

    name: str
    topic_id: str  # a UUID; a topic deleted and created again gets a new one
    partitions: int
    replication_factor: int
    configs: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # overrides only, as text
    internal: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "topic_id": self.topic_id,
            "partitions": self.partitions,
            "replication_factor": self.replication_factor,
            "configs": dict(self.configs),
            "internal": self.internal,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TopicMetadata:
        """From one entry of topics.json as json.load decodes it (values of any JSON type)."""
        return cls(
            name=str(data["name"]),
            topic_id=str(data["topic_id"]),
            partitions=int(data["partitions"]),
            replication_factor=int(data["replication_factor"]),
            configs=MappingProxyType({str(key): str(value) for key, value in dict(data.get("configs") or {}).items()}),
            internal=bool(data.get("internal", False)),
        )


def compact_json(document: Mapping[str, object]) -> str:
    """``document`` as the broker's state files (topics.json, cluster-state.json) hold JSON:
    compact, keys sorted."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


class TopicRegistry:
    """The persisted set of topics.

    On disk: ``<data_dir>/topics.json`` = ``{"version": 1, "topics": [TopicMetadata.to_json()...]}``,
    replaced atomically (write ``topics.json.tmp``, fsync, rename, fsync the directory: in managed
    mode the broker fsyncs the directory once per applied map), so a crash leaves either the old
    or the new set, never a mix.

    Invariants: names are unique and valid; partitions >= 1 and never shrink; the replication
    factor is at most ``available_brokers``. Thread-safe: every method holds one lock; a
    change is persisted before it becomes visible to readers.
    """

    def __init__(self, data_dir: Path, *, available_brokers: int = 1) -> None:
        self._path = Path(data_dir) / TOPICS_FILE_NAME
        self._available_brokers = available_brokers
        self._lock = threading.Lock()
        self._topics: dict[str, TopicMetadata] = {}
        # Each registered topic's entry of topics.json as last written, with the value it was
        # written from: a managed broker rewrites the file at every map with nearly every entry
        # the same object as before, whose text is reused (see _commit).
        self._texts: dict[str, tuple[TopicMetadata, str]] = {}

    @property
    def path(self) -> Path:
        return self._path

    def load(self) -> None:
        """Read topics.json (a missing file means no topics yet)."""
        with self._lock:
            try:
                text = self._path.read_text(encoding="utf-8")
            except FileNotFoundError:
                self._topics = {}
                return
            document = json.loads(text)
            if document.get("version") != TOPICS_FILE_VERSION:
                raise ValueError(f"{self._path}: unsupported version {document.get('version')!r}")
            topics = (TopicMetadata.from_json(entry) for entry in document["topics"])
            self._topics = {topic.name: topic for topic in topics}

    def get(self, name: str) -> TopicMetadata | None:
        return self._topics.get(name)

    def require(self, name: str) -> TopicMetadata:
        """The topic named ``name``; UnknownTopicOrPartitionError when there is none."""
        topic = self._topics.get(name)
        if topic is None:
            raise UnknownTopicOrPartitionError(name)
        return topic

    def topics(self) -> list[TopicMetadata]:
        return sorted(self._topics.values(), key=lambda topic: topic.name)

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        configs: Mapping[str, str],
        *,
        internal: bool = False,
        validate_only: bool = False,
    ) -> TopicMetadata:
        """Validate and (unless ``validate_only``) persist a new topic.

        Clients may not create names starting with ``__``; the broker passes ``internal=True``
        for its own topics. Raises the registry's errors or InvalidConfigError.
        """
        check_topic_name(name)
        if is_internal_topic_name(name) and not internal:
            raise InvalidTopicError(name, f"names starting with {INTERNAL_TOPIC_PREFIX!r} are reserved for internal topics")
        self._check_partition_count(name, partitions)
        self._check_replication_factor(name, replication_factor)
        validate_topic_configs(configs)
        topic = TopicMetadata(
            name=name,
            topic_id=str(uuid.uuid4()),
            partitions=partitions,
            replication_factor=replication_factor,
            configs=MappingProxyType(dict(configs)),
            internal=internal,
        )
        with self._lock:
            if name in self._topics:
                raise TopicAlreadyExistsError(name)
            if not validate_only:
                self._commit({**self._topics, name: topic})
        return topic

    def delete_topic(self, name: str) -> TopicMetadata:
        """Remove the topic from the registry; returns what it was. Internal topics cannot be deleted."""
        with self._lock:
            topic = self._topics.get(name)
            if topic is None:
                raise UnknownTopicOrPartitionError(name)
            if topic.internal:
                raise InvalidTopicError(name, "internal topics cannot be deleted")
            remaining = dict(self._topics)
            del remaining[name]
            self._commit(remaining)
            return topic

    def create_partitions(self, name: str, count: int, *, validate_only: bool = False) -> TopicMetadata:
        """Grow the partition count to ``count``; it may never shrink or stay the same."""
        with self._lock:
            topic = self._topics.get(name)
            if topic is None:
                raise UnknownTopicOrPartitionError(name)
            if topic.internal:
                raise InvalidTopicError(name, "the partition count of an internal topic cannot change")
            if count <= topic.partitions:
                raise InvalidPartitionsError(name, f"the topic has {topic.partitions} partitions and the new count {count} does not grow it")
            self._check_partition_count(name, count)
            grown = replace(topic, partitions=count)
            if not validate_only:
                self._commit({**self._topics, name: grown})
            return grown

    def set_configs(self, name: str, configs: Mapping[str, str], *, validate_only: bool = False) -> TopicMetadata:
        """Replace the topic's config overrides with ``configs`` (validated first)."""
        validate_topic_configs(configs)
        with self._lock:
            topic = self._topics.get(name)
            if topic is None:
                raise UnknownTopicOrPartitionError(name)
            changed = replace(topic, configs=MappingProxyType(dict(configs)))
            if not validate_only:
                self._commit({**self._topics, name: changed})
            return changed

    def replace_managed_topics(self, topics: Iterable[TopicMetadata], *, sync_directory: bool = True) -> None:
        """Managed mode: make ``topics`` the registry's topics, internal ones included, as the control plane decided.

        The control plane has validated names and counts; names here are qualified
        (``tenant~name``), which Kafka's name rules would refuse, so only configs are checked.
        A topic absent from ``topics`` is gone, a broker's own (standalone) internal topics too:
        in managed mode internal topics come in the cluster map like any other.

        ``sync_directory=False``: topics.json is fsynced but not its directory; the caller fsyncs
        the data directory (see ``ClusterState.store``). Until then a power loss leaves the
        previous topics.json, whole, which the next start repairs like an apply cut short.
        """
        desired = {topic.name: topic for topic in topics}
        with self._lock:
            current = self._topics
            # The control plane pushes its whole map at every change: only the topics that differ
            # from the registered ones are checked, and an unchanged set is not written again.
            for topic in desired.values():
                known = current.get(topic.name)
                if known is not topic and known != topic:
                    validate_topic_configs(topic.configs)
            if desired != current:
                self._commit(desired, sync_directory=sync_directory)

    def _check_partition_count(self, name: str, partitions: int) -> None:
        if partitions < 1:
            raise InvalidPartitionsError(name, f"{partitions} is below 1")
        if partitions > MAX_PARTITIONS_PER_TOPIC:
            raise InvalidPartitionsError(name, f"{partitions} is above the limit of {MAX_PARTITIONS_PER_TOPIC} partitions per topic")

    def _check_replication_factor(self, name: str, replication_factor: int) -> None:
        if replication_factor < 1:
            raise InvalidReplicationFactorError(name, f"{replication_factor} is below 1")
        if replication_factor > self._available_brokers:
            brokers = "only 1 broker is" if self._available_brokers == 1 else f"only {self._available_brokers} brokers are"
            raise InvalidReplicationFactorError(name, f"{replication_factor} replicas were asked for but {brokers} available")

    def _commit(self, topics: Mapping[str, TopicMetadata], *, sync_directory: bool = True) -> None:
        # Called with the lock held: persist first, then publish, so readers never see a
        # topic that a crash could make disappear.
        # The document is {"topics": [...], "version": 1} in compact JSON with sorted keys, each
        # topic's entry serialized once for as long as the same value stays registered.
        previous = self._texts
        texts: dict[str, tuple[TopicMetadata, str]] = {}
        for name in sorted(topics):
            topic = topics[name]
            known = previous.get(name)
            texts[name] = known if known is not None and known[0] is topic else (topic, compact_json(topic.to_json()))
        text = '{"topics":[' + ",".join(entry for _, entry in texts.values()) + f'],"version":{TOPICS_FILE_VERSION}}}'
        write_atomically(self._path, text.encode("utf-8"), sync_directory=sync_directory)
        self._topics = dict(topics)
        self._texts = texts
