"""Produce for both front doors: authorize, append through the replica manager, meter, charge the quota.

Each partition's batches (RecordBatch v2 bytes exactly as the client sent them) go to
``ReplicaManager.append_records``, which validates and appends them and, for acks=all, waits
in the replication purgatory. A partition the caller may not WRITE is answered
TOPIC_AUTHORIZATION_FAILED whether or not it exists, and nothing is appended to it. Metering
counts what was appended (duplicates included, as the replica manager reports them); the
quota is charged for the authorized bytes and the throttle time is returned, not slept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from broker_nodes.requests import throttle
from broker_nodes.requests.outcomes import NO_ERROR, LeaderHint, leader_hint, plain_error
from broker_nodes.security.access import CallContext, CallerKind
from broker_nodes.security.authorizer import Operation, ResourceType
from broker_nodes.security.errors import TopicAuthorizationError
from broker_nodes.security.quotas import Direction
from broker_nodes.server.broker import Broker
from broker_nodes.storage.log import AppendInfo


@dataclass(frozen=True, slots=True)
class ProducePartition:
    """One partition's data of a Produce request; ``topic`` is the caller's plain name."""

    topic: str
    partition: int
    records: bytes


@dataclass(frozen=True, slots=True)
class ProducePartitionOutcome:
    """One partition's answer: an error code and message (plain names), or where the batches went."""

    topic: str
    partition: int
    error_code: int = NO_ERROR
    error_message: str = ""
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    current_leader: LeaderHint | None = None  # with NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH, when known


@dataclass(frozen=True, slots=True)
class ProduceResult:
    partitions: list[ProducePartitionOutcome]  # in request order
    throttle_ms: int


def produce(
    broker: Broker, call: CallContext, partitions: Sequence[ProducePartition], *, acks: int, timeout_ms: int, transactional_id: str = ""
) -> ProduceResult:
    """Append every partition's batches; one outcome per partition, in order, and the throttle time.

    Precondition: no (topic, partition) occurs twice (each transport refuses such a request).
    Blocks for acks=all until the in-sync replicas have the batches or ``timeout_ms`` passed.
    """
    authorized = [item for item in partitions if call.may(Operation.WRITE, ResourceType.TOPIC, item.topic)]
    usage = broker.metering.produce_tally(call)
    appended = broker.replica_manager.append_records(
        acks,
        [(call.qualify(item.topic), item.partition, item.records) for item in authorized],
        transactional_id=transactional_id,
        timeout_ms=timeout_ms,
        trusted=call.kind is CallerKind.INTERNAL,
        on_append=usage.appended if usage is not None else None,
    )
    by_partition: dict[tuple[str, int], AppendInfo | Exception] = {(item.topic, item.partition): outcome for item, outcome in zip(authorized, appended)}
    throttle_ms = throttle.charge(broker, call, Direction.PRODUCE, sum(len(item.records) for item in authorized))
    if usage is not None:
        usage.finish(throttle_ms)
    outcomes = []
    for item in partitions:
        outcome = by_partition.get((item.topic, item.partition))
        if outcome is None:
            outcome = TopicAuthorizationError(item.topic, "write to")
        outcomes.append(_partition_outcome(broker, item, outcome, call))
    return ProduceResult(outcomes, throttle_ms)


def _partition_outcome(broker: Broker, item: ProducePartition, outcome: AppendInfo | Exception, call: CallContext) -> ProducePartitionOutcome:
    if isinstance(outcome, Exception):
        code, message = plain_error(outcome, call, item.topic)
        hint = leader_hint(broker, outcome, call.qualify(item.topic), item.partition)
        return ProducePartitionOutcome(item.topic, item.partition, code, message, current_leader=hint)
    return ProducePartitionOutcome(
        item.topic,
        item.partition,
        base_offset=outcome.first_offset,
        log_append_time_ms=outcome.log_append_time_ms,
        log_start_offset=outcome.log_start_offset,
    )
