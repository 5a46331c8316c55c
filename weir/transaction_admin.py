"""The AdminClient's transaction operations (Kafka's ``Admin`` listTransactions / describeTransactions /
abortTransaction and ``kafka-transactions.sh find-hanging``, KIP-664), and their result types.

confluent-kafka has none of these; the shapes follow Java's ``Admin``: :class:`TransactionListing`
(``listTransactions``), :class:`TransactionDescription` (``describeTransactions``) and
:class:`HangingTransaction` (what ``find-hanging`` prints and ``abort`` takes).

Where each call goes:

- list: every broker of the cluster map (each lists the transactions it coordinates), merged;
- describe and abort by transactional id: the id's transaction coordinator (FindCoordinator key
  type TRANSACTION, looked up again after NOT_COORDINATOR), which aborts by bumping the
  producer's epoch (the producer is fenced) and writing ABORT markers;
- find hanging: each partition's leader reports producers whose transaction has been open
  there longer than transaction.max.timeout.ms and that its own coordinator does not hold;
  the transactions the other brokers' coordinators list as Ongoing with that partition are
  then dropped (Kafka's tool makes the same check), so what remains no coordinator will ever end;
- abort a hanging transaction: an ABORT marker at the partition's leader for the producer id,
  epoch and coordinator epoch that find-hanging reported.

Every call raises KafkaException with the broker's error; :class:`TransactionAdmin` runs them
synchronously and the AdminClient wraps them in futures. Thread-safe: it keeps no state beyond
the coordinator cache, which is itself thread-safe.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from grpc_protos.weir.v1 import broker_pb2
from weir.cluster import Cluster
from weir.coordinator import COORDINATOR_LOADING, COORDINATOR_MOVED, GroupCoordinators
from weir.errors import ErrorCode, KafkaError, KafkaException
from weir.message import TopicPartition

ONGOING = "Ongoing"  # Kafka's name of the state of an open transaction
_LEADER_MOVED = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.UNKNOWN_LEADER_EPOCH})


@dataclass(frozen=True, slots=True)
class TransactionListing:
    """One transactional id as ``list_transactions`` reports it (Java's ``TransactionListing``)."""

    transactional_id: str
    producer_id: int
    state: str  # Kafka's names: Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, ...


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    """One transactional id's state at its coordinator (Java's ``TransactionDescription``)."""

    transactional_id: str
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int | None  # None when no transaction is open
    topic_partitions: list[TopicPartition] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class HangingTransaction:
    """A producer's transaction left open in a partition that no coordinator will end (``find-hanging``)."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int  # of the producer's last marker in the partition, -1 when none
    start_offset: int  # the open transaction's first offset: the partition's last stable offset is held there
    last_timestamp_ms: int  # of the producer's last batch in the partition
    open_for_ms: int  # since that batch, by the leader's clock


def _raise_for(code: int, message: str, what: str) -> None:
    if code:
        raise KafkaException(KafkaError(code, f"{what}: {message or KafkaError(code).str()}"))


def _description_error(response: broker_pb2.DescribeTransactionsResponse) -> tuple[int, str]:
    for item in response.transactions:
        if item.error_code in COORDINATOR_MOVED | COORDINATOR_LOADING:
            return item.error_code, item.error_message
    return 0, ""


def _abort_error(response: broker_pb2.AbortTransactionResponse) -> tuple[int, str]:
    if response.error_code in COORDINATOR_MOVED | COORDINATOR_LOADING:
        return response.error_code, response.error_message
    return 0, ""


class TransactionAdmin:
    """The transaction operations over a :class:`~weir.cluster.Cluster` (see the module docstring)."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._coordinators = GroupCoordinators(cluster, broker_pb2.COORDINATOR_KEY_TYPE_TRANSACTION)

    def list_transactions(
        self, *, states: Iterable[str] = (), producer_ids: Iterable[int] = (), min_duration_ms: int = -1, timeout: float
    ) -> list[TransactionListing]:
        """The tenant's transactional ids at every broker's coordinator, sorted by id; fails with the first broker's error."""
        return [
            TransactionListing(item.transactional_id, item.producer_id, item.state) for item in self._listed(states, producer_ids, min_duration_ms, timeout)
        ]

    def _listed(self, states: Iterable[str], producer_ids: Iterable[int], min_duration_ms: int, timeout: float) -> list[broker_pb2.TransactionDescription]:
        deadline = time.monotonic() + timeout
        request = broker_pb2.ListTransactionsRequest(state_filters=list(states), producer_id_filters=list(producer_ids), duration_filter_ms=min_duration_ms)
        found: dict[str, broker_pb2.TransactionDescription] = {}
        for broker in sorted(self._cluster.list_topics(None, timeout).brokers.values(), key=lambda node: node.id):
            address = f"{broker.host}:{broker.port}"
            response = self._cluster.call("ListTransactions", request, address=address, timeout=max(deadline - time.monotonic(), 0.001))
            _raise_for(response.error_code, response.error_message, f"ListTransactions at broker {broker.id} ({address})")
            for item in response.transactions:
                found.setdefault(item.transactional_id, item)
        return [found[transactional_id] for transactional_id in sorted(found)]

    def describe_transaction(self, transactional_id: str, *, timeout: float) -> TransactionDescription:
        """The id's state at its coordinator; TRANSACTIONAL_ID_NOT_FOUND for an id it does not know."""
        deadline = time.monotonic() + timeout
        request = broker_pb2.DescribeTransactionsRequest(transactional_ids=[transactional_id])
        response = self._coordinators.call(transactional_id, "DescribeTransactions", request, timeout=timeout, error_of=_description_error)
        (item,) = response.transactions
        _raise_for(item.error_code, item.error_message, f"DescribeTransactions of {transactional_id!r}")
        address = self._coordinators.address(transactional_id, timeout=max(deadline - time.monotonic(), 0.001))
        return TransactionDescription(
            transactional_id=item.transactional_id,
            coordinator_id=self._coordinators.node_id(address),
            state=item.state,
            producer_id=item.producer_id,
            producer_epoch=item.producer_epoch,
            transaction_timeout_ms=item.transaction_timeout_ms,
            transaction_start_time_ms=item.transaction_start_time_ms if item.transaction_start_time_ms >= 0 else None,
            topic_partitions=sorted(TopicPartition(topic.topic, partition) for topic in item.topics for partition in topic.partitions),
        )

    def abort_transaction(self, transactional_id: str, *, timeout: float) -> None:
        """Abort the id's ongoing transaction at its coordinator (its producer is fenced); returns once the abort is decided and stored."""
        request = broker_pb2.AbortTransactionRequest(transactional_id=transactional_id)
        response = self._coordinators.call(transactional_id, "AbortTransaction", request, timeout=timeout, error_of=_abort_error)
        _raise_for(response.error_code, response.error_message, f"AbortTransaction of {transactional_id!r}")

    def find_hanging(self, topic: str, partitions: Sequence[int] | None, *, timeout: float) -> list[HangingTransaction]:
        """The hanging transactions of the topic's partitions (all when None), by partition then producer id."""
        deadline = time.monotonic() + timeout
        candidates = self._hanging_at_leaders(topic, partitions, deadline)
        if not candidates:
            return []
        still_ongoing = {
            (item.producer_id, topic_partitions.topic, partition)
            for item in self._listed((ONGOING,), {candidate.producer_id for candidate in candidates}, -1, max(deadline - time.monotonic(), 0.001))
            for topic_partitions in item.topics
            for partition in topic_partitions.partitions
        }
        return [candidate for candidate in candidates if (candidate.producer_id, candidate.topic, candidate.partition) not in still_ongoing]

    def _hanging_at_leaders(self, topic: str, partitions: Sequence[int] | None, deadline: float) -> list[HangingTransaction]:
        """Ask each partition's leader; partitions whose leader moved are asked again (new metadata) until ``deadline``."""
        info = self._cluster.topic(topic, timeout=max(deadline - time.monotonic(), 0.001))
        _raise_for(info.error_code, info.error_message, f"topic {topic!r}")
        pending = sorted(set(range(info.partition_count) if partitions is None else partitions))
        for partition in pending:
            if not 0 <= partition < info.partition_count:
                raise KafkaException(KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic} [{partition}]: no such partition"))
        found: list[HangingTransaction] = []
        for attempt in range(1_000_000):  # ends at the deadline long before
            retry: list[int] = []
            last_error: KafkaError | None = None
            by_leader: dict[str, list[int]] = {}
            for partition in pending:
                address = self._cluster.leader_address(topic, partition)
                if address is None:
                    retry.append(partition)
                    last_error = KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic} [{partition}]: no leader")
                else:
                    by_leader.setdefault(address, []).append(partition)
            for address, numbers in by_leader.items():
                request = broker_pb2.FindHangingTransactionsRequest(topic=topic, partitions=numbers)
                response = self._cluster.call("FindHangingTransactions", request, address=address, timeout=max(deadline - time.monotonic(), 0.001))
                for answer in response.partitions:
                    if answer.error_code in _LEADER_MOVED:
                        retry.append(answer.partition)
                        last_error = KafkaError(answer.error_code, f"{topic} [{answer.partition}] at {address}: {answer.error_message}")
                        continue
                    _raise_for(answer.error_code, answer.error_message, f"{topic} [{answer.partition}]")
                    found.extend(_hanging(item) for item in answer.transactions)
            if not retry:
                return sorted(found, key=lambda item: (item.partition, item.producer_id))
            self._cluster.mark_stale(topic)
            pause = self._cluster.backoff(attempt)
            if time.monotonic() + pause >= deadline:
                raise KafkaException(last_error or KafkaError(ErrorCode.REQUEST_TIMED_OUT))
            time.sleep(pause)
            self._cluster.topic(topic, timeout=max(deadline - time.monotonic(), 0.001))
            pending = sorted(retry)
        raise AssertionError("unreachable: the loop ends at its deadline")

    def abort_hanging(self, hanging: HangingTransaction | broker_pb2.HangingTransaction, *, timeout: float) -> None:
        """Write the ABORT marker of a hanging transaction at its partition's leader (metadata refreshed once if the leader moved)."""
        target = broker_pb2.HangingTransaction(
            topic=hanging.topic,
            partition=hanging.partition,
            producer_id=hanging.producer_id,
            producer_epoch=hanging.producer_epoch,
            coordinator_epoch=hanging.coordinator_epoch,
        )
        deadline = time.monotonic() + timeout
        for attempt in range(1_000_000):  # ends at the deadline long before
            self._cluster.topic(target.topic, timeout=max(deadline - time.monotonic(), 0.001))
            address = self._cluster.leader_address(target.topic, target.partition)
            response = self._cluster.call(
                "AbortTransaction", broker_pb2.AbortTransactionRequest(hanging=target), address=address, timeout=max(deadline - time.monotonic(), 0.001)
            )
            what = f"abort of producer {target.producer_id}'s transaction in {target.topic} [{target.partition}]"
            pause = self._cluster.backoff(attempt)
            if response.error_code not in _LEADER_MOVED or time.monotonic() + pause >= deadline:
                _raise_for(response.error_code, response.error_message, what)
                return
            self._cluster.mark_stale(target.topic)
            time.sleep(pause)


def _hanging(item: broker_pb2.OpenTransaction) -> HangingTransaction:
    target = item.target
    return HangingTransaction(
        topic=target.topic,
        partition=target.partition,
        producer_id=target.producer_id,
        producer_epoch=target.producer_epoch,
        coordinator_epoch=target.coordinator_epoch,
        start_offset=item.start_offset,
        last_timestamp_ms=item.last_timestamp_ms,
        open_for_ms=item.open_for_ms,
    )
