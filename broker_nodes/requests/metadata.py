"""Metadata for both front doors: which topics the caller sees, their partitions, leaders and replicas.

Listing every topic shows only the caller's tenant's topics it may DESCRIBE. Naming topics
answers each in request order (repeated names once, as Kafka does): a topic the caller may not
DESCRIBE is TOPIC_AUTHORIZATION_FAILED whether or not it exists. An unknown one is auto-created
when the client asks (allow_auto_topic_creation: librdkafka's allow.auto.create.topics, a
producer's default) and the broker's auto.create.topics.enable is on: a standalone broker's
tenant-less caller gets it here; a tenant's topic is the control plane's business, so as
KRaft brokers do the broker forwards a CreateTopics with the defaults (-1 partitions and
replication factor) to the controller, authorized like one (CREATE on the cluster or the
topic, else TOPIC_AUTHORIZATION_FAILED), and answers the topic once the new map arrived, else
LEADER_NOT_AVAILABLE (retriable: the client asks again).

The broker list is each transport's own (the gRPC and Kafka listeners are different
endpoints); this module answers the topics, the cluster id and the controller id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from broker_nodes.cluster_state import ClusterSnapshot, ManagedTopic
from broker_nodes.replica_manager import LEADER_EPOCH
from broker_nodes.requests.cluster import cluster_id
from broker_nodes.requests.outcomes import NO_ERROR
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import Operation, ResourceType
from broker_nodes.security.errors import TopicAuthorizationError
from broker_nodes.server import topic_forwarding
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import error_code_and_message
from broker_nodes.topic_registry import TopicMetadata, UnknownTopicOrPartitionError
from grpc_protos.weir.v1 import broker_pb2
from weir.errors import ErrorCode

UNKNOWN_TOPIC_OR_PARTITION = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
LEADER_NOT_AVAILABLE = ErrorCode.LEADER_NOT_AVAILABLE  # a topic being created: clients ask again
TOPIC_AUTHORIZATION_FAILED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
TOPIC_ALREADY_EXISTS = ErrorCode.TOPIC_ALREADY_EXISTS  # created meanwhile by another client: as good
INVALID_TOPIC_EXCEPTION = ErrorCode.INVALID_TOPIC_EXCEPTION
DEFAULT_COUNT = -1  # CreateTopics' "the defaults" for partitions and replication factor


@dataclass(frozen=True, slots=True)
class PartitionDescription:
    partition: int
    leader_id: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicDescription:
    """One topic of a Metadata answer, by the caller's plain name; ``topic_id`` is a UUID string or ''."""

    name: str
    error_code: int = NO_ERROR
    error_message: str = ""
    is_internal: bool = False
    topic_id: str = ""
    partitions: tuple[PartitionDescription, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class MetadataResult:
    topics: list[TopicDescription]
    cluster_id: str
    # Weir has no controller among its brokers (the controller is a control-plane process):
    # the answering broker names itself, which every client accepts.
    controller_id: int
    snapshot: ClusterSnapshot | None  # the cluster map the answer was built from (None: standalone)


# The operations Kafka reports in a topic's authorized operations (KIP-430).
TOPIC_OPERATIONS = (
    Operation.READ,
    Operation.WRITE,
    Operation.CREATE,
    Operation.DELETE,
    Operation.ALTER,
    Operation.DESCRIBE,
    Operation.DESCRIBE_CONFIGS,
    Operation.ALTER_CONFIGS,
)


def authorized_topic_operations(call: CallContext, topic: str) -> list[Operation]:
    """The topic operations the caller's ACLs allow on ``topic`` (plain name), for KIP-430 answers."""
    return [operation for operation in TOPIC_OPERATIONS if call.may(operation, ResourceType.TOPIC, topic)]


def describe(broker: Broker, call: CallContext, names: Sequence[str] | None, *, allow_auto_topic_creation: bool) -> MetadataResult:
    """The topics named (None or empty: every topic the caller may describe)."""
    snapshot = broker.cluster_state.snapshot
    managed_topics: Mapping[str, ManagedTopic] = snapshot.topics if snapshot is not None else {}
    topics = []
    if not names:
        for topic in broker.topic_admin.describe_topics([], allow_auto_create=False):
            assert isinstance(topic, TopicMetadata)
            if call.owns(topic.name) and call.may(Operation.DESCRIBE, ResourceType.TOPIC, call.plain(topic.name)):
                topics.append(_topic_description(broker, topic, managed_topics.get(topic.name), call))
    else:
        auto_create = allow_auto_topic_creation and not broker.managed and not call.has_tenant
        forward_creation = allow_auto_topic_creation and broker.controller is not None and call.has_tenant and bool(broker.config["auto.create.topics.enable"])
        topics = [_named_topic(broker, call, name, managed_topics, auto_create) for name in dict.fromkeys(names)]
        unknown = [topic.name for topic in topics if topic.error_code == UNKNOWN_TOPIC_OR_PARTITION]
        if forward_creation and unknown:
            created = _created_through_the_controller(broker, call, unknown)
            topics = [created.get(topic.name, topic) for topic in topics]
    return MetadataResult(topics, cluster_id(broker), broker.config.node_id, snapshot)


def _created_through_the_controller(broker: Broker, call: CallContext, names: list[str]) -> dict[str, TopicDescription]:
    """Unknown tenant topics auto-created by the controller in one forwarded CreateTopics (see the module docstring)."""
    assert broker.controller is not None
    creatables = [broker_pb2.CreatableTopic(name=name, num_partitions=DEFAULT_COUNT, replication_factor=DEFAULT_COUNT) for name in names]
    answers = topic_forwarding.create_topics(broker.controller, call, broker_pb2.CreateTopicsRequest(topics=creatables)).topics
    snapshot = broker.cluster_state.snapshot
    described: dict[str, TopicDescription] = {}
    for name, created in zip(names, answers):
        if created.error_code in (TOPIC_AUTHORIZATION_FAILED, INVALID_TOPIC_EXCEPTION):
            described[name] = TopicDescription(name, created.error_code, created.error_message)
        elif created.error_code not in (NO_ERROR, TOPIC_ALREADY_EXISTS):
            message = f"topic {name!r} does not exist and could not be auto-created: {created.error_message}"
            described[name] = TopicDescription(name, UNKNOWN_TOPIC_OR_PARTITION, message)
        else:
            again = _named_topic(broker, call, name, snapshot.topics if snapshot is not None else {}, auto_create=False)
            # The topic itself when the controller's push arrived before its answer, else "being created".
            described[name] = again if again.error_code == NO_ERROR else TopicDescription(name, LEADER_NOT_AVAILABLE, f"topic {name!r} is being created")
    return described


def _named_topic(broker: Broker, call: CallContext, name: str, managed_topics: Mapping[str, ManagedTopic], auto_create: bool) -> TopicDescription:
    if not call.may(Operation.DESCRIBE, ResourceType.TOPIC, name):
        code, message = error_code_and_message(TopicAuthorizationError(name, "describe"))
        return TopicDescription(name, code, message)
    result = broker.topic_admin.describe_topics([call.qualify(name)], allow_auto_create=auto_create)[0]
    if isinstance(result, TopicMetadata) and call.owns(result.name):
        return _topic_description(broker, result, managed_topics.get(result.name), call)
    error = result if isinstance(result, Exception) else UnknownTopicOrPartitionError(name)
    code, message = error_code_and_message(error)
    return TopicDescription(name, code, message.replace(call.qualify(name), name))


def _topic_description(broker: Broker, topic: TopicMetadata, managed: ManagedTopic | None, call: CallContext) -> TopicDescription:
    if managed is not None:
        partitions = tuple(
            PartitionDescription(
                assignment.partition,
                assignment.leader_id,
                assignment.leader_epoch,
                tuple(assignment.replicas),
                # As leader, the ISR this broker keeps is newer than the map's.
                tuple(broker.replication.isr(topic.name, assignment.partition) or assignment.isr),
            )
            for assignment in managed.partitions
        )
    else:
        node_id = broker.config.node_id
        partitions = tuple(PartitionDescription(partition, node_id, LEADER_EPOCH, (node_id,), (node_id,)) for partition in range(topic.partitions))
    return TopicDescription(call.plain(topic.name), is_internal=topic.internal, topic_id=topic.topic_id, partitions=partitions)


def names_of_topic_ids(broker: Broker, call: CallContext, topic_ids: Iterable[str]) -> dict[str, str]:
    """topic id -> the caller's plain name, for the ids of the caller's tenant's topics it may DESCRIBE.

    Another tenant's id is missing from the answer exactly like an id that does not exist
    (UNKNOWN_TOPIC_ID), so ids reveal nothing across tenants.
    """
    wanted = set(topic_ids)
    found = {}
    for topic in broker.registry.topics():
        if topic.topic_id in wanted and call.owns(topic.name):
            plain = call.plain(topic.name)
            if call.may(Operation.DESCRIBE, ResourceType.TOPIC, plain):
                found[topic.topic_id] = plain
    return found
