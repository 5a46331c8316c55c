"""Topic administration of a standalone broker: the registry and the logs changed together.

Every change is validated and persisted in the :class:`TopicRegistry` first, then applied to
the logs. A crash in between is repaired at startup (``Broker.start`` creates missing logs
of registered partitions and deletes logs of topics that are no longer registered), so the
registry is the truth.

A managed broker applies the control plane's whole topic set at once: a partition whose log
cannot be created or deleted (a directory name too long, a file in the way, a disk fault) is
reported in ``ManagedTopicsChange.failures`` and skipped, and every other partition is applied,
so that one tenant's bad topic never stops another's, nor the leadership changes that follow.

Effective topic configs layer three sources, as in Kafka: a topic's own overrides
(DYNAMIC_TOPIC_CONFIG), the broker-wide defaults set for this broker (``log.segment.bytes``...,
STATIC_BROKER_CONFIG) and the defaults of ``weir.topic_config`` (DEFAULT_CONFIG).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from broker_nodes.cluster_state import PartitionFailure
from broker_nodes.config import BROKER_SETTINGS, BrokerConfig, format_config_value
from broker_nodes.names import plain
from broker_nodes.replica_manager import ReplicaManager
from broker_nodes.server.errors import InvalidRequestError
from broker_nodes.storage.log_config import LogConfig
from broker_nodes.storage.log_manager import LogManager
from broker_nodes.topic_registry import (
    TopicAlreadyExistsError,
    TopicMetadata,
    TopicRegistry,
    UnknownTopicOrPartitionError,
    check_partition_directory_name,
    check_topic_name,
)
from grpc_protos.weir.v1 import broker_pb2
from weir.topic_config import TOPIC_CONFIGS, ConfigValue, InvalidConfigError, effective_topic_configs

USE_BROKER_DEFAULT = -1  # num_partitions / replication_factor meaning "the broker's default"

SOURCE_DYNAMIC_TOPIC_CONFIG = broker_pb2.CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG
SOURCE_STATIC_BROKER_CONFIG = broker_pb2.CONFIG_SOURCE_STATIC_BROKER_CONFIG
SOURCE_DEFAULT_CONFIG = broker_pb2.CONFIG_SOURCE_DEFAULT_CONFIG


@dataclass(frozen=True, slots=True)
class ConfigDescription:
    name: str
    value: str
    is_default: bool
    source: broker_pb2.ConfigSource
    type: str
    documentation: str
    read_only: bool


@dataclass(frozen=True, slots=True)
class ManagedTopicsChange:
    """What applying a topic set (or repairing the logs at startup) changed on this broker,
    and the partitions whose logs could not be created or deleted (all others were)."""

    partitions_created: int
    partitions_deleted: int
    topics_reconfigured: int
    failures: tuple[PartitionFailure, ...] = ()


def _every_partition_is_hosted(topic: str, partition: int) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class ConfigChange:
    name: str
    value: str
    delete: bool  # back to the default (incremental DELETE)


class TopicAdmin:
    """Create, delete, grow and configure topics. Thread-safe: changes are serialized by one lock."""

    def __init__(
        self,
        config: BrokerConfig,
        registry: TopicRegistry,
        log_manager: LogManager,
        replica_manager: ReplicaManager,
        *,
        hosted: Callable[[str, int], bool] = _every_partition_is_hosted,
    ) -> None:
        # ``hosted(topic, partition)``: whether this broker keeps the partition's log. Standalone,
        # every registered partition; managed, only those the cluster map makes it a replica of.
        self._hosted = hosted
        self._config = config
        self._registry = registry
        self._log_manager = log_manager
        self._replica_manager = replica_manager
        self._lock = threading.Lock()
        self._broker_topic_defaults = config.topic_config_defaults()

    # ------------------------------------------------------------------ configs of a topic

    def effective_configs(self, topic: TopicMetadata) -> dict[str, ConfigValue]:
        """Every topic config of ``topic``, typed, after overrides and broker defaults."""
        return effective_topic_configs({**self._broker_topic_defaults, **topic.configs})

    def log_config(self, topic: TopicMetadata) -> LogConfig:
        return LogConfig.from_topic_configs(self.effective_configs(topic))

    # ------------------------------------------------------------------ create, delete, grow

    def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str],
        *,
        validate_only: bool = False,
        internal: bool = False,
    ) -> TopicMetadata:
        """Create a topic and its logs (``-1`` counts take the broker defaults)."""
        if num_partitions == USE_BROKER_DEFAULT:
            num_partitions = self._config.integer("num.partitions")
        if replication_factor == USE_BROKER_DEFAULT:
            replication_factor = self._config.integer("default.replication.factor")
        with self._lock:
            topic = self._registry.create_topic(name, num_partitions, replication_factor, configs, internal=internal, validate_only=validate_only)
            if not validate_only:
                self._create_logs(topic, range(topic.partitions))
        return topic

    def auto_create_topic(self, name: str) -> TopicMetadata:
        """Create ``name`` with the broker defaults, or return it if a concurrent call already did."""
        try:
            return self.create_topic(name, USE_BROKER_DEFAULT, USE_BROKER_DEFAULT, {})
        except TopicAlreadyExistsError:
            return self._registry.require(name)

    def delete_topic(self, name: str) -> TopicMetadata:
        """Unregister a topic and delete its logs. Committed offsets of the topic stay."""
        with self._lock:
            topic = self._registry.delete_topic(name)
            self._delete_logs(topic.name, range(topic.partitions))
        return topic

    def create_partitions(self, name: str, count: int, *, validate_only: bool = False) -> TopicMetadata:
        with self._lock:
            before = self._registry.require(name)
            topic = self._registry.create_partitions(name, count, validate_only=validate_only)
            if not validate_only:
                self._create_logs(topic, range(before.partitions, topic.partitions))
        return topic

    def _create_logs(self, topic: TopicMetadata, partitions: Iterable[int]) -> None:
        log_config = self.log_config(topic)
        for partition in partitions:
            check_partition_directory_name(topic.name, partition)
            self._log_manager.get_or_create_log(topic.name, partition, log_config, sync_directory=False)
        self._log_manager.sync_data_directory()  # once for all of them

    def _delete_logs(self, topic: str, partitions: Iterable[int]) -> None:
        for partition in partitions:
            self._log_manager.delete_log(topic, partition)
            self._replica_manager.forget_partition(topic, partition)

    def reconcile_logs(self) -> ManagedTopicsChange:
        """Make the logs match the registry after a crash: logs created and deleted, and the
        partitions that could not be."""
        with self._lock:
            return self._reconcile_logs_locked({})

    def _reconcile_logs_locked(self, previous_topic_ids: Mapping[str, str], only: AbstractSet[str] | None = None) -> ManagedTopicsChange:
        # A log is deleted when its topic is gone, its partition is beyond the count, this
        # broker no longer hosts it, or the topic was recreated under the same name (its id
        # in ``previous_topic_ids`` differs from the registry's): old records must never
        # appear in a new topic. Each partition's failure is its own (see the module docstring).
        # ``only``: the topics to look at (None: every topic and every log).
        failures: list[PartitionFailure] = []
        deleted = 0
        for log in self._log_manager.logs():
            if only is not None and log.topic not in only:
                continue
            topic = self._registry.get(log.topic)
            recreated = topic is not None and previous_topic_ids.get(log.topic, topic.topic_id) != topic.topic_id
            if topic is None or recreated or log.partition >= topic.partitions or not self._hosted(log.topic, log.partition):
                try:
                    self._delete_logs(log.topic, [log.partition])
                except Exception as error:  # this partition's failure, reported; the others go on
                    failures.append(PartitionFailure(log.topic, log.partition, previous_topic_ids.get(log.topic, ""), error))
                    continue
                deleted += 1
        # The new logs' directories are made durable with one fsync of the data directory after
        # all of them, not one each (10,000 partitions in one map spent most of their time there).
        created: list[tuple[TopicMetadata, int]] = []
        registered = self._registry.topics() if only is None else [topic for name in sorted(only) if (topic := self._registry.get(name)) is not None]
        for topic in registered:
            missing = [
                partition
                for partition in range(topic.partitions)
                if self._hosted(topic.name, partition) and self._log_manager.get_log(topic.name, partition) is None
            ]
            log_config: LogConfig | None = None
            for partition in missing:
                try:
                    if log_config is None:
                        log_config = self.log_config(topic)
                    check_partition_directory_name(topic.name, partition)
                    self._log_manager.get_or_create_log(topic.name, partition, log_config, sync_directory=False)
                except Exception as error:  # this partition's failure, reported; the others go on
                    failures.append(PartitionFailure(topic.name, partition, topic.topic_id, error))
                    continue
                created.append((topic, partition))
        if created:
            try:
                self._log_manager.sync_data_directory()
            except Exception as error:  # none of them is known to survive a crash
                failures.extend(PartitionFailure(topic.name, partition, topic.topic_id, error) for topic, partition in created)
                created = []
        return ManagedTopicsChange(len(created), deleted, 0, tuple(failures))

    def apply_managed_topics(
        self, topics: Sequence[TopicMetadata], *, changed: AbstractSet[str] | None = None, sync_directory: bool = True
    ) -> ManagedTopicsChange:
        """Managed mode: make the registry hold exactly ``topics`` (internal ones included) and the logs follow.

        The caller has already made ``hosted`` answer for the new cluster map. Logs of topics
        no longer present (or recreated with a new topic id) are deleted, logs of hosted
        partitions created, and changed config overrides applied to the running logs. A
        standalone broker's own ``__consumer_offsets`` has another topic id than the map's, so
        the first map replaces it like a recreated topic.

        ``changed`` (None: every topic) names the only topics whose logs may need a change: the
        caller knows every other topic's logs already follow ``topics`` (the same map was applied
        before), so a map of thousands of topics that adds one looks at that one only.
        ``sync_directory=False``: the registry's rename is left for the caller's fsync of the data
        directory (``TopicRegistry.replace_managed_topics``).
        """
        with self._lock:
            before = {topic.name: topic for topic in self._registry.topics()}
            self._registry.replace_managed_topics(topics, sync_directory=sync_directory)
            logs = self._reconcile_logs_locked({name: topic.topic_id for name, topic in before.items()}, changed)
            reconfigured = 0
            for topic in topics:
                if changed is not None and topic.name not in changed:
                    continue
                previous = before.get(topic.name)
                if previous is not None and previous.topic_id == topic.topic_id and dict(previous.configs) != dict(topic.configs):
                    self._log_manager.update_topic_config(topic.name, self.log_config(topic))
                    reconfigured += 1
            return ManagedTopicsChange(logs.partitions_created, logs.partitions_deleted, reconfigured, logs.failures)

    # ------------------------------------------------------------------ metadata

    def describe_topics(self, names: Sequence[str], *, allow_auto_create: bool) -> list[TopicMetadata | Exception]:
        """Each named topic (every topic when ``names`` is empty), or why it cannot be described.

        An unknown topic is created when the client allows it and auto.create.topics.enable is on.
        """
        if not names:
            return list(self._registry.topics())
        auto_create = allow_auto_create and bool(self._config["auto.create.topics.enable"])
        results: list[TopicMetadata | Exception] = []
        for name in names:
            try:
                topic = self._registry.get(name)
                if topic is None:
                    # A tenant's name arrives qualified (tn-…~orders); the rules apply to the
                    # part the client chose.
                    check_topic_name(plain(name))
                    if not auto_create:
                        raise UnknownTopicOrPartitionError(name)
                    topic = self.auto_create_topic(name)
                results.append(topic)
            except Exception as error:  # this topic's answer, mapped by server.errors
                results.append(error)
        return results

    # ------------------------------------------------------------------ describe and alter configs

    def describe_topic_configs(self, name: str, only: Sequence[str] = ()) -> list[ConfigDescription]:
        """Every topic config of ``name`` (or the keys in ``only``) with its value and source."""
        topic = self._registry.require(name)
        values = self.effective_configs(topic)
        descriptions = []
        for key_name in only or TOPIC_CONFIGS:
            key = TOPIC_CONFIGS.get(key_name)
            if key is None:
                continue
            if key_name in topic.configs:
                source = SOURCE_DYNAMIC_TOPIC_CONFIG
            elif key_name in self._broker_topic_defaults:
                source = SOURCE_STATIC_BROKER_CONFIG
            else:
                source = SOURCE_DEFAULT_CONFIG
            descriptions.append(
                ConfigDescription(key_name, format_config_value(values[key_name]), source == SOURCE_DEFAULT_CONFIG, source, key.type, key.documentation, False)
            )
        return descriptions

    def describe_broker_configs(self, resource_name: str, only: Sequence[str] = ()) -> list[ConfigDescription]:
        """The broker's settings; ``resource_name`` is this broker's node id (or empty for the defaults)."""
        if resource_name not in ("", str(self._config.node_id)):
            raise InvalidRequestError(f"broker resource {resource_name!r} is not this broker (node id {self._config.node_id})")
        descriptions = []
        for setting in only or BROKER_SETTINGS:
            key = BROKER_SETTINGS.get(setting)
            if key is None:
                continue
            explicit = setting in self._config.explicit
            source = SOURCE_STATIC_BROKER_CONFIG if explicit else SOURCE_DEFAULT_CONFIG
            # Broker settings are fixed for the life of the process (no dynamic broker configs yet).
            descriptions.append(ConfigDescription(setting, self._config.describe_value(setting), not explicit, source, key.type, key.documentation, True))
        return descriptions

    def alter_topic_configs(self, name: str, changes: Sequence[ConfigChange], *, incremental: bool, validate_only: bool = False) -> TopicMetadata:
        """Apply config changes to a topic and its running logs.

        Incremental: each change sets or deletes one override. Otherwise the changes replace
        every override of the topic (a key not named goes back to its default).
        """
        seen: set[str] = set()
        for change in changes:
            if change.name in seen:
                raise InvalidRequestError(f"config {change.name!r} is named more than once")
            seen.add(change.name)
            if change.name not in TOPIC_CONFIGS:
                raise InvalidConfigError(change.name, None, "unknown topic config")
        with self._lock:
            topic = self._registry.require(name)
            overrides = dict(topic.configs) if incremental else {}
            for change in changes:
                if change.delete:
                    if not incremental:
                        raise InvalidRequestError("DELETE is only valid in an incremental config change")
                    overrides.pop(change.name, None)
                else:
                    overrides[change.name] = change.value
            changed = self._registry.set_configs(name, overrides, validate_only=validate_only)
            if not validate_only:
                self._log_manager.update_topic_config(name, self.log_config(changed))
            return changed
