"""The transactional APIs for both front doors, over the broker's transaction coordinator.

InitProducerId with a transactional id, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit,
EndTxn, DescribeTransactions and ListTransactions. Transactional ids, topics and groups are
qualified with the caller's tenant on the way in (two tenants may use the same
transactional id without meeting) and answered by the names the caller sent.

Authorization: WRITE (DESCRIBE to describe or list) on the TRANSACTIONAL_ID resource, as Kafka
asks, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED; a principal no TRANSACTIONAL_ID binding names
keeps Weir's earlier rule (WRITE on some topic), see ``security.transactional_ids``. Adding a partition needs WRITE on its topic, adding a
group's offsets READ on the group, as in Kafka. When any partition of an AddPartitionsToTxn
is refused, none is added and the others answer OPERATION_NOT_ATTEMPTED (Kafka's rule).

TxnOffsetCommit (KIP-447) runs at the group's coordinator: READ on the group and on each
topic, as OffsetCommit; the transaction's coordinator verifies that the producer's ongoing
transaction holds the group's offsets partition (added by AddOffsetsToTxn) at this producer
epoch, as KIP-890 verifies a produce; the member is checked against the group
(``GroupCoordinator.commit_transactional_offsets``); the offsets become visible when the
transaction commits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from broker_nodes import names
from broker_nodes.coordinator.offset_store import OFFSETS_TOPIC, OffsetCommitEntry
from broker_nodes.coordinator.transactions.errors import (
    InvalidTransactionalIdError,
    ProducerFencedError,
    TransactionalIdAuthorizationError,
    TransactionCoordinatorNotAvailableError,
)
from broker_nodes.coordinator.transactions.state import TransactionMetadata
from broker_nodes.requests.outcomes import NO_ERROR, plain_error
from broker_nodes.requests.producer_ids import InitProducerIdOutcome
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import CLUSTER_RESOURCE_NAME, Operation, ResourceType
from broker_nodes.security.errors import ClusterAuthorizationError, GroupAuthorizationError, TopicAuthorizationError
from broker_nodes.security.transactional_ids import may_use_transactional_id
from broker_nodes.server import request_parsing
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import error_code_and_message
from broker_nodes.storage.errors import InvalidProducerEpochError
from broker_nodes.topic_registry import UnknownTopicOrPartitionError
from weir.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class TransactionOutcome:
    """An answer with one error code (AddOffsetsToTxn, EndTxn) and, for EndTxn, the producer id and epoch to use next."""

    error_code: int = NO_ERROR
    error_message: str = ""
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    """One transactional id as DescribeTransactions / ListTransactions answer it (names as the tenant knows them)."""

    transactional_id: str
    error_code: int = NO_ERROR
    error_message: str = ""
    state: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    timeout_ms: int = 0
    start_timestamp_ms: int = -1
    partitions: Mapping[str, tuple[int, ...]] = field(default_factory=dict)


def _check_transactional_id(call: CallContext, transactional_id: str | None, operation: Operation = Operation.WRITE) -> str:
    """The qualified id; InvalidTransactionalIdError for an empty one, TransactionalIdAuthorizationError unless the caller may ``operation`` on it."""
    if not transactional_id:
        raise InvalidTransactionalIdError()
    if not may_use_transactional_id(call, operation, transactional_id):
        raise TransactionalIdAuthorizationError(transactional_id, "use" if operation is Operation.WRITE else "describe")
    return call.qualify(transactional_id)


def init_transactional_producer(
    broker: Broker, call: CallContext, *, transactional_id: str, timeout_ms: int, producer_id: int, producer_epoch: int
) -> InitProducerIdOutcome:
    """InitProducerId with a transactional id: fence older producers of the id and answer the id and epoch to use."""
    try:
        qualified = _check_transactional_id(call, transactional_id)
        found = broker.transaction_coordinator.init_producer_id(qualified, timeout_ms, producer_id=producer_id, producer_epoch=producer_epoch)
    except Exception as error:
        code, message = error_code_and_message(error)
        return InitProducerIdOutcome(code, message)
    return InitProducerIdOutcome(producer_id=found.producer_id, producer_epoch=found.producer_epoch)


def add_partitions_to_txn(
    broker: Broker, call: CallContext, *, transactional_id: str, producer_id: int, producer_epoch: int, topics: Mapping[str, Sequence[int]]
) -> dict[str, dict[int, tuple[int, str]]]:
    """AddPartitionsToTxn: (code, message) per partition, keyed by the topic names the caller sent."""
    wanted = [(topic, partition) for topic, partitions in topics.items() for partition in partitions]
    try:
        qualified = _check_transactional_id(call, transactional_id)
        refused = {(topic, partition): error for topic, partition in wanted if (error := _check_partition(broker, call, topic, partition)) is not None}
        if refused:
            not_attempted = (ErrorCode.OPERATION_NOT_ATTEMPTED, "another partition of the request was refused")
            outcomes = {key: error_code_and_message(error) for key, error in refused.items()}
            return _by_topic({key: outcomes.get(key, not_attempted) for key in wanted})
        broker.transaction_coordinator.add_partitions(qualified, producer_id, producer_epoch, [(call.qualify(topic), partition) for topic, partition in wanted])
    except Exception as error:
        outcome = error_code_and_message(error)
        return _by_topic(dict.fromkeys(wanted, outcome))
    return _by_topic(dict.fromkeys(wanted, (NO_ERROR, "")))


@dataclass(frozen=True, slots=True)
class TransactionPartitions:
    """One transaction of a batched AddPartitionsToTxn (v4+, KIP-890): add its partitions, or only verify them."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    topics: Mapping[str, Sequence[int]]
    verify_only: bool = False


