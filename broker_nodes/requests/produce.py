"""Produce for both front doors: authorize, append through the replica manager, meter, charge the quota.

Each partition's batch (RecordBatch v2 bytes exactly as the client sent them) goes to
``ReplicaManager.start_append_records``, which validates and appends them; for acks=all the
request then waits in the replication purgatory (:class:`PendingProduce`: a gRPC call blocks
its thread in :func:`produce`, a Kafka client's request waits on the listener's loop). A partition the caller may not WRITE is answered
TOPIC_AUTHORIZATION_FAILED whether or not it exists, and nothing is appended to it. Metering
counts what was appended (duplicates included, as the replica manager reports them); the
quota is charged for the authorized bytes and the throttle time is returned, not slept.
Each partition's data must be exactly one record batch, as Kafka's Produce v3+ requires
(``produce_batches``): a partition holding more is answered INVALID_RECORD and appends nothing.
A topic with broker-side schema validation on has its partitions' records checked first
(``schema_validation``); a partition with a refused record appends nothing.

Transactional produce, as Kafka's ``KafkaApis.handleProduceRequest``: a request with a
transactional id needs WRITE on the caller's own TransactionalId resource of that name
(``security.transactional_ids``, checked once per request), and a request carrying a
transactional batch must name a transactional id, since only the id's coordinator can verify
(KIP-890) that the partition is in the producer's ongoing transaction; an unverified batch
could open a transaction no coordinator knows (a hanging one). Otherwise every partition is
answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED and nothing is appended, verified or charged.
The coordinator verifies each partition by its one batch's producer id and epoch, which is why
a second batch (say a transactional one behind a plain one) is never let through to the append.
Followers never come through here (they append their leader's bytes by ReplicaFetch), nor do
the coordinators' markers and transactional offset commits (written by the broker itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from broker_nodes.coordinator.transactions.errors import TransactionalBatchWithoutIdError, TransactionalIdAuthorizationError
from broker_nodes.metering.metering import ProduceTally
from broker_nodes.partition_waitlist import WakeSignal, wait_blocking
from broker_nodes.replica_manager import AppendInProgress
from broker_nodes.requests import throttle
from broker_nodes.requests.outcomes import NO_ERROR, LeaderHint, allowed_topics, leader_hint, plain_error, qualified_names
from broker_nodes.requests.produce_batches import first_transactional_batch, single_batch_refusal
from broker_nodes.requests.schema_validation import SchemaValidationError, refuse_invalid
from broker_nodes.security.access import CallContext, CallerKind
from broker_nodes.security.authorizer import Operation
from broker_nodes.security.errors import TopicAuthorizationError
from broker_nodes.security.quotas import Direction
from broker_nodes.security.transactional_ids import may_use_transactional_id
from broker_nodes.server.broker import Broker
from broker_nodes.storage.log import AppendInfo

# The per-partition records are NamedTuples: as immutable as frozen dataclasses, and cheaper to
# build, which a Produce does twice per partition.


class ProducePartition(NamedTuple):
    """One partition's data of a Produce request; ``topic`` is the caller's plain name."""

    topic: str
    partition: int
    records: bytes


class ProducePartitionOutcome(NamedTuple):
    """One partition's answer: an error code and message (plain names), or where the batches went."""

    topic: str
    partition: int
    error_code: int = NO_ERROR
    error_message: str = ""
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    current_leader: LeaderHint | None = None  # with NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH, when known
    record_errors: tuple[tuple[int, str], ...] = ()  # INVALID_RECORD by schema validation: (batch index, message) per refused record


class ProduceResult(NamedTuple):
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
        refused: dict[tuple[str, int], Exception] | None = None,
    ) -> None:
        self._broker = broker
        self._call = call
        self._partitions = partitions
        self._authorized = authorized
        self._append = append
        self._usage = usage
        self._refused = refused or {}

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
            outcome = by_partition.get((item.topic, item.partition)) or self._refused.get((item.topic, item.partition))
            if outcome is None:
                outcome = TopicAuthorizationError(item.topic, "write to")
            outcomes.append(_partition_outcome(broker, item, outcome, call))
        return ProduceResult(outcomes, throttle_ms)


