"""Operators' transaction tools (Kafka's ``kafka-transactions.sh``, KIP-664) for both front doors.

Three operations beside the DescribeTransactions / ListTransactions of ``requests.transactions``:

- :func:`abort_transaction`: abort an id's ongoing transaction through its coordinator (this
  broker): PrepareAbort with the producer epoch bumped, so the producer is fenced, then ABORT
  markers to every partition, as a timeout abort does. Kafka has no such call; Weir's
  operators need it to end a stuck producer's transaction without waiting for its timeout.
- :func:`find_hanging`: Kafka's ``find-hanging``. A partition's leader knows each producer's
  open transaction (its first offset, as DescribeProducers reports it); one open longer than
  transaction.max.timeout.ms (measured, as Kafka measures it, from the producer's last batch)
  is hanging unless this broker's coordinator holds it as an Ongoing transaction that includes
  the partition: no coordinator keeps a transaction open past the largest timeout, so such a
  transaction's coordinator lost it (a late batch after an abort, KAFKA-9144) and it holds
  the partition's last stable offset back for ever. Coordinators on other brokers are asked
  by the caller (the SDK lists their transactions by producer id before it reports).
- :func:`abort_hanging`: Kafka's ``abort`` of a hanging transaction: an ABORT marker for that
  producer, epoch and coordinator epoch in that partition (what WriteTxnMarkers does), on its
  leader only. Unlike Kafka the producer must have an open transaction there, so a mistyped
  producer id cannot write a stray marker.

Authorization within the caller's tenant (names are qualified on the way in, as everywhere):
aborting by id needs the right to use transactional ids (as ``requests.transactions``) and
ALTER on the cluster; finding hanging transactions needs READ on the topic (DescribeProducers');
aborting a hanging one needs ALTER on the cluster (Kafka's KIP-1037 rule) or ALTER on the topic,
the narrower grant a tenant can give a service account.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from broker_nodes.coordinator.transactions.errors import InvalidTransactionStateError
from broker_nodes.coordinator.transactions.markers import MarkerRequest
from broker_nodes.coordinator.transactions.state import TransactionMetadata, TransactionState
from broker_nodes.requests.outcomes import NO_ERROR, plain_error
from broker_nodes.requests.producers import describe_producers
from broker_nodes.requests.transactions import TransactionDescription, _check_transactional_id, _description
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import CLUSTER_RESOURCE_NAME, Operation, ResourceType
from broker_nodes.security.errors import ClusterAuthorizationError, TopicAuthorizationError
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import error_code_and_message
from broker_nodes.storage.producer_state import ActiveProducer
from broker_nodes.topic_registry import UnknownTopicOrPartitionError


class NoOpenTransactionError(InvalidTransactionStateError):
    """abort_hanging of a producer without an open transaction in the partition (INVALID_TXN_STATE)."""

    def __init__(self, topic: str, partition: int, producer_id: int) -> None:
        Exception.__init__(self, f"producer {producer_id} has no open transaction in partition {partition} of {topic!r}")
        self.topic = topic
        self.partition = partition
        self.producer_id = producer_id


@dataclass(frozen=True, slots=True)
class HangingTransaction:
    """One producer's transaction left open in a partition (what ``kafka-transactions.sh find-hanging`` prints)."""

    topic: str  # the caller's plain name
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int  # of the producer's last marker here (-1: none); abort_hanging needs it
    start_offset: int  # first offset of the open transaction: the partition's last stable offset cannot pass it
    last_timestamp_ms: int  # of the producer's last batch here
    open_for_ms: int  # now - last_timestamp_ms