@dataclass(frozen=True, slots=True)
class BatchedAddPartitionsOutcome:
    """A batched AddPartitionsToTxn's answer: a refusal of the whole request, else per transactional id what ``add_partitions_to_txn`` answers."""

    error_code: int = NO_ERROR
    error_message: str = ""
    results: dict[str, dict[str, dict[int, tuple[int, str]]]] = field(default_factory=dict)


def add_partitions_to_txns(broker: Broker, call: CallContext, transactions: Sequence[TransactionPartitions]) -> BatchedAddPartitionsOutcome:
    """AddPartitionsToTxn v4+ (KIP-890): several transactions in one request, each added or (``verify_only``) verified.

    Kafka serves this version to brokers only (CLUSTER_ACTION on the cluster); Weir's ACLs have
    no CLUSTER_ACTION, and its own brokers verify over gRPC, so a caller needs ALTER on its
    cluster (CLUSTER_AUTHORIZATION_FAILED otherwise, for the whole request). Each transaction
    is then checked as a client's AddPartitionsToTxn is (the transactional id, WRITE on each
    topic to add it): the tenant's rights stay the bound. A transactional id named twice is
    INVALID_REQUEST for the whole request.
    """
    if not call.may(Operation.ALTER, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME):
        code, message = error_code_and_message(ClusterAuthorizationError("add partitions to transactions in a batch (AddPartitionsToTxn v4+)"))
        return BatchedAddPartitionsOutcome(code, message)
    named = [transaction.transactional_id for transaction in transactions]
    repeated = sorted({transactional_id for transactional_id in named if named.count(transactional_id) > 1})
    if repeated:
        return BatchedAddPartitionsOutcome(ErrorCode.INVALID_REQUEST, f"transactional ids named more than once: {', '.join(map(repr, repeated))}")
    results = {}
    for transaction in transactions:
        serve = verify_partitions_in_txn if transaction.verify_only else add_partitions_to_txn
        results[transaction.transactional_id] = serve(
            broker,
            call,
            transactional_id=transaction.transactional_id,
            producer_id=transaction.producer_id,
            producer_epoch=transaction.producer_epoch,
            topics=transaction.topics,
        )
    return BatchedAddPartitionsOutcome(results=results)