def start_produce(
    broker: Broker,
    call: CallContext,
    partitions: Sequence[ProducePartition],
    *,
    acks: int,
    timeout_ms: int,
    transactional_id: str = "",
    waits_on_thread: bool = True,
) -> PendingProduce:
    """Authorize and append now (on this thread); the acks=all wait is left to the caller (see :class:`PendingProduce`).

    ``waits_on_thread``: whether the caller's acks=all wait will hold a request thread (a gRPC
    call) and so needs one of the replica manager's wait slots; the Kafka listener's waits are
    parked on its loop (False).
    """
    refusal = transactional_refusal(call, partitions, transactional_id)
    if refusal is not None:
        return PendingProduce(broker, call, partitions, [], AppendInProgress([]), None, {(item.topic, item.partition): refusal for item in partitions})
    allowed = allowed_topics(call, Operation.WRITE, (item.topic for item in partitions))
    authorized = [item for item in partitions if item.topic in allowed]
    refused = _refused_before_append(broker, call, authorized)
    if refused:
        authorized = [item for item in authorized if (item.topic, item.partition) not in refused]
    usage = broker.metering.produce_tally(call)
    qualified = qualified_names(call, allowed)
    append = broker.replica_manager.start_append_records(
        acks,
        [(qualified[item.topic], item.partition, item.records) for item in authorized],
        transactional_id=call.qualify(transactional_id) if transactional_id else "",
        timeout_ms=timeout_ms,
        trusted=call.kind is CallerKind.INTERNAL,
        on_append=usage.appended if usage is not None else None,
        waits_on_thread=waits_on_thread,
    )
    return PendingProduce(broker, call, partitions, authorized, append, usage, refused)


def _refused_before_append(broker: Broker, call: CallContext, authorized: Sequence[ProducePartition]) -> dict[tuple[str, int], Exception]:
    """The authorized partitions refused before the append, by (plain topic, partition): more than one batch, then schema validation."""
    refused: dict[tuple[str, int], Exception] = {}
    for item in authorized:
        # Exactly one batch per partition: transactional verification (KIP-890) reads that one batch's producer.
        too_many = single_batch_refusal(item.topic, item.partition, item.records)
        if too_many is not None:
            refused[(item.topic, item.partition)] = too_many
    single = [item for item in authorized if (item.topic, item.partition) not in refused]
    refused.update(refuse_invalid(broker.registry.get, broker.schema_ids, call.qualify, single))
    return refused


def transactional_refusal(call: CallContext, partitions: Sequence[ProducePartition], transactional_id: str) -> Exception | None:
    """Why the whole request is refused TRANSACTIONAL_ID_AUTHORIZATION_FAILED, else None.

    A request naming a transactional id needs WRITE on it; a request naming none may carry no
    transactional batch (:class:`TransactionalBatchWithoutIdError` names the first one found).
    """
    if transactional_id:
        return None if may_use_transactional_id(call, Operation.WRITE, transactional_id) else TransactionalIdAuthorizationError(transactional_id, "use")
    for item in partitions:
        batch_index = first_transactional_batch(item.records)
        if batch_index is not None:
            return TransactionalBatchWithoutIdError(item.topic, item.partition, batch_index)
    return None


def _partition_outcome(broker: Broker, item: ProducePartition, outcome: AppendInfo | Exception, call: CallContext) -> ProducePartitionOutcome:
    if isinstance(outcome, Exception):
        code, message = plain_error(outcome, call, item.topic)
        hint = leader_hint(broker, outcome, call.qualify(item.topic), item.partition)
        record_errors = tuple((error.batch_index, error.message) for error in outcome.record_errors) if isinstance(outcome, SchemaValidationError) else ()
        return ProducePartitionOutcome(item.topic, item.partition, code, message, current_leader=hint, record_errors=record_errors)
    return ProducePartitionOutcome(
        item.topic,
        item.partition,
        base_offset=outcome.first_offset,
        log_append_time_ms=outcome.log_append_time_ms,
        log_start_offset=outcome.log_start_offset,
    )
