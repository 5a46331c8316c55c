"""OffsetCommit, OffsetFetch and OffsetDelete for both front doors: a group's committed offsets, in the caller's names.

Authorization as in Kafka: READ on the group for both; READ on each topic committed or
fetched (a denied topic's partition answers TOPIC_AUTHORIZATION_FAILED and is not stored;
listing every commit of a group leaves denied topics out). Group and topic names are
qualified with the caller's tenant on the way in and made plain on the way out, error
messages included, so a tenant never sees another tenant's names.

A commit is checked against its group by the coordinator: a KIP-848 member commits with its
member epoch (``OffsetStore.commit``), a classic member with its generation
(``GroupCoordinator.classic_commit``); a commit without a member id only to a group without
members.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from broker_nodes.coordinator.offset_store import InvalidGroupIdError, OffsetCommitEntry, UnstableOffsetCommitError
from broker_nodes.requests.outcomes import NO_ERROR, plain_error
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import Operation, ResourceType
from broker_nodes.security.errors import GroupAuthorizationError, TopicAuthorizationError
from broker_nodes.server import request_parsing
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import error_code_and_message
from broker_nodes.topic_registry import UnknownTopicOrPartitionError

NO_OFFSET = -1  # Kafka's "no committed offset" (and no leader epoch)


@dataclass(frozen=True, slots=True)
class PartitionResult:
    """One partition's outcome of a commit."""

    topic: str  # plain
    partition: int
    error_code: int = NO_ERROR
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class CommitOutcome:
    """A commit's answer: a whole-request error, or one result per entry in request order."""

    error_code: int = NO_ERROR
    error_message: str = ""
    partitions: list[PartitionResult] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """One partition's committed offset (-1 when none), or its error."""

    topic: str  # plain
    partition: int
    offset: int = NO_OFFSET
    leader_epoch: int = NO_OFFSET
    metadata: str = ""
    error_code: int = NO_ERROR
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class FetchOutcome:
    """A fetch's answer: a whole-request error, or the committed offsets (request order, or by topic and partition)."""

    error_code: int = NO_ERROR
    error_message: str = ""
    partitions: list[CommittedOffset] = field(default_factory=list)


def commit_offsets(
    broker: Broker, call: CallContext, group_id: str, member_id: str, generation: int, entries: Sequence[OffsetCommitEntry], *, instance_id: str = ""
) -> CommitOutcome:
    """Store ``entries`` (plain topic names) for the caller's group.

    ``member_id`` / ``generation`` name the committing member and its member epoch (KIP-848)
    or generation (classic, with its ``instance_id`` when static); "" / -1 for a commit without a member. InvalidRequestError
    (the request as a whole is malformed) for no entries or a partition named twice.
    """
    request_parsing.require_nonempty(entries, "topic")
    request_parsing.require_unique(((entry.topic, entry.partition) for entry in entries), "topic-partition")
    if group_id and not call.may(Operation.READ, ResourceType.GROUP, group_id):
        code, message = error_code_and_message(GroupAuthorizationError(group_id, "commit offsets of"))
        return CommitOutcome(code, message)
    authorized = [entry for entry in entries if call.may(Operation.READ, ResourceType.TOPIC, entry.topic)]
    qualified = [OffsetCommitEntry(call.qualify(entry.topic), entry.partition, entry.offset, entry.leader_epoch, entry.metadata) for entry in authorized]
    try:
        committed = broker.group_coordinator.commit_offsets(
            call.qualify(group_id) if group_id else "", member_id, generation, qualified, instance_id=instance_id
        )
    except Exception as error:
        code, message = error_code_and_message(error)
        return CommitOutcome(code, message)
    by_partition: dict[tuple[str, int], Exception | None] = {(entry.topic, entry.partition): outcome for entry, outcome in zip(authorized, committed)}
    results = []
    for entry in entries:
        key = (entry.topic, entry.partition)
        outcome = by_partition[key] if key in by_partition else TopicAuthorizationError(entry.topic, "commit offsets of")
        code, message = (NO_ERROR, "") if outcome is None else plain_error(outcome, call, entry.topic)
        results.append(PartitionResult(entry.topic, entry.partition, code, message))
    return CommitOutcome(partitions=results)


