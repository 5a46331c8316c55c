"""``AdminClient`` and its argument and result types, as confluent-kafka's ``confluent_kafka.admin``.

Every operation returns at once with a dict of ``concurrent.futures.Future`` keyed as
confluent-kafka keys it (topic name, ConfigResource, TopicPartition). One request carries
all items; each future then resolves with its item's result or fails with
``KafkaException(KafkaError(code, message))`` from the broker's per-item error. A request
that fails as a whole (no broker reachable...) fails every future with that error.

Failover: requests go to any live broker (a broker forwards topic administration to the
controller), trying the others when one cannot be reached and going round again after
retry.backoff.ms until the call's timeout (``request_timeout``, else socket.timeout.ms);
see :meth:`weir.cluster.Cluster.call_any`. Items answered NOT_CONTROLLER (the controller
moved while the request was forwarded) are sent again within the same timeout. list_offsets
asks each partition's leader and, after NOT_LEADER_OR_FOLLOWER, an epoch error, a partition
without a leader or a transport failure, refreshes the metadata and asks the new leader.

Consumer groups: describe, delete and the group offset calls go to each group's coordinator
(FindCoordinator, :class:`weir.coordinator.GroupCoordinators`), looked up again when it
answers NOT_COORDINATOR or cannot be reached; list_consumer_groups asks every broker of the
cluster map (each lists the groups it coordinates) and merges. Altering a group's offsets is
a commit without a member (member id "", generation -1), which the coordinator accepts only
while the group has no members.

Thread-safety: an AdminClient may be used from any thread; requests run on a small pool.
"""

from __future__ import annotations

import enum
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from grpc_protos.weir.v1 import broker_pb2
from weir.admin_acls import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
    binding_message,
    binding_of,
    filter_message,
)
from weir.admin_cluster import (
    DeletedRecords,
    DescribeClusterResult,
    GroupMember,
    GroupMetadata,
    TopicCollection,
    TopicDescription,
    TopicPartitionInfo,
    cluster_description,
    nodes_of,
    operations_named,
    topic_description,
)
from weir.admin_elections import check_elect_leaders, election_request, election_results
from weir.admin_scram import (
    MAX_SCRAM_ITERATIONS,
    MIN_SCRAM_ITERATIONS,
    SCRAM_HASHES,
    ElectionType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
    salted_password,
)
from weir.cluster import BrokerMetadata, Cluster, ClusterMetadata, PartitionMetadata, TopicMetadata
from weir.commit_metadata import decode_commit_metadata, encode_commit_metadata
from weir.config import ADMIN, ClientConfig
from weir.consumer_groups import (
    ConsumerGroupDescription,
    ConsumerGroupListing,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    ListConsumerGroupsResult,
    MemberAssignment,
    MemberDescription,
    Node,
)
from weir.coordinator import COORDINATOR_LOADING, COORDINATOR_MOVED, GroupCoordinators
from weir.errors import ErrorCode, KafkaError, KafkaException
from weir.message import OFFSET_END, OFFSET_INVALID, TopicPartition
from weir.transaction_admin import HangingTransaction, TransactionAdmin, TransactionDescription, TransactionListing

__all__ = [
    "AdminClient",
    "NewTopic",
    "NewPartitions",
    "ConfigResource",
    "ConfigEntry",
    "ConfigSource",
    "ResourceType",
    "ResourcePatternType",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "TopicCollection",
    "TopicDescription",
    "TopicPartitionInfo",
    "DescribeClusterResult",
    "DeletedRecords",
    "GroupMember",
    "GroupMetadata",
    "ElectionType",
    "ScramCredentialInfo",
    "ScramMechanism",
    "UserScramCredentialAlteration",
    "UserScramCredentialDeletion",
    "UserScramCredentialUpsertion",
    "UserScramCredentialsDescription",
    "CONFIG_SOURCE_UNKNOWN_CONFIG",
    "CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG",
    "CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG",
    "CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG",
    "CONFIG_SOURCE_STATIC_BROKER_CONFIG",
    "CONFIG_SOURCE_DEFAULT_CONFIG",
    "CONFIG_SOURCE_GROUP_CONFIG",
    "RESOURCE_UNKNOWN",
    "RESOURCE_ANY",
    "RESOURCE_TOPIC",
    "RESOURCE_GROUP",
    "RESOURCE_BROKER",
    "RESOURCE_TRANSACTIONAL_ID",
    "AlterConfigOpType",
    "OffsetSpec",
    "ListOffsetsResultInfo",
    "IsolationLevel",
    "ClusterMetadata",
    "BrokerMetadata",
    "TopicMetadata",
    "PartitionMetadata",
    "ConsumerGroupState",
    "ConsumerGroupType",
    "ConsumerGroupTopicPartitions",
    "ConsumerGroupListing",
    "ListConsumerGroupsResult",
    "ConsumerGroupDescription",
    "MemberDescription",
    "MemberAssignment",
    "Node",
    "TransactionListing",
    "TransactionDescription",
    "HangingTransaction",
]

Key = TypeVar("Key")
Item = TypeVar("Item")


class ConfigSource(enum.IntEnum):
    UNKNOWN_CONFIG = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    GROUP_CONFIG = 8