@dataclass(frozen=True, slots=True)
class HangingOutcome:
    """The hanging transactions of one partition, or why the partition could not be examined here."""

    topic: str
    partition: int
    error_code: int = NO_ERROR
    error_message: str = ""
    hanging: tuple[HangingTransaction, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class AbortHangingOutcome:
    error_code: int = NO_ERROR
    error_message: str = ""


def abort_transaction(broker: Broker, call: CallContext, transactional_id: str) -> TransactionDescription:
    """Abort the id's ongoing transaction through its coordinator (this broker); answers its PrepareAbort state or the error.

    Errors: NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS (ask the coordinator), TRANSACTIONAL_ID_NOT_FOUND,
    INVALID_TXN_STATE (no transaction open), CONCURRENT_TRANSACTIONS (one is completing), the authorization failures.
    """
    try:
        qualified = _check_transactional_id(call, transactional_id)
        if not call.may(Operation.ALTER, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME):
            raise ClusterAuthorizationError("abort transactions")
        prepared = broker.transaction_coordinator.abort_transaction(qualified)
    except Exception as error:
        code, message = error_code_and_message(error)
        return TransactionDescription(transactional_id, code, message)
    return _description(transactional_id, prepared)


def find_hanging(broker: Broker, call: CallContext, topic: str, partitions: Sequence[int] | None = None) -> list[HangingOutcome]:
    """The hanging transactions of the topic's partitions (all of them when ``partitions`` is None), one outcome per partition.

    A partition led by another broker answers NOT_LEADER_OR_FOLLOWER: the caller asks each
    partition's leader. See the module docstring for what counts as hanging.
    """
    if partitions is None:
        metadata = broker.registry.get(call.qualify(topic))
        if metadata is None or not call.may(Operation.READ, ResourceType.TOPIC, topic):
            error: Exception = TopicAuthorizationError(topic, "describe the producers of")
            if metadata is None and call.may(Operation.READ, ResourceType.TOPIC, topic):
                error = UnknownTopicOrPartitionError(topic, 0)
            code, message = plain_error(error, call, topic)
            return [HangingOutcome(topic, -1, code, message)]
        partitions = range(metadata.partitions)
    now_ms = broker.clock.milliseconds()
    max_timeout_ms = broker.config.integer("transaction.max.timeout.ms")
    ongoing = _ongoing_by_producer(broker)
    outcomes = []
    for described in describe_producers(broker, call, [(topic, partition) for partition in partitions]):
        if described.error_code != NO_ERROR:
            outcomes.append(HangingOutcome(topic, described.partition, described.error_code, described.error_message))
            continue
        qualified_partition = (call.qualify(topic), described.partition)
        hanging = tuple(
            _hanging(topic, described.partition, producer, now_ms)
            for producer in described.producers
            if producer.current_txn_start_offset >= 0
            and now_ms - producer.last_timestamp > max_timeout_ms
            and qualified_partition not in ongoing.get(producer.producer_id, frozenset())
        )
        outcomes.append(HangingOutcome(topic, described.partition, hanging=hanging))
    return outcomes


def _ongoing_by_producer(broker: Broker) -> dict[int, frozenset[tuple[str, int]]]:
    """Producer id -> the partitions of its Ongoing transaction, for every id this broker coordinates."""
    found: list[TransactionMetadata] = broker.transaction_coordinator.list_transactions(states=(TransactionState.ONGOING.kafka_name,))
    return {metadata.producer_id: metadata.partitions for metadata in found}


def _hanging(topic: str, partition: int, producer: ActiveProducer, now_ms: int) -> HangingTransaction:
    return HangingTransaction(
        topic=topic,
        partition=partition,
        producer_id=producer.producer_id,
        producer_epoch=producer.epoch,
        coordinator_epoch=producer.coordinator_epoch,
        start_offset=producer.current_txn_start_offset,
        last_timestamp_ms=producer.last_timestamp,
        open_for_ms=now_ms - producer.last_timestamp,
    )


def abort_hanging(
    broker: Broker, call: CallContext, *, topic: str, partition: int, producer_id: int, producer_epoch: int, coordinator_epoch: int
) -> AbortHangingOutcome:
    """Write an ABORT marker ending ``producer_id``'s open transaction in the partition (its leader only).

    ``producer_epoch`` and ``coordinator_epoch`` are those find_hanging reported: the log
    refuses an epoch older than the producer's (INVALID_PRODUCER_EPOCH) and a coordinator
    epoch older than its last marker's. INVALID_TXN_STATE when the producer has no open
    transaction in the partition; NOT_LEADER_OR_FOLLOWER when another broker leads it.
    """
    try:
        if not (call.may(Operation.ALTER, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME) or call.may(Operation.ALTER, ResourceType.TOPIC, topic)):
            raise TopicAuthorizationError(topic, "abort transactions in")
        qualified = call.qualify(topic)
        metadata = broker.registry.get(qualified)
        if metadata is None or not 0 <= partition < metadata.partitions:
            raise UnknownTopicOrPartitionError(topic, partition)
        broker.replica_manager.leader_epoch(qualified, partition)  # NotLeaderOrFollowerError when led elsewhere
        producers = broker.replica_manager.partition_log(qualified, partition).active_producers()
        if not any(producer.producer_id == producer_id and producer.current_txn_start_offset >= 0 for producer in producers):
            raise NoOpenTransactionError(topic, partition, producer_id)
        request = MarkerRequest(
            transactional_id="",
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            commit=False,
            coordinator_epoch=coordinator_epoch,
            partitions=[(qualified, partition)],
        )
        failure = broker.marker_appender.write_markers(request).get((qualified, partition))
        if failure is not None:
            raise failure
    except Exception as error:
        code, message = plain_error(error, call, topic)
        return AbortHangingOutcome(code, message)
    return AbortHangingOutcome()
