"""Mapping typed errors to what a client reads: Kafka's code and a message with the tenant's plain names."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from broker_nodes.cluster_state import NotLeaderOrFollowerError
from broker_nodes.replication.errors import FencedLeaderEpochError
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import Operation, ResourceType
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import error_code_and_message

NO_ERROR = 0


@dataclass(frozen=True, slots=True)
class LeaderHint:
    """Who leads a partition now, sent with NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH so a
    client can go to the new leader without asking for metadata first (KIP-951)."""

    leader_id: int
    leader_epoch: int


def leader_hint(broker: Broker, error: BaseException, qualified_topic: str, partition: int) -> LeaderHint | None:
    """The partition's leader in the cluster map when ``error`` says this broker is not (or no longer) it."""
    if not isinstance(error, (NotLeaderOrFollowerError, FencedLeaderEpochError)):
        return None
    snapshot = broker.cluster_state.snapshot
    topic = snapshot.topics.get(qualified_topic) if snapshot is not None else None
    if topic is None or not 0 <= partition < len(topic.partitions):
        return None
    assignment = topic.partitions[partition]
    return LeaderHint(assignment.leader_id, assignment.leader_epoch) if assignment.leader_id >= 0 else None


def allowed_topics(call: CallContext, operation: Operation, topics: Iterable[str]) -> set[str]:
    """The plain topic names among ``topics`` on which the caller may ``operation``, each asked once
    (a request names a topic once per partition, and an ACL check walks the caller's rules)."""
    return {topic for topic in set(topics) if call.may(operation, ResourceType.TOPIC, topic)}


def qualified_names(call: CallContext, topics: Iterable[str]) -> dict[str, str]:
    """Plain topic name -> stored (tenant-qualified) name, each qualified once."""
    return {topic: call.qualify(topic) for topic in set(topics)}


def plain_error(error: BaseException, call: CallContext, topic: str) -> tuple[int, str]:
    """(Kafka error code, message) for ``error`` met on the caller's ``topic`` (plain name).

    Storage and replication errors name the stored (tenant-qualified) topic; the caller must
    only ever read the name it chose, so the qualified name is replaced by the plain one.
    """
    code, message = error_code_and_message(error)
    qualified = call.qualify(topic)
    if qualified != topic:
        message = message.replace(qualified, topic)
    return code, message