# confluent-kafka's module-level constants (librdkafka's numbers).
CONFIG_SOURCE_UNKNOWN_CONFIG = int(ConfigSource.UNKNOWN_CONFIG)
CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG = int(ConfigSource.DYNAMIC_TOPIC_CONFIG)
CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG = int(ConfigSource.DYNAMIC_BROKER_CONFIG)
CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG = int(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
CONFIG_SOURCE_STATIC_BROKER_CONFIG = int(ConfigSource.STATIC_BROKER_CONFIG)
CONFIG_SOURCE_DEFAULT_CONFIG = int(ConfigSource.DEFAULT_CONFIG)
CONFIG_SOURCE_GROUP_CONFIG = int(ConfigSource.GROUP_CONFIG)
RESOURCE_UNKNOWN = int(ResourceType.UNKNOWN)
RESOURCE_ANY = int(ResourceType.ANY)
RESOURCE_TOPIC = int(ResourceType.TOPIC)
RESOURCE_GROUP = int(ResourceType.GROUP)
RESOURCE_BROKER = int(ResourceType.BROKER)
RESOURCE_TRANSACTIONAL_ID = int(ResourceType.TRANSACTIONAL_ID)


class AlterConfigOpType(enum.IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class IsolationLevel(enum.IntEnum):
    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


class NewTopic:
    """A topic to create; -1 partitions or replication factor means the broker's default."""

    def __init__(
        self,
        topic: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        replica_assignment: list | None = None,
        config: Mapping[str, str] | None = None,
    ) -> None:
        if replica_assignment:
            raise ValueError("replica_assignment is not supported yet: brokers place replicas themselves")
        self.topic = topic
        self.num_partitions = num_partitions
        self.replication_factor = replication_factor
        self.replica_assignment = replica_assignment
        self.config = dict(config or {})

    def __repr__(self) -> str:
        return f"NewTopic(topic={self.topic},num_partitions={self.num_partitions})"


class NewPartitions:
    """Grow ``topic`` to ``new_total_count`` partitions."""

    def __init__(self, topic: str, new_total_count: int, replica_assignment: list | None = None) -> None:
        if replica_assignment:
            raise ValueError("replica_assignment is not supported yet: brokers place replicas themselves")
        self.topic = topic
        self.new_total_count = new_total_count
        self.replica_assignment = replica_assignment

    def __repr__(self) -> str:
        return f"NewPartitions(topic={self.topic},new_total_count={self.new_total_count})"


class ConfigEntry:
    """One config of a resource: a describe result, or an item of incremental_alter_configs."""

    def __init__(
        self,
        name: str,
        value: str | None,
        source: ConfigSource = ConfigSource.UNKNOWN_CONFIG,
        is_read_only: bool = False,
        is_default: bool = False,
        is_sensitive: bool = False,
        is_synonym: bool = False,
        synonyms: Mapping[str, ConfigEntry] | None = None,
        incremental_operation: AlterConfigOpType | None = None,
        documentation: str | None = None,
        type: str | None = None,
    ) -> None:
        self.name = name
        self.value = value
        self.source = source
        self.is_read_only = is_read_only
        self.is_default = is_default
        self.is_sensitive = is_sensitive
        self.is_synonym = is_synonym
        # confluent-kafka's shape: {name: ConfigEntry}, in precedence order (the value in force first).
        self.synonyms: dict[str, ConfigEntry] = dict(synonyms or {})
        self.incremental_operation = incremental_operation
        self.documentation = documentation
        self.type = type

    def __repr__(self) -> str:
        return f'ConfigEntry({self.name}="{self.value}")'

    def __str__(self) -> str:
        return f'{self.name}="{self.value}"'


class ConfigResource:
    """A resource whose configs are described or altered; hashes by (type, name).

    ``restype`` is a ConfigResource.Type (ResourceType), its name ("topic") or its number.
    """

    Type = ResourceType

    def __init__(
        self,
        restype: ResourceType | str | int,
        name: str,
        set_config: Mapping[str, str] | None = None,
        described_configs: Any = None,
        error: KafkaError | None = None,
        incremental_configs: list[ConfigEntry] | None = None,
    ) -> None:
        if isinstance(restype, str):
            try:
                restype = ResourceType[restype.upper()]
            except KeyError:
                raise ValueError(f'Unknown resource type "{restype}": should be a ConfigResource.Type') from None
        self.restype = ResourceType(restype)
        self.name = name
        self.set_config_dict = dict(set_config or {})
        self.incremental_configs = list(incremental_configs or [])
        self.configs = described_configs
        self.error = error

    def set_config(self, name: str, value: str, overwrite: bool = True) -> None:
        if not overwrite and name in self.set_config_dict:
            return
        self.set_config_dict[name] = value

    def add_incremental_config(self, config: ConfigEntry) -> None:
        self.incremental_configs.append(config)

    def __hash__(self) -> int:
        return hash((self.restype, self.name))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConfigResource):
            return NotImplemented
        return (self.restype, self.name) == (other.restype, other.name)

    def __lt__(self, other: ConfigResource) -> bool:
        return (self.restype, self.name) < (other.restype, other.name)

    def __len__(self) -> int:
        """The number of configs set with set_config, as confluent-kafka's (its delta_alter_configs example
        prints it). Note that, as there, a resource with none set is falsy: test it with ``is None``."""
        return len(self.set_config_dict)

    def __repr__(self) -> str:
        return f"ConfigResource({self.restype.name},{self.name})"


class OffsetSpec:
    """Which offset list_offsets() asks for: earliest, latest, max timestamp, or the first at a timestamp."""

    EARLIEST = -2
    LATEST = -1
    MAX_TIMESTAMP = -3

    def __init__(self, value: int) -> None:
        self.value = value

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return cls(cls.EARLIEST)

    @classmethod
    def latest(cls) -> OffsetSpec:
        return cls(cls.LATEST)

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        return cls(cls.MAX_TIMESTAMP)

    @classmethod
    def for_timestamp(cls, timestamp_ms: int) -> OffsetSpec:
        if timestamp_ms < 0:
            raise ValueError("timestamp must be a positive number of milliseconds")
        return cls(timestamp_ms)

    def __repr__(self) -> str:
        return f"OffsetSpec({self.value})"


class ListOffsetsResultInfo:
    def __init__(self, offset: int, timestamp: int, leader_epoch: int | None) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.leader_epoch = leader_epoch

    def __repr__(self) -> str:
        return f"ListOffsetsResultInfo(offset={self.offset}, timestamp={self.timestamp}, leader_epoch={self.leader_epoch})"


_INCREMENTAL_OPS = {
    AlterConfigOpType.SET: broker_pb2.ALTER_CONFIG_OP_SET,
    AlterConfigOpType.DELETE: broker_pb2.ALTER_CONFIG_OP_DELETE,
    AlterConfigOpType.APPEND: broker_pb2.ALTER_CONFIG_OP_APPEND,
    AlterConfigOpType.SUBTRACT: broker_pb2.ALTER_CONFIG_OP_SUBTRACT,
}


_SCRAM_MECHANISMS = {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256, "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}
# Bytes of the random salt an upsertion without one gets (librdkafka's size).
SCRAM_SALT_BYTES = 64


def _scram_mechanism_name(mechanism: ScramMechanism) -> str:
    """The SASL name of ``mechanism``; UNKNOWN is sent as such and refused by the broker (UNSUPPORTED_SASL_MECHANISM)."""
    return next((name for name, member in _SCRAM_MECHANISMS.items() if member == mechanism), mechanism.name)


def _scram_upsertion(upsertion: UserScramCredentialUpsertion) -> broker_pb2.ScramCredentialUpsertion:
    """The upsertion as the broker takes it: the salted password, computed here, never the password."""
    mechanism = _scram_mechanism_name(upsertion.scram_credential_info.mechanism)
    iterations = upsertion.scram_credential_info.iterations
    salt = upsertion.salt if upsertion.salt is not None else secrets.token_bytes(SCRAM_SALT_BYTES)
    # Nothing is computed for a mechanism or a count the broker refuses anyway (a huge count would hang here).
    computable = mechanism in SCRAM_HASHES and MIN_SCRAM_ITERATIONS <= iterations <= MAX_SCRAM_ITERATIONS
    salted = salted_password(mechanism, upsertion.password, salt, iterations) if computable else b""
    return broker_pb2.ScramCredentialUpsertion(user=upsertion.user, mechanism=mechanism, iterations=iterations, salt=salt, salted_password=salted)


def _check_scram_upsertion(alteration: UserScramCredentialUpsertion) -> None:
    """confluent-kafka's checks of one upsertion (TypeError / ValueError)."""
    if not isinstance(alteration.password, bytes):
        raise TypeError("'password' must be bytes")
    if not alteration.password:
        raise ValueError("'password' cannot be empty")
    if alteration.salt is not None and not isinstance(alteration.salt, bytes):
        raise TypeError("'salt' must be bytes")
    if alteration.salt is not None and not alteration.salt:
        raise ValueError("'salt' can be None but cannot be empty")
    if not isinstance(alteration.scram_credential_info, ScramCredentialInfo):
        raise TypeError("Expected credential_info to be ScramCredentialInfo Type")
    if not isinstance(alteration.scram_credential_info.mechanism, ScramMechanism):
        raise TypeError("Expected the mechanism to be ScramMechanism Type")
    if alteration.scram_credential_info.iterations < 1:
        raise ValueError("Iterations should be positive")


def _config_source(source: int) -> ConfigSource:
    return ConfigSource(source) if source in ConfigSource._value2member_map_ else ConfigSource.UNKNOWN_CONFIG


def _is_non_empty_list_of(value: object, kind: type) -> bool:
    """The check of a list argument at run time: callers of the public API need not be type-checked."""
    return isinstance(value, list) and bool(value) and all(isinstance(item, kind) for item in value)


def _is_non_empty_list_of_exactly(value: object, kind: type) -> bool:
    """As :func:`_is_non_empty_list_of`, subclasses refused (an AclBindingFilter is no AclBinding to create)."""
    return isinstance(value, list) and bool(value) and all(type(item) is kind for item in value)


_PROTO_RESOURCE_TYPES = {ResourceType.TOPIC: broker_pb2.RESOURCE_TYPE_TOPIC, ResourceType.BROKER: broker_pb2.RESOURCE_TYPE_BROKER}
# Per-topic answers of topic administration that are sent again (within the call's timeout).
_TOPIC_ITEM_RETRIES = frozenset({ErrorCode.NOT_CONTROLLER})
# Per-partition ListOffsets answers after which the leader is looked up again and asked again.
_LEADER_MOVED = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.REPLICA_NOT_AVAILABLE,
    }
)


def _item_error(code: int, message: str) -> KafkaException | None:
    return KafkaException(KafkaError(code, message or None)) if code else None


def _group_id_of(item: ConsumerGroupTopicPartitions) -> str:
    return item.group_id


def _answer_for(group_id: str, answers: Iterable[Any]) -> Any:
    """The coordinator's answer for ``group_id`` (a GroupDescription or DeletedGroup); KafkaException for its error or none."""
    for answer in answers:
        if answer.group_id == group_id:
            error = _item_error(answer.error_code, answer.error_message)
            if error is not None:
                raise error
            return answer
    raise KafkaException(KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"the coordinator did not answer for group {group_id!r}"))


def _groups_coordinator_error(response: Any) -> tuple[int, str]:
    """The coordinator error of a ConsumerGroupDescribe / DeleteGroups answer ((0, "") when none)."""
    for group in response.groups:
        if group.error_code in COORDINATOR_MOVED or group.error_code in COORDINATOR_LOADING:
            return group.error_code, group.error_message
    return 0, ""