def fetch_offsets(broker: Broker, call: CallContext, group_id: str, wanted: Sequence[tuple[str, int]] | None, *, require_stable: bool = False) -> FetchOutcome:
    """The caller's group's committed offsets of ``wanted`` (plain topic, partition), or of every partition it committed (None).

    ``require_stable`` (OffsetFetch v7+, KIP-447): a partition with an offset committed by a
    transaction still open answers UNSTABLE_OFFSET_COMMIT (retriable) instead of the offset
    committed before it, so a consumer starting after a transactional producer's crash does not
    read from an offset that transaction is about to move.
    """
    if wanted is not None:
        request_parsing.require_unique(wanted, "topic-partition")
    if group_id and not call.may(Operation.READ, ResourceType.GROUP, group_id):
        code, message = error_code_and_message(GroupAuthorizationError(group_id, "fetch offsets of"))
        return FetchOutcome(code, message)
    try:
        qualified_group = call.qualify(group_id) if group_id else ""
        committed = broker.offset_store.fetch(qualified_group, None if wanted is None else [(call.qualify(topic), partition) for topic, partition in wanted])
        unstable = broker.offset_store.unstable_partitions(qualified_group) if require_stable else set()
    except Exception as error:
        code, message = error_code_and_message(error)
        return FetchOutcome(code, message)
    results = []
    for qualified_topic, partition, value in committed:
        if not call.owns(qualified_topic):
            continue
        topic = call.plain(qualified_topic)
        if not call.may(Operation.READ, ResourceType.TOPIC, topic):
            if wanted is None:
                continue  # listing every commit of the group shows only the topics the caller may read
            code, message = error_code_and_message(TopicAuthorizationError(topic, "fetch offsets of"))
            results.append(CommittedOffset(topic, partition, error_code=code, error_message=message))
        elif (qualified_topic, partition) in unstable:
            code, message = plain_error(UnstableOffsetCommitError(qualified_group, qualified_topic, partition), call, topic)
            results.append(CommittedOffset(topic, partition, error_code=code, error_message=message))
        elif value is None:
            results.append(CommittedOffset(topic, partition))
        else:
            results.append(CommittedOffset(topic, partition, value.offset, value.leader_epoch, value.metadata))
    return FetchOutcome(partitions=results)


def delete_offsets(broker: Broker, call: CallContext, group_id: str, partitions: Sequence[tuple[str, int]]) -> CommitOutcome:
    """OffsetDelete: remove the caller's group's committed offsets of ``partitions`` (plain topic, partition), as Kafka does.

    DELETE on the group; READ on each topic (TOPIC_AUTHORIZATION_FAILED otherwise, whether or not it
    exists); a topic that does not exist answers UNKNOWN_TOPIC_OR_PARTITION; a topic the group's
    members subscribe to answers GROUP_SUBSCRIBED_TO_TOPIC. One result per partition, in request order.
    """
    request_parsing.require_unique(partitions, "topic-partition")
    try:
        if not group_id:
            raise InvalidGroupIdError(group_id)
        if not call.may(Operation.DELETE, ResourceType.GROUP, group_id):
            raise GroupAuthorizationError(group_id, "delete offsets of")
    except Exception as error:
        code, message = error_code_and_message(error)
        return CommitOutcome(code, message)
    refusals: dict[tuple[str, int], Exception] = {}
    for topic, partition in partitions:
        if not call.may(Operation.READ, ResourceType.TOPIC, topic):
            refusals[(topic, partition)] = TopicAuthorizationError(topic, "delete offsets of")
        elif broker.registry.get(call.qualify(topic)) is None:
            refusals[(topic, partition)] = UnknownTopicOrPartitionError(topic, partition)
    allowed = [item for item in partitions if item not in refusals]
    try:
        deleted = broker.group_coordinator.delete_offsets(call.qualify(group_id), [(call.qualify(topic), partition) for topic, partition in allowed])
    except Exception as error:
        code, message = error_code_and_message(error)
        return CommitOutcome(code, message)
    outcomes: dict[tuple[str, int], Exception | None] = {**dict(zip(allowed, deleted)), **refusals}
    results = []
    for topic, partition in partitions:
        outcome = outcomes[(topic, partition)]
        code, message = (NO_ERROR, "") if outcome is None else plain_error(outcome, call, topic)
        results.append(PartitionResult(topic, partition, code, message))
    return CommitOutcome(partitions=results)