def verify_partitions_in_txn(
    broker: Broker, call: CallContext, *, transactional_id: str, producer_id: int, producer_epoch: int, topics: Mapping[str, Sequence[int]]
) -> dict[str, dict[int, tuple[int, str]]]:
    """AddPartitionsToTxn's VerifyOnly: whether each partition is in the producer's ongoing transaction (changes nothing).

    NONE when it is; INVALID_TXN_STATE when not; the producer's errors (PRODUCER_FENCED,
    INVALID_PRODUCER_ID_MAPPING, NOT_COORDINATOR, ...) for every partition.
    """
    wanted = [(topic, partition) for topic, partitions in topics.items() for partition in partitions]
    try:
        qualified = _check_transactional_id(call, transactional_id)
        found = broker.transaction_coordinator.verify_partitions(
            qualified, producer_id, producer_epoch, [(call.qualify(topic), partition) for topic, partition in wanted]
        )
    except Exception as error:
        return _by_topic(dict.fromkeys(wanted, error_code_and_message(error)))
    outcomes = {}
    for topic, partition in wanted:
        refusal = found[(call.qualify(topic), partition)]
        outcomes[(topic, partition)] = (NO_ERROR, "") if refusal is None else plain_error(refusal, call, topic)
    return _by_topic(outcomes)


def _check_partition(broker: Broker, call: CallContext, topic: str, partition: int) -> Exception | None:
    if not call.may(Operation.WRITE, ResourceType.TOPIC, topic):
        return TopicAuthorizationError(topic, "write")
    metadata = broker.registry.get(call.qualify(topic))
    if metadata is None or not 0 <= partition < metadata.partitions:
        return UnknownTopicOrPartitionError(topic, partition)
    return None


def _by_topic(outcomes: Mapping[tuple[str, int], tuple[int, str]]) -> dict[str, dict[int, tuple[int, str]]]:
    grouped: dict[str, dict[int, tuple[int, str]]] = {}
    for (topic, partition), outcome in outcomes.items():
        grouped.setdefault(topic, {})[partition] = outcome
    return grouped


def add_offsets_to_txn(broker: Broker, call: CallContext, *, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str) -> TransactionOutcome:
    """AddOffsetsToTxn: the group's offsets partition joins the transaction (its TxnOffsetCommits then count with it)."""
    try:
        qualified = _check_transactional_id(call, transactional_id)
        if not call.may(Operation.READ, ResourceType.GROUP, group_id):
            raise GroupAuthorizationError(group_id, "read")
        broker.transaction_coordinator.add_offsets(qualified, producer_id, producer_epoch, call.qualify(group_id))
    except Exception as error:
        code, message = error_code_and_message(error)
        return TransactionOutcome(code, message)
    return TransactionOutcome()


def txn_offset_commit(
    broker: Broker,
    call: CallContext,
    *,
    transactional_id: str,
    group_id: str,
    producer_id: int,
    producer_epoch: int,
    generation_id: int,
    member_id: str,
    group_instance_id: str,
    offsets: Sequence[OffsetCommitEntry],
) -> dict[str, dict[int, tuple[int, str]]]:
    """TxnOffsetCommit: the group's offsets ``offsets`` (plain topics) join the producer's transaction; (code, message) per partition.

    ``generation_id`` / ``member_id`` / ``group_instance_id`` (TxnOffsetCommit v3, KIP-447) name
    the consumer whose position is committed: -1 / "" / "" for none. A refusal of the request
    as a whole (transactional id, group ACL, coordinators, fencing, the member) is every
    partition's code. InvalidRequestError for no offsets or a partition named twice.
    """
    request_parsing.require_nonempty(offsets, "topic")
    request_parsing.require_unique(((entry.topic, entry.partition) for entry in offsets), "topic-partition")
    wanted = [(entry.topic, entry.partition) for entry in offsets]
    qualified_id = call.qualify(transactional_id) if transactional_id else ""
    try:
        _check_transactional_id(call, transactional_id)
        if not call.may(Operation.READ, ResourceType.GROUP, group_id):
            raise GroupAuthorizationError(group_id, "commit offsets of")
        qualified_group = call.qualify(group_id)
        _verify_offsets_partition(broker, qualified_id, producer_id, producer_epoch, qualified_group)
        authorized = [entry for entry in offsets if call.may(Operation.READ, ResourceType.TOPIC, entry.topic)]
        committed = broker.group_coordinator.commit_transactional_offsets(
            qualified_group,
            producer_id,
            producer_epoch,
            member_id,
            generation_id,
            [OffsetCommitEntry(call.qualify(entry.topic), entry.partition, entry.offset, entry.leader_epoch, entry.metadata) for entry in authorized],
            instance_id=group_instance_id,
        )
    except Exception as error:
        return _by_topic(dict.fromkeys(wanted, error_code_and_message(_fenced_if_older_epoch(error, qualified_id))))
    outcomes: dict[tuple[str, int], Exception | None] = {(entry.topic, entry.partition): outcome for entry, outcome in zip(authorized, committed)}
    results: dict[tuple[str, int], tuple[int, str]] = {}
    for topic, partition in wanted:
        outcome = outcomes[(topic, partition)] if (topic, partition) in outcomes else TopicAuthorizationError(topic, "commit offsets of")
        results[(topic, partition)] = (NO_ERROR, "") if outcome is None else plain_error(_fenced_if_older_epoch(outcome, qualified_id), call, topic)
    return _by_topic(results)