def _topic_partitions(items: Iterable[broker_pb2.TopicPartitions]) -> list[TopicPartition]:
    return sorted(TopicPartition(item.topic, partition) for item in items for partition in item.partitions)


def _check_group_ids(group_ids: Any) -> list[str]:
    if not isinstance(group_ids, list) or not group_ids:
        raise TypeError("Expected non-empty list of group ids")
    for group_id in group_ids:
        if not isinstance(group_id, str) or not group_id:
            raise ValueError(f"group id must be a non-empty string, got {group_id!r}")
    return list(dict.fromkeys(group_ids))


def _check_transactional_ids(transactional_ids: Any) -> list[str]:
    if not _is_non_empty_list_of(transactional_ids, str) or not all(transactional_ids):
        raise TypeError("Expected a non-empty list of transactional ids")
    return list(dict.fromkeys(transactional_ids))


def _check_group_requests(requests: Any, *, partitions_required: bool) -> list[ConsumerGroupTopicPartitions]:
    if not isinstance(requests, list) or not requests or not all(isinstance(item, ConsumerGroupTopicPartitions) for item in requests):
        raise TypeError("Expected non-empty list of ConsumerGroupTopicPartitions")
    seen = set()
    for item in requests:
        if not isinstance(item.group_id, str) or not item.group_id:
            raise ValueError("ConsumerGroupTopicPartitions.group_id must be a non-empty string")
        if item.group_id in seen:
            raise ValueError(f"group {item.group_id!r} is given twice")
        seen.add(item.group_id)
        if partitions_required and not item.topic_partitions:
            raise ValueError(f"group {item.group_id!r}: topic_partitions must list the partitions to alter")
        for tp in item.topic_partitions or []:
            if not isinstance(tp, TopicPartition) or tp.partition < 0:
                raise ValueError(f"group {item.group_id!r}: {tp!r} must be a TopicPartition with a partition number")
            if partitions_required and tp.offset < 0:
                raise ValueError(f"group {item.group_id!r}: offset {tp.offset} of {tp.topic} [{tp.partition}] is not an absolute offset")
    return requests


