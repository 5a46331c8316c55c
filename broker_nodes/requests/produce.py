"""Produce for both front doors: authorize, append through the replica manager, meter, charge the quota.

Each partition's batches (RecordBatch v2 bytes exactly as the client sent them) go to
``ReplicaManager.start_append_records``, which validates and appends them; for acks=all the
request then waits in the replication purgatory (:class:`PendingProduce`: a gRPC call blocks
its thread in :func:`produce`, a Kafka client's request waits on the listener's loop). A partition the caller may not WRITE is answered
TOPIC_AUTHORIZATION_FAILED whether or not it exists, and nothing is appended to it. Metering
counts what was appended (duplicates included, as the replica manager reports them); the
quota is charged for the authorized bytes and the throttle time is returned, not slept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from broker_nodes.metering.metering import ProduceTally
from broker_nodes.partition_waitlist import WakeSignal, wait_blocking
from broker_nodes.replica_manager import AppendInProgress
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
    Blocks this thread for acks=all until the in-sync replicas have the batches or ``timeout_ms``
    passed; :func:`start_produce` is the same produce for a caller that waits without a thread.
    """
    pending = start_produce(broker, call, partitions, acks=acks, timeout_ms=timeout_ms, transactional_id=transactional_id)
    wait_blocking(pending)
    return pending.result()


class PendingProduce:
    """One Produce whose batches are appended, with its acks=all wait left (a ``partition_waitlist.Pending``).

    Drive it (:meth:`advance` until True; without an acks=all wait the first call is True),
    then :meth:`result` charges the quota, meters and answers (once). Always :meth:`release`
    it: that unparks it and gives back its acks=all wait slot.
    """

    def __init__(
        self,
        broker: Broker,
        call: CallContext,
        partitions: Sequence[ProducePartition],
        authorized: list[ProducePartition],
        append: AppendInProgress,
        usage: ProduceTally | None,
    ) -> None:
        self._broker = broker
        self._call = call
        self._partitions = partitions
        self._authorized = authorized
        self._append = append
        self._usage = usage

    @property
    def signal(self) -> WakeSignal:
        return self._append.signal

    def advance(self) -> bool:
        return self._append.advance()

    def remaining_seconds(self) -> float:
        return self._append.remaining_seconds()

    def release(self) -> None:
        self._append.release()

    def result(self) -> ProduceResult:
        broker, call, authorized = self._broker, self._call, self._authorized
        by_partition: dict[tuple[str, int], AppendInfo | Exception] = {
            (item.topic, item.partition): outcome for item, outcome in zip(authorized, self._append.results)
        }
        throttle_ms = throttle.charge(broker, call, Direction.PRODUCE, sum(len(item.records) for item in authorized))
        if self._usage is not None:
            self._usage.finish(throttle_ms)
        outcomes = []
        for item in self._partitions:
            outcome = by_partition.get((item.topic, item.partition))
            if outcome is None:
                outcome = TopicAuthorizationError(item.topic, "write to")
            outcomes.append(_partition_outcome(broker, item, outcome, call))
        return ProduceResult(outcomes, throttle_ms)


def start_produce(
    broker: Broker, call: CallContext, partitions: Sequence[ProducePartition], *, acks: int, timeout_ms: int, transactional_id: str = ""
) -> PendingProduce:
    """Authorize and append now (on this thread); the acks=all wait is left to the caller (see :class:`PendingProduce`)."""
    authorized = [item for item in partitions if call.may(Operation.WRITE, ResourceType.TOPIC, item.topic)]
    usage = broker.metering.produce_tally(call)
    append = broker.replica_manager.start_append_records(
        acks,
        [(call.qualify(item.topic), item.partition, item.records) for item in authorized],
        transactional_id=call.qualify(transactional_id) if transactional_id else "",
        timeout_ms=timeout_ms,
        trusted=call.kind is CallerKind.INTERNAL,
        on_append=usage.appended if usage is not None else None,
    )
    return PendingProduce(broker, call, partitions, authorized, append, usage)


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