def _verify_offsets_partition(broker: Broker, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str) -> None:
    """Raise unless the producer's ongoing transaction (at this epoch) holds the group's offsets partition (AddOffsetsToTxn)."""
    topic_partition = (OFFSETS_TOPIC, broker.offset_store.partition_for(group_id))
    error = broker.transaction_verifier.verify(transactional_id, producer_id, producer_epoch, [topic_partition]).get(
        topic_partition, TransactionCoordinatorNotAvailableError(transactional_id, "the coordinator did not answer for the offsets partition")
    )
    if error is not None:
        raise error


def _fenced_if_older_epoch(error: BaseException, transactional_id: str) -> BaseException:
    """The log refuses an older producer epoch with INVALID_PRODUCER_EPOCH; TxnOffsetCommit answers PRODUCER_FENCED then, as Kafka does (KIP-588)."""
    if isinstance(error, InvalidProducerEpochError):
        return ProducerFencedError(transactional_id, error.received_epoch, error.current_epoch)
    return error


def end_txn(
    broker: Broker, call: CallContext, *, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool, bump_epoch: bool
) -> TransactionOutcome:
    """EndTxn: commit or abort; answers the producer id and epoch to use next (bumped when ``bump_epoch``, KIP-890)."""
    try:
        qualified = _check_transactional_id(call, transactional_id)
        found = broker.transaction_coordinator.end_transaction(qualified, producer_id, producer_epoch, commit=commit, bump_epoch=bump_epoch)
    except Exception as error:
        code, message = error_code_and_message(error)
        return TransactionOutcome(code, message)
    return TransactionOutcome(producer_id=found.producer_id, producer_epoch=found.producer_epoch)


def describe_transactions(broker: Broker, call: CallContext, transactional_ids: Sequence[str]) -> list[TransactionDescription]:
    """DescribeTransactions: each id's state from its coordinator (this broker), in request order."""
    described = []
    for transactional_id in transactional_ids:
        try:
            qualified = _check_transactional_id(call, transactional_id, Operation.DESCRIBE)
            described.append(_description(transactional_id, broker.transaction_coordinator.describe(qualified)))
        except Exception as error:
            code, message = error_code_and_message(error)
            described.append(TransactionDescription(transactional_id, code, message))
    return described


def list_transactions(
    broker: Broker, call: CallContext, *, states: Sequence[str] = (), producer_ids: Sequence[int] = (), min_duration_ms: int = -1
) -> list[TransactionDescription]:
    """ListTransactions: the caller's tenant's transactional ids coordinated by this broker (``min_duration_ms``: hanging ones)."""
    found = broker.transaction_coordinator.list_transactions(states=states, producer_ids=producer_ids, min_duration_ms=min_duration_ms)
    return [
        _description(plain, metadata)
        for metadata in found
        if names.belongs_to(metadata.transactional_id, call.tenant_id)
        and may_use_transactional_id(call, Operation.DESCRIBE, plain := names.plain(metadata.transactional_id))
    ]


def _description(transactional_id: str, metadata: TransactionMetadata) -> TransactionDescription:
    partitions: dict[str, list[int]] = {}
    for topic, partition in sorted(metadata.partitions):
        partitions.setdefault(names.plain(topic), []).append(partition)
    return TransactionDescription(
        transactional_id,
        state=metadata.state.kafka_name,
        producer_id=metadata.producer_id,
        producer_epoch=metadata.producer_epoch,
        timeout_ms=metadata.timeout_ms,
        start_timestamp_ms=metadata.start_timestamp_ms,
        partitions={topic: tuple(ids) for topic, ids in partitions.items()},
    )