class AdminClient:
    """confluent-kafka's AdminClient over the broker's admin calls (see the module docstring)."""

    def __init__(self, config: Mapping[str, Any] | None = None, **options: Any) -> None:
        merged = dict(config or {})
        merged.update(options)
        self._config = ClientConfig(merged, ADMIN)
        self._cluster = Cluster(self._config)
        self._default_timeout = self._config["socket.timeout.ms"] / 1000.0
        self._coordinators = GroupCoordinators(self._cluster)
        self._transactions = TransactionAdmin(self._cluster)
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="weir-admin")

    # ------------------------------------------------------------------ plumbing

    def _timeout(self, request_timeout: float | None) -> float:
        return self._default_timeout if request_timeout is None or request_timeout < 0 else request_timeout

    def _run(self, keys: Iterable[Key], call: Callable[[], dict[Key, tuple[KafkaException | None, Any]]]) -> dict[Key, Future]:
        """Create one future per key; ``call`` runs on the pool and returns each key's (error, result)."""
        futures: dict[Key, Future] = {}
        for key in keys:
            future: Future = Future()
            future.set_running_or_notify_cancel()
            futures[key] = future

        def complete() -> None:
            try:
                outcomes = call()
            except KafkaException as error:
                for future in futures.values():
                    future.set_exception(error)
                return
            except Exception as error:
                wrapped = KafkaException(KafkaError(KafkaError._FAIL, f"{type(error).__name__}: {error}"))
                for future in futures.values():
                    future.set_exception(wrapped)
                return
            for key, future in futures.items():
                failure, result = outcomes.get(key, (KafkaException(KafkaError(KafkaError._FAIL, f"the broker's answer has no result for {key}")), None))
                if failure is not None:
                    future.set_exception(failure)
                else:
                    future.set_result(result)

        self._executor.submit(complete)
        return futures

    def _topic_outcomes(
        self, method: str, names: list[str], request_for: Callable[[list[str]], Any], timeout: float
    ) -> dict[str, tuple[KafkaException | None, None]]:
        """Send a topic administration request for ``names`` (built by ``request_for``) to any broker; each topic's outcome.

        Topics answered with an error of _TOPIC_ITEM_RETRIES are asked again, alone, after
        retry.backoff.ms (doubling), until ``timeout`` has passed; then their last error stands.
        """
        deadline = time.monotonic() + timeout
        outcomes: dict[str, tuple[KafkaException | None, None]] = {}
        pending = list(names)
        for attempt in range(1_000_000):  # ends at the deadline long before
            response = self._cluster.call_any(method, request_for(pending), timeout=max(deadline - time.monotonic(), 0.001))
            pause = self._cluster.backoff(attempt)
            again_possible = time.monotonic() + pause < deadline
            retry = []
            for result in response.topics:
                if again_possible and result.error_code in _TOPIC_ITEM_RETRIES and result.name in pending:
                    retry.append(result.name)
                else:
                    outcomes[result.name] = (_item_error(result.error_code, result.error_message), None)
            if not retry:
                return outcomes
            pending = retry
            time.sleep(pause)
        return outcomes

    # ------------------------------------------------------------------ topics

    def create_topics(
        self, new_topics: list[NewTopic], operation_timeout: float = 0, request_timeout: float | None = None, validate_only: bool = False
    ) -> dict[str, Future]:
        """Create topics -> {topic: Future[None]}."""
        if not _is_non_empty_list_of(new_topics, NewTopic):
            raise TypeError("Expected non-empty list of NewTopic objects")
        timeout = self._timeout(request_timeout)
        creatable = {
            topic.topic: broker_pb2.CreatableTopic(
                name=topic.topic,
                num_partitions=topic.num_partitions,
                replication_factor=topic.replication_factor,
                configs=[broker_pb2.TopicConfigEntry(name=name, value=str(value)) for name, value in topic.config.items()],
            )
            for topic in new_topics
        }

        def request_for(names: list[str]) -> broker_pb2.CreateTopicsRequest:
            return broker_pb2.CreateTopicsRequest(
                topics=[creatable[name] for name in names], validate_only=validate_only, timeout_ms=int(max(operation_timeout, 0) * 1000)
            )

        names = [topic.topic for topic in new_topics]
        return self._run(names, lambda: self._topic_outcomes("CreateTopics", names, request_for, timeout))

    def delete_topics(self, topics: list[str], operation_timeout: float = 0, request_timeout: float | None = None) -> dict[str, Future]:
        """Delete topics -> {topic: Future[None]}."""
        if not topics or not isinstance(topics, list):
            raise TypeError("Expected non-empty list of topic strings")
        timeout = self._timeout(request_timeout)

        def request_for(names: list[str]) -> broker_pb2.DeleteTopicsRequest:
            return broker_pb2.DeleteTopicsRequest(topics=names, timeout_ms=int(max(operation_timeout, 0) * 1000))

        return self._run(topics, lambda: self._topic_outcomes("DeleteTopics", list(topics), request_for, timeout))

    def create_partitions(
        self, new_partitions: list[NewPartitions], operation_timeout: float = 0, request_timeout: float | None = None, validate_only: bool = False
    ) -> dict[str, Future]:
        """Grow partition counts -> {topic: Future[None]}."""
        if not _is_non_empty_list_of(new_partitions, NewPartitions):
            raise TypeError("Expected non-empty list of NewPartitions objects")
        timeout = self._timeout(request_timeout)
        counts = {item.topic: item.new_total_count for item in new_partitions}

        def request_for(names: list[str]) -> broker_pb2.CreatePartitionsRequest:
            return broker_pb2.CreatePartitionsRequest(
                topics=[broker_pb2.CreatePartitionsTopic(name=name, count=counts[name]) for name in names],
                validate_only=validate_only,
                timeout_ms=int(max(operation_timeout, 0) * 1000),
            )

        names = [item.topic for item in new_partitions]
        return self._run(names, lambda: self._topic_outcomes("CreatePartitions", names, request_for, timeout))

    # ------------------------------------------------------------------ configs

    @staticmethod
    def _resource_ref(resource: ConfigResource) -> tuple[broker_pb2.ResourceType, str]:
        proto_type = _PROTO_RESOURCE_TYPES.get(resource.restype)
        if proto_type is None:
            raise ValueError(f"configs of {resource.restype.name} resources are not supported; use TOPIC or BROKER")
        return proto_type, resource.name

    def describe_configs(self, resources: list[ConfigResource], request_timeout: float | None = None) -> dict[ConfigResource, Future]:
        """Describe configs -> {ConfigResource: Future[{name: ConfigEntry}]}."""
        if not resources or not isinstance(resources, list):
            raise TypeError("Expected non-empty list of ConfigResource objects")
        timeout = self._timeout(request_timeout)
        request = broker_pb2.DescribeConfigsRequest(
            resources=[broker_pb2.ConfigResourceRef(type=self._resource_ref(resource)[0], name=resource.name) for resource in resources],
            include_documentation=True,
            include_synonyms=True,
        )
        by_key = {(self._resource_ref(resource)): resource for resource in resources}

        def call() -> dict[ConfigResource, tuple[KafkaException | None, Any]]:
            response = self._cluster.call_any("DescribeConfigs", request, timeout=timeout)
            outcomes: dict[ConfigResource, tuple[KafkaException | None, Any]] = {}
            for result in response.resources:
                resource = by_key.get((result.type, result.name))
                if resource is None:
                    continue
                error = _item_error(result.error_code, result.error_message)
                entries = {
                    entry.name: ConfigEntry(
                        entry.name,
                        entry.value,
                        _config_source(entry.source),
                        is_read_only=entry.read_only,
                        is_default=entry.is_default,
                        is_sensitive=entry.is_sensitive,
                        documentation=entry.documentation or None,
                        type=entry.type or None,
                        synonyms={
                            synonym.name: ConfigEntry(synonym.name, synonym.value, _config_source(synonym.source), is_synonym=True)
                            for synonym in entry.synonyms
                        },
                    )
                    for entry in result.configs
                }
                outcomes[resource] = (error, None if error else entries)
            return outcomes

        return self._run(resources, call)

    def alter_configs(self, resources: list[ConfigResource], request_timeout: float | None = None, validate_only: bool = False) -> dict[ConfigResource, Future]:
        """Replace every dynamic config of each resource with its ``set_config`` values -> {ConfigResource: Future[None]}."""
        items = [
            broker_pb2.AlterConfigsResource(
                type=self._resource_ref(resource)[0],
                name=resource.name,
                incremental=False,
                configs=[
                    broker_pb2.AlterableConfig(name=name, value=str(value), op=broker_pb2.ALTER_CONFIG_OP_SET)
                    for name, value in resource.set_config_dict.items()
                ],
            )
            for resource in resources
        ]
        return self._alter(resources, items, request_timeout, validate_only)

    def incremental_alter_configs(
        self, resources: list[ConfigResource], request_timeout: float | None = None, validate_only: bool = False
    ) -> dict[ConfigResource, Future]:
        """SET, DELETE, APPEND or SUBTRACT individual configs -> {ConfigResource: Future[None]}.

        APPEND and SUBTRACT add or remove members (comma-separated) of a LIST config such as
        cleanup.policy; on any other config the resource fails with INVALID_CONFIG.
        """
        items = []
        for resource in resources:
            configs = []
            for entry in resource.incremental_configs:
                operation = entry.incremental_operation if entry.incremental_operation is not None else AlterConfigOpType.SET
                try:
                    op = _INCREMENTAL_OPS[AlterConfigOpType(operation)]
                except ValueError:
                    raise ValueError(f"config {entry.name!r}: incremental_operation must be an AlterConfigOpType, got {operation!r}") from None
                configs.append(broker_pb2.AlterableConfig(name=entry.name, value="" if entry.value is None else str(entry.value), op=op))
            items.append(broker_pb2.AlterConfigsResource(type=self._resource_ref(resource)[0], name=resource.name, configs=configs, incremental=True))
        return self._alter(resources, items, request_timeout, validate_only)

    def _alter(
        self, resources: list[ConfigResource], items: list[broker_pb2.AlterConfigsResource], request_timeout: float | None, validate_only: bool
    ) -> dict[ConfigResource, Future]:
        if not resources:
            raise TypeError("Expected non-empty list of ConfigResource objects")
        timeout = self._timeout(request_timeout)
        request = broker_pb2.AlterConfigsRequest(resources=items, validate_only=validate_only)
        by_key = {self._resource_ref(resource): resource for resource in resources}

        def call() -> dict[ConfigResource, tuple[KafkaException | None, Any]]:
            response = self._cluster.call_any("AlterConfigs", request, timeout=timeout)
            return {
                by_key[(result.type, result.name)]: (_item_error(result.error_code, result.error_message), None)
                for result in response.resources
                if (result.type, result.name) in by_key
            }

        return self._run(resources, call)

    # ------------------------------------------------------------------ offsets and metadata

    def list_offsets(
        self, topic_partition_offsets: Mapping[TopicPartition, OffsetSpec], isolation_level: IsolationLevel | None = None, request_timeout: float | None = None
    ) -> dict[TopicPartition, Future]:
        """Offsets by spec -> {TopicPartition: Future[ListOffsetsResultInfo]}, asked of each partition's leader."""
        if not topic_partition_offsets:
            raise TypeError("Expected non-empty dict of TopicPartition: OffsetSpec")
        timeout = self._timeout(request_timeout)
        isolation = broker_pb2.READ_COMMITTED if isolation_level == IsolationLevel.READ_COMMITTED else broker_pb2.READ_UNCOMMITTED
        partitions = list(topic_partition_offsets.items())

        def call() -> dict[TopicPartition, tuple[KafkaException | None, Any]]:
            return self._list_offsets(dict(partitions), isolation, time.monotonic() + timeout)

        return self._run([tp for tp, _ in partitions], call)

    def _list_offsets(
        self, pending: dict[TopicPartition, OffsetSpec], isolation: broker_pb2.IsolationLevel, deadline: float
    ) -> dict[TopicPartition, tuple[KafkaException | None, Any]]:
        """Ask each partition's leader; partitions whose leader moved or is unknown are asked again until ``deadline``."""
        outcomes: dict[TopicPartition, tuple[KafkaException | None, Any]] = {}
        for attempt in range(1_000_000):  # ends at the deadline long before
            retry: dict[TopicPartition, tuple[OffsetSpec, KafkaException]] = {}
            by_leader: dict[str, dict[str, list[broker_pb2.ListOffsetsPartition]]] = {}
            for tp, spec in pending.items():
                info = self._cluster.topic(tp.topic, timeout=max(deadline - time.monotonic(), 0.001))
                if info.error_code or tp.partition >= info.partition_count:
                    code = info.error_code or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    outcomes[tp] = (KafkaException(KafkaError(code, f"{tp.topic} [{tp.partition}]: {info.error_message or 'no such partition'}")), None)
                    continue
                address = self._cluster.leader_address(tp.topic, tp.partition)
                if address is None:
                    self._cluster.mark_stale(tp.topic)
                    retry[tp] = (spec, KafkaException(KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{tp.topic} [{tp.partition}]: no leader")))
                    continue
                by_leader.setdefault(address, {}).setdefault(tp.topic, []).append(broker_pb2.ListOffsetsPartition(partition=tp.partition, timestamp=spec.value))
            for address, topics in by_leader.items():
                request = broker_pb2.ListOffsetsRequest(
                    isolation_level=isolation, topics=[broker_pb2.ListOffsetsTopic(topic=topic, partitions=items) for topic, items in topics.items()]
                )
                try:
                    response = self._cluster.call("ListOffsets", request, address=address, timeout=max(deadline - time.monotonic(), 0.001))
                except KafkaException as failure:
                    if not failure.error.retriable():
                        raise
                    for topic, items in topics.items():
                        self._cluster.mark_stale(topic)
                        for item in items:
                            tp = TopicPartition(topic, item.partition)
                            retry[tp] = (pending[tp], failure)
                    continue
                for topic_response in response.topics:
                    for answer in topic_response.partitions:
                        key = TopicPartition(topic_response.topic, answer.partition)
                        error = _item_error(answer.error_code, answer.error_message)
                        if answer.error_code in _LEADER_MOVED and key in pending and error is not None:  # a code in _LEADER_MOVED is an error
                            self._cluster.mark_stale(key.topic)
                            retry[key] = (pending[key], error)
                            continue
                        outcomes[key] = (
                            error,
                            None
                            if error
                            else ListOffsetsResultInfo(answer.offset, answer.timestamp, answer.leader_epoch if answer.leader_epoch >= 0 else None),
                        )
            pause = self._cluster.backoff(attempt)
            if not retry or time.monotonic() + pause >= deadline:
                for tp, (_, error) in retry.items():
                    outcomes[tp] = (error, None)
                return outcomes
            time.sleep(pause)
            pending = {tp: spec for tp, (spec, _) in retry.items()}
        return outcomes

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        return self._cluster.list_topics(topic, timeout)

    # ------------------------------------------------------------------ consumer groups

    def list_consumer_groups(
        self,
        request_timeout: float | None = None,
        states: Iterable[ConsumerGroupState] | None = None,
        types: Iterable[ConsumerGroupType] | None = None,
    ) -> Future:
        """Every group of the cluster the caller may describe -> Future[ListConsumerGroupsResult].

        Each broker lists the groups it coordinates; a broker that cannot be asked adds its
        error to ``errors`` and the others' groups are still ``valid``. ``states``: only
        groups in one of these states; ``types``: only groups of these types (CONSUMER,
        CLASSIC; UNKNOWN matches nothing a broker lists, as in confluent-kafka it is no type).
        """
        wanted = set(states or [])
        for state in wanted:
            if not isinstance(state, ConsumerGroupState):
                raise TypeError(f"states must be ConsumerGroupState values, got {state!r}")
        wanted_types = set(types or [])
        for group_type in wanted_types:
            if not isinstance(group_type, ConsumerGroupType):
                raise TypeError(f"types must be ConsumerGroupType values, got {group_type!r}")
        if ConsumerGroupType.UNKNOWN in wanted_types:
            raise ValueError("types cannot include ConsumerGroupType.UNKNOWN: list CONSUMER and/or CLASSIC groups")
        timeout = self._timeout(request_timeout)
        request = broker_pb2.ListGroupsRequest(
            states_filter=sorted(state.state_name for state in wanted), types_filter=sorted(group_type.type_name for group_type in wanted_types)
        )

        def call() -> dict[str, tuple[KafkaException | None, Any]]:
            deadline = time.monotonic() + timeout
            brokers = self._cluster.list_topics(None, timeout).brokers
            listings: dict[str, ConsumerGroupListing] = {}
            errors: list[KafkaError] = []
            for broker in sorted(brokers.values(), key=lambda node: node.id):
                address = f"{broker.host}:{broker.port}"
                try:
                    response = self._cluster.call("ListGroups", request, address=address, timeout=max(deadline - time.monotonic(), 0.001))
                except KafkaException as failure:
                    errors.append(KafkaError(failure.error.code(), f"ListGroups at broker {broker.id} ({address}): {failure.error.str()}"))
                    continue
                if response.error_code:
                    errors.append(
                        KafkaError(
                            response.error_code,
                            f"ListGroups at broker {broker.id} ({address}): {response.error_message or KafkaError(response.error_code).str()}",
                        )
                    )
                    continue
                for group in response.groups:
                    state = ConsumerGroupState.parse(group.state)
                    group_type = ConsumerGroupType.parse(group.group_type)
                    if (wanted and state not in wanted) or (wanted_types and group_type not in wanted_types):
                        continue
                    # Kafka's "simple" group: no members' protocol, only committed offsets (an empty protocol type).
                    listings.setdefault(group.group_id, ConsumerGroupListing(group.group_id, not group.protocol_type, state, group_type))
            result = ListConsumerGroupsResult(sorted(listings.values(), key=lambda listing: listing.group_id), errors)
            return {"groups": (None, result)}

        return self._run(["groups"], call)["groups"]

    def describe_consumer_groups(
        self, group_ids: list[str], request_timeout: float | None = None, include_authorized_operations: bool = False
    ) -> dict[str, Future]:
        """Describe groups at their coordinators -> {group_id: Future[ConsumerGroupDescription]}.

        An unknown group fails its future with GROUP_ID_NOT_FOUND (or whatever the
        coordinator answers: GROUP_AUTHORIZATION_FAILED...). With ``include_authorized_operations``
        each description lists the caller's AclOperations on the group (else None).
        """
        names = _check_group_ids(group_ids)
        timeout = self._timeout(request_timeout)

        def describe(group_id: str, remaining: float) -> ConsumerGroupDescription:
            deadline = time.monotonic() + remaining
            request = broker_pb2.ConsumerGroupDescribeRequest(group_ids=[group_id], include_authorized_operations=bool(include_authorized_operations))
            response = self._coordinators.call(group_id, "ConsumerGroupDescribe", request, timeout=remaining, error_of=_groups_coordinator_error)
            address = self._coordinators.address(group_id, timeout=max(deadline - time.monotonic(), 0.001))
            group = _answer_for(group_id, response.groups)
            return self._description(group, address)

        return self._run(names, lambda: self._per_group(names, str, describe, timeout))

    def _description(self, group: broker_pb2.GroupDescription, coordinator_address: str) -> ConsumerGroupDescription:
        host, _, port = coordinator_address.rpartition(":")
        members = [
            MemberDescription(
                member.member_id,
                member.client_id,
                member.client_host,
                MemberAssignment(_topic_partitions(member.assignment)),
                group_instance_id=member.instance_id or None,
                target_assignment=MemberAssignment(_topic_partitions(member.target_assignment)),
                member_epoch=member.member_epoch,
                subscribed_topics=list(member.subscribed_topic_names),
                subscribed_topic_regex=member.subscribed_topic_regex or None,
            )
            for member in group.members
        ]
        return ConsumerGroupDescription(
            group.group_id,
            # Kafka's "simple" group: no members' protocol (an empty protocol type), only offsets committed without one.
            is_simple_consumer_group=not group.protocol_type and not group.members,
            members=members,
            partition_assignor=group.assignor_name,
            state=ConsumerGroupState.parse(group.state),
            coordinator=Node(self._coordinators.node_id(coordinator_address), host, int(port)),
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            type=ConsumerGroupType.parse(group.group_type),
            authorized_operations=operations_named(group.authorized_operations_included, list(group.authorized_operations)),
        )

    def delete_consumer_groups(self, group_ids: list[str], request_timeout: float | None = None) -> dict[str, Future]:
        """Delete groups and their committed offsets -> {group_id: Future[None]}.

        A group with members fails with NON_EMPTY_GROUP, an unknown one with GROUP_ID_NOT_FOUND.
        """
        names = _check_group_ids(group_ids)
        timeout = self._timeout(request_timeout)

        def delete(group_id: str, remaining: float) -> None:
            request = broker_pb2.DeleteGroupsRequest(group_ids=[group_id])
            response = self._coordinators.call(group_id, "DeleteGroups", request, timeout=remaining, error_of=_groups_coordinator_error)
            _answer_for(group_id, response.groups)

        return self._run(names, lambda: self._per_group(names, str, delete, timeout))

    def list_consumer_group_offsets(
        self, list_consumer_group_offsets_request: list[ConsumerGroupTopicPartitions], require_stable: bool = False, request_timeout: float | None = None
    ) -> dict[str, Future]:
        """Committed offsets -> {group_id: Future[ConsumerGroupTopicPartitions]}.

        ``topic_partitions`` None: every partition the group committed. Partitions without a
        committed offset have offset OFFSET_INVALID; a partition's own error is in its ``error``.
        ``require_stable`` is accepted for confluent-kafka compatibility (Weir has no
        transactional offsets to wait for).
        """
        requests = _check_group_requests(list_consumer_group_offsets_request, partitions_required=False)
        timeout = self._timeout(request_timeout)

        def fetch(item: ConsumerGroupTopicPartitions, remaining: float) -> ConsumerGroupTopicPartitions:
            by_topic: dict[str, list[int]] = {}
            for tp in item.topic_partitions or []:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            request = broker_pb2.OffsetFetchRequest(
                group_id=item.group_id, topics=[broker_pb2.OffsetFetchTopic(topic=topic, partitions=numbers) for topic, numbers in by_topic.items()]
            )
            response = self._coordinators.call(item.group_id, "OffsetFetch", request, timeout=remaining)
            if response.error_code:
                raise KafkaException(KafkaError(response.error_code, response.error_message or None))
            partitions = []
            for topic in response.topics:
                for answer in topic.partitions:
                    tp = TopicPartition(
                        topic.topic,
                        answer.partition,
                        answer.committed_offset if answer.committed_offset >= 0 else OFFSET_INVALID,
                        metadata=decode_commit_metadata(answer.metadata),
                        leader_epoch=answer.committed_leader_epoch if answer.committed_leader_epoch >= 0 else None,
                    )
                    tp.error = KafkaError(answer.error_code, answer.error_message or None) if answer.error_code else None
                    partitions.append(tp)
            return ConsumerGroupTopicPartitions(item.group_id, sorted(partitions))

        return self._run([item.group_id for item in requests], lambda: self._per_group(requests, _group_id_of, fetch, timeout))

    def alter_consumer_group_offsets(
        self, alter_consumer_group_offsets_request: list[ConsumerGroupTopicPartitions], request_timeout: float | None = None
    ) -> dict[str, Future]:
        """Set committed offsets of groups without members -> {group_id: Future[ConsumerGroupTopicPartitions]}.

        The coordinator refuses a group that has members (UNKNOWN_MEMBER_ID naming how many:
        stop them first); the future then fails. A partition refused alone carries its error
        in ``error`` of the result's TopicPartition.
        """
        requests = _check_group_requests(alter_consumer_group_offsets_request, partitions_required=True)
        timeout = self._timeout(request_timeout)

        def alter(item: ConsumerGroupTopicPartitions, remaining: float) -> ConsumerGroupTopicPartitions:
            by_topic: dict[str, list[broker_pb2.OffsetCommitPartition]] = {}
            for tp in item.topic_partitions or []:
                by_topic.setdefault(tp.topic, []).append(
                    broker_pb2.OffsetCommitPartition(
                        partition=tp.partition,
                        committed_offset=tp.offset,
                        committed_leader_epoch=tp.leader_epoch if tp.leader_epoch is not None else -1,
                        metadata=encode_commit_metadata(tp.metadata),
                    )
                )
            request = broker_pb2.OffsetCommitRequest(
                group_id=item.group_id,
                generation_id=-1,
                member_id="",
                topics=[broker_pb2.OffsetCommitTopic(topic=topic, partitions=items) for topic, items in by_topic.items()],
            )
            response = self._coordinators.call(item.group_id, "OffsetCommit", request, timeout=remaining)
            if response.error_code:
                raise KafkaException(KafkaError(response.error_code, response.error_message or None))
            errors = {
                (topic.topic, answer.partition): KafkaError(answer.error_code, answer.error_message or None)
                for topic in response.topics
                for answer in topic.partitions
                if answer.error_code
            }
            partitions = []
            for tp in item.topic_partitions or []:
                result = TopicPartition(tp.topic, tp.partition, tp.offset, tp.metadata, tp.leader_epoch)
                result.error = errors.get((tp.topic, tp.partition))
                partitions.append(result)
            return ConsumerGroupTopicPartitions(item.group_id, partitions)

        return self._run([item.group_id for item in requests], lambda: self._per_group(requests, _group_id_of, alter, timeout))

    @staticmethod
    def _per_group(
        items: list[Item], group_of: Callable[[Item], str], run: Callable[[Item, float], Any], timeout: float
    ) -> dict[str, tuple[KafkaException | None, Any]]:
        """``run(item, remaining seconds)`` for each group's item in turn, each group's failure its own."""
        deadline = time.monotonic() + timeout
        outcomes: dict[str, tuple[KafkaException | None, Any]] = {}
        for item in items:
            try:
                outcomes[group_of(item)] = (None, run(item, max(deadline - time.monotonic(), 0.001)))
            except KafkaException as failure:
                outcomes[group_of(item)] = (failure, None)
        return outcomes

    # ------------------------------------------------------------------ transactions (Weir extensions shaped like Java's Admin)

    def list_transactions(
        self, states: list[str] | None = None, producer_ids: list[int] | None = None, min_duration_ms: int | None = None, request_timeout: float | None = None
    ) -> Future:
        """The tenant's transactional ids at every broker's coordinator -> Future[list[TransactionListing]] sorted by id.

        ``states``: Kafka's state names (Ongoing, PrepareCommit, ...); ``producer_ids``;
        ``min_duration_ms``: only transactions open at least that long (Java's filterOnDuration).
        """
        timeout = self._timeout(request_timeout)

        def call() -> dict[str, tuple[KafkaException | None, Any]]:
            listed = self._transactions.list_transactions(
                states=states or (), producer_ids=producer_ids or (), min_duration_ms=-1 if min_duration_ms is None else min_duration_ms, timeout=timeout
            )
            return {"transactions": (None, listed)}

        return self._run(["transactions"], call)["transactions"]

    def describe_transactions(self, transactional_ids: list[str], request_timeout: float | None = None) -> dict[str, Future]:
        """Each id's state at its coordinator -> {transactional_id: Future[TransactionDescription]} (TRANSACTIONAL_ID_NOT_FOUND when unknown)."""
        ids = _check_transactional_ids(transactional_ids)
        timeout = self._timeout(request_timeout)
        return self._run(
            ids,
            lambda: self._per_group(
                ids, str, lambda transactional_id, remaining: self._transactions.describe_transaction(transactional_id, timeout=remaining), timeout
            ),
        )

    def abort_transaction(self, transactional_id: str, request_timeout: float | None = None) -> Future:
        """Abort the id's ongoing transaction at its coordinator, fencing its producer -> Future[None].

        INVALID_TXN_STATE when no transaction is open, CONCURRENT_TRANSACTIONS while one is completing.
        """
        (checked,) = _check_transactional_ids([transactional_id])
        timeout = self._timeout(request_timeout)

        def call() -> dict[str, tuple[KafkaException | None, Any]]:
            self._transactions.abort_transaction(checked, timeout=timeout)
            return {checked: (None, None)}

        return self._run([checked], call)[checked]

    def find_hanging_transactions(self, topic: str, partitions: list[int] | None = None, request_timeout: float | None = None) -> Future:
        """Transactions left open in the topic's partitions that no coordinator will end -> Future[list[HangingTransaction]] (kafka-transactions.sh find-hanging)."""
        if not _is_non_empty_list_of([topic], str) or not topic:  # checked at run time: callers need not be type-checked
            raise TypeError("Expected a topic name")
        timeout = self._timeout(request_timeout)

        def call() -> dict[str, tuple[KafkaException | None, Any]]:
            return {topic: (None, self._transactions.find_hanging(topic, partitions, timeout=timeout))}

        return self._run([topic], call)[topic]

    def abort_hanging_transaction(
        self, topic: str, partition: int, producer_id: int, producer_epoch: int, coordinator_epoch: int, request_timeout: float | None = None
    ) -> Future:
        """Write an ABORT marker for a hanging transaction in its partition (kafka-transactions.sh abort) -> Future[None].

        The ids and epochs are those find_hanging_transactions reported.
        """
        target = HangingTransaction(topic, partition, producer_id, producer_epoch, coordinator_epoch, start_offset=-1, last_timestamp_ms=-1, open_for_ms=-1)
        timeout = self._timeout(request_timeout)

        def call() -> dict[str, tuple[KafkaException | None, Any]]:
            self._transactions.abort_hanging(target, timeout=timeout)
            return {topic: (None, None)}

        return self._run([topic], call)[topic]

    # ------------------------------------------------------------------ cluster and topics

    def describe_cluster(self, request_timeout: float | None = None, include_authorized_operations: bool = False) -> Future:
        """The cluster -> Future[DescribeClusterResult]: id, controller (the answering broker, as
        Weir's controller is not a broker clients reach), brokers, and with
        ``include_authorized_operations`` the caller's AclOperations on the cluster."""
        timeout = self._timeout(request_timeout)
        request = broker_pb2.DescribeClusterRequest(include_authorized_operations=bool(include_authorized_operations))

        def call() -> dict[str, tuple[KafkaException | None, Any]]:
            return {"cluster": (None, cluster_description(self._cluster.call_any("DescribeCluster", request, timeout=timeout)))}

        return self._run(["cluster"], call)["cluster"]

    def describe_topics(self, topics: TopicCollection, request_timeout: float | None = None, include_authorized_operations: bool = False) -> dict[str, Future]:
        """Describe topics -> {name: Future[TopicDescription]}; an unknown (or forbidden) topic fails its future.

        With ``include_authorized_operations`` each description lists the caller's AclOperations
        on the topic (else ``authorized_operations`` is None).
        """
        if not isinstance(topics, TopicCollection):
            raise TypeError("Expected input to be instance of TopicCollection")
        given: object = topics.topic_names  # checked at run time: callers need not be type-checked
        if not isinstance(given, list) or not all(isinstance(name, str) and name for name in given):
            raise TypeError("Expected list of topic names to be described")
        names: list[str] = list(dict.fromkeys(given))
        timeout = self._timeout(request_timeout)

        def call() -> dict[str, tuple[KafkaException | None, Any]]:
            if not names:
                return {}
            request = broker_pb2.MetadataRequest(topics=names, include_topic_authorized_operations=bool(include_authorized_operations))
            response = self._cluster.call_any("Metadata", request, timeout=timeout)
            nodes = nodes_of(list(response.brokers))
            return {
                topic.name: (_item_error(topic.error_code, topic.error_message), None if topic.error_code else topic_description(topic, nodes))
                for topic in response.topics
            }

        return self._run(names, call)

    def delete_records(
        self, topic_partition_offsets: list[TopicPartition], request_timeout: float | None = None, operation_timeout: float | None = None
    ) -> dict[TopicPartition, Future]:
        """Delete every record below each offset (OFFSET_END, -1: all) -> {TopicPartition: Future[DeletedRecords]}.

        Asked of each partition's leader, which answers once the in-sync replicas followed (up to
        ``operation_timeout``, else socket.timeout.ms); a leader that moved is looked up again.
        """
        if not _is_non_empty_list_of(topic_partition_offsets, TopicPartition):
            raise TypeError("Expected non-empty list of TopicPartition objects")
        seen: set[tuple[str, int]] = set()
        for tp in topic_partition_offsets:
            if tp.partition < 0 or (tp.offset < 0 and tp.offset != OFFSET_END):
                raise ValueError(f"{tp!r}: needs a partition and an offset (or OFFSET_END to delete every record)")
            if (tp.topic, tp.partition) in seen:
                raise ValueError(f"{tp.topic} [{tp.partition}] is given twice")
            seen.add((tp.topic, tp.partition))
        timeout = self._timeout(request_timeout)
        wait_ms = int((self._default_timeout if operation_timeout is None or operation_timeout < 0 else operation_timeout) * 1000)
        keys = {TopicPartition(tp.topic, tp.partition): tp for tp in topic_partition_offsets}

        def ask(address: str, items: dict[TopicPartition, TopicPartition], remaining: float) -> Iterable[tuple[TopicPartition, int, str, Any]]:
            by_topic: dict[str, list[broker_pb2.DeleteRecordsPartition]] = {}
            for key, tp in items.items():
                by_topic.setdefault(key.topic, []).append(broker_pb2.DeleteRecordsPartition(partition=key.partition, offset=tp.offset))
            request = broker_pb2.DeleteRecordsRequest(
                topics=[broker_pb2.DeleteRecordsTopic(topic=topic, partitions=partitions) for topic, partitions in by_topic.items()], timeout_ms=wait_ms
            )
            response = self._cluster.call("DeleteRecords", request, address=address, timeout=remaining)
            return [
                (TopicPartition(result.topic, result.partition), result.error_code, result.error_message, DeletedRecords(result.low_watermark))
                for result in response.results
            ]

        def call() -> dict[TopicPartition, tuple[KafkaException | None, Any]]:
            outcomes = self._at_leaders(keys, ask, time.monotonic() + timeout)
            return {tp: outcomes[key] for key, tp in keys.items() if key in outcomes}

        return self._run(topic_partition_offsets, call)

    def _at_leaders(
        self,
        pending: dict[TopicPartition, Item],
        ask: Callable[[str, dict[TopicPartition, Item], float], Iterable[tuple[TopicPartition, int, str, Any]]],
        deadline: float,
    ) -> dict[TopicPartition, tuple[KafkaException | None, Any]]:
        """``ask(leader address, its partitions, remaining seconds)`` for each leader -> (partition, error code, message, result).

        Partitions whose leader moved, is unknown or cannot be reached are asked again at the
        new leader after a metadata refresh, until ``deadline``; then their last error stands.
        """
        outcomes: dict[TopicPartition, tuple[KafkaException | None, Any]] = {}
        for attempt in range(1_000_000):  # ends at the deadline long before
            retry: dict[TopicPartition, tuple[Item, KafkaException]] = {}
            by_leader: dict[str, dict[TopicPartition, Item]] = {}
            for key, item in pending.items():
                info = self._cluster.topic(key.topic, timeout=max(deadline - time.monotonic(), 0.001))
                if info.error_code or key.partition >= info.partition_count:
                    code = info.error_code or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    outcomes[key] = (KafkaException(KafkaError(code, f"{key.topic} [{key.partition}]: {info.error_message or 'no such partition'}")), None)
                    continue
                address = self._cluster.leader_address(key.topic, key.partition)
                if address is None:
                    self._cluster.mark_stale(key.topic)
                    retry[key] = (item, KafkaException(KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{key.topic} [{key.partition}]: no leader")))
                    continue
                by_leader.setdefault(address, {})[key] = item
            for address, items in by_leader.items():
                try:
                    answers = ask(address, items, max(deadline - time.monotonic(), 0.001))
                except KafkaException as failure:
                    if not failure.error.retriable():
                        raise
                    for key, item in items.items():
                        self._cluster.mark_stale(key.topic)
                        retry[key] = (item, failure)
                    continue
                for key, code, message, result in answers:
                    error = _item_error(code, message)
                    if error is not None and code in _LEADER_MOVED and key in items:
                        self._cluster.mark_stale(key.topic)
                        retry[key] = (items[key], error)
                        continue
                    outcomes[key] = (error, None if error else result)
            pause = self._cluster.backoff(attempt)
            if not retry or time.monotonic() + pause >= deadline:
                for key, (_, error) in retry.items():
                    outcomes[key] = (error, None)
                return outcomes
            time.sleep(pause)
            pending = {key: item for key, (item, _) in retry.items()}
        return outcomes

    def list_groups(self, group: str | None = None, timeout: float = -1) -> list[GroupMetadata]:
        """confluent-kafka's legacy group listing (blocking): every group, or ``group``, with its coordinator and members."""
        wait = self._timeout(None if timeout < 0 else timeout)
        deadline = time.monotonic() + wait
        if group is not None:
            names = [group]
        else:
            listed = self.list_consumer_groups(request_timeout=wait).result(timeout=wait + 1)
            names = [listing.group_id for listing in listed.valid]
        if not names:
            return []
        described = self.describe_consumer_groups(names, request_timeout=max(deadline - time.monotonic(), 0.001))
        groups = []
        for name, future in described.items():
            try:
                description = future.result(timeout=max(deadline - time.monotonic(), 0.001) + 1)
            except KafkaException as failure:
                if group is not None:
                    raise
                groups.append(GroupMetadata(None, name, failure.error, "Dead", "", "", []))
                continue
            coordinator = description.coordinator
            members = [GroupMember(member.member_id, member.client_id, member.host) for member in description.members]
            groups.append(
                GroupMetadata(
                    BrokerMetadata(coordinator.id, coordinator.host, coordinator.port) if coordinator is not None else None,
                    name,
                    None,
                    description.state.state_name if description.state is not None else "Unknown",
                    "" if description.is_simple_consumer_group else "consumer",
                    description.partition_assignor or "",
                    members,
                )
            )
        return groups

    # ------------------------------------------------------------------ ACLs

    def create_acls(self, acls: list[AclBinding], request_timeout: float | None = None) -> dict[AclBinding, Future]:
        """Create ACL bindings -> {AclBinding: Future[None]} (needs ALTER on the cluster; the
        control plane stores them and pushes them to every broker)."""
        if not _is_non_empty_list_of_exactly(acls, AclBinding):
            raise TypeError("Expected list of AclBinding")
        if len(set(acls)) != len(acls):
            raise ValueError("duplicate ACL bindings not allowed")
        timeout = self._timeout(request_timeout)
        request = broker_pb2.CreateAclsRequest(creations=[binding_message(acl) for acl in acls])

        def call() -> dict[AclBinding, tuple[KafkaException | None, Any]]:
            response = self._cluster.call_any("CreateAcls", request, timeout=timeout)
            return {acl: (_item_error(result.error_code, result.error_message), None) for acl, result in zip(acls, response.results)}

        return self._run(acls, call)

    def describe_acls(self, acl_binding_filter: AclBindingFilter, request_timeout: float | None = None) -> Future:
        """The bindings the filter matches -> Future[list[AclBinding]] (needs DESCRIBE on the cluster)."""
        if type(acl_binding_filter) is not AclBindingFilter:
            raise TypeError("Expected an AclBindingFilter")
        timeout = self._timeout(request_timeout)
        request = broker_pb2.DescribeAclsRequest(filter=filter_message(acl_binding_filter))

        def call() -> dict[str, tuple[KafkaException | None, Any]]:
            response = self._cluster.call_any("DescribeAcls", request, timeout=timeout)
            error = _item_error(response.error_code, response.error_message)
            return {"acls": (error, None if error else [binding_of(binding) for binding in response.bindings])}

        return self._run(["acls"], call)["acls"]

    def delete_acls(self, acl_binding_filters: list[AclBindingFilter], request_timeout: float | None = None) -> dict[AclBindingFilter, Future]:
        """Delete the bindings each filter matches -> {AclBindingFilter: Future[list[AclBinding]]} (the deleted ones)."""
        if not _is_non_empty_list_of_exactly(acl_binding_filters, AclBindingFilter):
            raise TypeError("Expected list of AclBindingFilter")
        if len(set(acl_binding_filters)) != len(acl_binding_filters):
            raise ValueError("duplicate ACL binding filters not allowed")
        timeout = self._timeout(request_timeout)
        request = broker_pb2.DeleteAclsRequest(filters=[filter_message(item) for item in acl_binding_filters])

        def call() -> dict[AclBindingFilter, tuple[KafkaException | None, Any]]:
            response = self._cluster.call_any("DeleteAcls", request, timeout=timeout)
            outcomes: dict[AclBindingFilter, tuple[KafkaException | None, Any]] = {}
            for item, result in zip(acl_binding_filters, response.results):
                error = _item_error(result.error_code, result.error_message)
                outcomes[item] = (error, None if error else [binding_of(binding) for binding in result.deleted])
            return outcomes

        return self._run(acl_binding_filters, call)

    # ------------------------------------------------------------------ leader elections

    def elect_leaders(
        self,
        election_type: ElectionType,
        partitions: list[TopicPartition] | None = None,
        request_timeout: float | None = None,
        operation_timeout: float | None = None,
    ) -> Future:
        """Elect leaders (Kafka's ElectLeaders) -> Future[{TopicPartition: KafkaError | None}].

        PREFERRED gives leadership back to each partition's first replica when it is alive and
        in sync; UNCLEAN elects a leader for a partition that has none (any live replica only
        where the topic sets unclean.leader.election.enable). ``partitions`` None: every
        partition of the caller's topics whose election is needed. Needs ALTER on the cluster.
        """
        check_elect_leaders(election_type, partitions)
        timeout = self._timeout(request_timeout)
        wait_ms = int((timeout if operation_timeout is None or operation_timeout < 0 else operation_timeout) * 1000)

        def call() -> dict[str, tuple[KafkaException | None, Any]]:
            request = election_request(election_type, partitions, wait_ms)
            return {"elections": (None, election_results(self._cluster.call_any("ElectLeaders", request, timeout=timeout)))}

        return self._run(["elections"], call)["elections"]

    def cluster_id(self, timeout: float = -1) -> str | None:
        """The cluster's id (blocking), as confluent-kafka's clients report it."""
        return self._cluster.list_topics(None, timeout).cluster_id

    # ------------------------------------------------------------------ SCRAM credentials

    def describe_user_scram_credentials(self, users: list[str] | None = None, request_timeout: float | None = None) -> Future | dict[str, Future]:
        """The SCRAM credentials (mechanism, iterations) of the tenant's SCRAM users and API keys.

        ``users`` None: one Future[{user: UserScramCredentialsDescription}] of every user and key
        with a credential; else {user: Future[UserScramCredentialsDescription]}, an unknown user (or
        another tenant's key) failing with RESOURCE_NOT_FOUND. Needs DESCRIBE on the cluster.
        """
        given: object = users  # checked at run time: callers need not be type-checked
        if given is not None and (not isinstance(given, list) or not given or not all(isinstance(user, str) and user for user in given)):
            raise TypeError("Expected users to be None or a non-empty list of user names")
        if given is not None and len(set(given)) != len(given):
            raise ValueError("Duplicate users not allowed")
        names: list[str] = list(given) if isinstance(given, list) else []
        timeout = self._timeout(request_timeout)
        request = broker_pb2.DescribeUserScramCredentialsRequest(users=names)

        def described(result: broker_pb2.UserScramCredentialsResult) -> UserScramCredentialsDescription:
            infos = [ScramCredentialInfo(_SCRAM_MECHANISMS.get(info.mechanism, ScramMechanism.UNKNOWN), info.iterations) for info in result.credential_infos]
            return UserScramCredentialsDescription(result.user, infos)

        def call() -> dict[str, tuple[KafkaException | None, Any]]:
            response = self._cluster.call_any("DescribeUserScramCredentials", request, timeout=timeout)
            error = _item_error(response.error_code, response.error_message)
            if error is not None:
                raise error
            if not names:
                return {"all": (None, {result.user: described(result) for result in response.results})}
            return {result.user: (_item_error(result.error_code, result.error_message), described(result)) for result in response.results}

        if not names:
            return self._run(["all"], call)["all"]
        return self._run(names, call)

    def alter_user_scram_credentials(self, alterations: list[UserScramCredentialAlteration], request_timeout: float | None = None) -> dict[str, Future]:
        """Create, replace or delete SCRAM credentials of the tenant's users -> {user: Future[None]}.

        As confluent-kafka's: ``UserScramCredentialUpsertion`` (the salt is random when None) and
        ``UserScramCredentialDeletion``; the password never leaves this process (its PBKDF2
        salted form is sent, as Kafka's protocol does). Needs ALTER on the cluster. A user's
        future fails with Kafka's code: UNACCEPTABLE_CREDENTIAL (iterations outside 4096..16384,
        a reserved name), UNSUPPORTED_SASL_MECHANISM, DUPLICATE_RESOURCE (a mechanism twice),
        RESOURCE_NOT_FOUND (deleting what is not there). The user then logs in with
        SASL/SCRAM as ``<user>@<tenant id>`` (``weir.admin_scram.scram_login_name``).
        """
        self._check_scram_alterations(alterations)
        users = list(dict.fromkeys(alteration.user for alteration in alterations))
        request = broker_pb2.AlterUserScramCredentialsRequest(
            deletions=[
                broker_pb2.ScramCredentialDeletion(user=item.user, mechanism=_scram_mechanism_name(item.mechanism))
                for item in alterations
                if isinstance(item, UserScramCredentialDeletion)
            ],
            upsertions=[_scram_upsertion(item) for item in alterations if isinstance(item, UserScramCredentialUpsertion)],
        )
        timeout = self._timeout(request_timeout)

        def call() -> dict[str, tuple[KafkaException | None, Any]]:
            response = self._cluster.call_any("AlterUserScramCredentials", request, timeout=timeout)
            return {result.user: (_item_error(result.error_code, result.error_message), None) for result in response.results}

        return self._run(users, call)

    @staticmethod
    def _check_scram_alterations(alterations: object) -> None:
        """confluent-kafka's checks of the alterations (TypeError / ValueError before anything is sent)."""
        if not isinstance(alterations, list):
            raise TypeError("Expected input to be list")
        if not alterations:
            raise ValueError("Expected at least one alteration")
        for alteration in alterations:
            if not isinstance(alteration, (UserScramCredentialUpsertion, UserScramCredentialDeletion)):
                raise TypeError("Expected each element of list 'alterations' to be either a UserScramCredentialUpsertion or a UserScramCredentialDeletion")
            if not isinstance(alteration.user, str):
                raise TypeError("'user' must be a string")
            if not alteration.user:
                raise ValueError("'user' cannot be empty")
            if isinstance(alteration, UserScramCredentialDeletion):
                if not isinstance(alteration.mechanism, ScramMechanism):
                    raise TypeError("Expected the mechanism to be ScramMechanism Type")
            else:
                _check_scram_upsertion(alteration)

    def poll(self, timeout: float | None = None) -> int:
        """Present for confluent-kafka compatibility: results arrive through futures, nothing to serve."""
        return 0

    def close(self) -> None:
        """Wait for running requests and close connections (not in confluent-kafka; optional)."""
        self._executor.shutdown(wait=True)
        self._cluster.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __len__(self) -> int:
        return 0
