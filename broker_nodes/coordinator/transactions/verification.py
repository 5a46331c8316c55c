"""KIP-890 part 1 on the produce path: a transactional batch is appended only if its partition is in the producer's ongoing transaction.

Before a partition leader appends the batches of a transactional Produce, it asks the
transactional id's coordinator (the leader of the id's ``__transaction_state`` partition)
whether each partition was added to the producer's ongoing transaction, with the batch's
producer id and epoch: this broker's own :class:`TransactionCoordinator` when it is the
coordinator, else the coordinator's ``Replication.VerifyTxnPartitions`` (Kafka's
AddPartitionsToTxn v4 verify-only form). A partition that is not in the transaction is
refused (INVALID_TXN_STATE), so a late batch of a transaction that has ended can never open
a hanging transaction or land in a later one; one of a fenced producer is PRODUCER_FENCED.
When the coordinator cannot answer now, the batch is refused with a retriable error and
nothing is appended. As in Kafka, only the first batch of a transaction in a partition is
verified: once the partition's producer state holds an open transaction of that producer id
and epoch, the partition was verified and its later batches are appended without asking
(the marker that ends the transaction there closes it, so a late batch is verified again).

A batch of a later epoch of a producer whose transaction of an earlier epoch is still open in
the partition is refused (retriable, without asking): that transaction's marker is not there
yet, and a batch appended before it would be ended by it, as part of the earlier transaction.
With transactions version 2 the coordinator lets the next transaction begin while the previous
one's markers are written (``coordinator``): the marker comes first in every partition.

Each entry is verified by its first batch's producer id and epoch, which covers the whole entry
only because an entry holds exactly one batch: ``requests.produce`` refuses any other
(INVALID_RECORD, Kafka's rule from Produce v3 on) before the append, so a transactional batch
behind a plain one can never be appended unverified.

Thread-safe: channels are opened once per coordinator address under a lock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import grpc

from broker_nodes.cluster_state import BrokerEndpoint, ClusterSnapshot
from broker_nodes.coordinator.lookup import find_transaction_coordinator
from broker_nodes.coordinator.transactions.broker_stubs import BrokerStubs
from broker_nodes.coordinator.transactions.coordinator import TransactionCoordinator
from broker_nodes.coordinator.transactions.errors import (
    InvalidProducerIdMappingError,
    InvalidTransactionStateError,
    ProducerFencedError,
    TransactionCoordinatorNotAvailableError,
    TransactionVerificationUnavailableError,
)
from broker_nodes.coordinator.transactions.markers import TopicPartition
from broker_nodes.security.authenticator import INTERNAL_TOKEN_HEADER
from grpc_protos.weir.v1 import replication_pb2
from weir.errors import ErrorCode
from weir.records import RecordFormatError, read_batch_header

VERIFY_DEADLINE_SECONDS = 10.0  # a verification is an in-memory lookup at the coordinator; this bounds an unreachable one


class TransactionVerifier:
    """Verifies the partitions of transactional produce requests with their coordinator. See the module docstring."""

    def __init__(
        self,
        this_broker: Callable[[], BrokerEndpoint],
        snapshot: Callable[[], ClusterSnapshot | None],
        coordinator: TransactionCoordinator,
        *,
        open_transaction_epoch: Callable[[str, int, int], int | None],
        channel_factory: Callable[[str], grpc.Channel],
        internal_token: str,
    ) -> None:
        self._this_broker = this_broker
        # (topic, partition, producer id) -> the epoch of the producer's open transaction in that partition's log, None when none is open
        self._open_transaction_epoch = open_transaction_epoch
        self._snapshot = snapshot
        self._coordinator = coordinator
        self._metadata = ((INTERNAL_TOKEN_HEADER, internal_token),)
        self._stubs = BrokerStubs(channel_factory)

    def refused_entries(self, transactional_id: str, entries: Sequence[tuple[str, int, bytes]]) -> dict[int, Exception]:
        """The entries (by index) that must not be appended, with why; ``transactional_id`` is qualified.

        Precondition: each entry holds one batch (see the module docstring), whose producer id
        and epoch are read; entries whose batch is not transactional are left to the log's own checks.
        """
        by_producer: dict[tuple[int, int], list[int]] = {}
        refused: dict[int, Exception] = {}
        for index, (topic, partition, records) in enumerate(entries):
            try:
                header = read_batch_header(records, 0)
            except (RecordFormatError, ValueError, IndexError):
                continue  # the log refuses it with the precise error
            if not header.is_transactional:
                continue
            open_epoch = self._open_transaction_epoch(topic, partition, header.producer_id)
            if open_epoch is not None and open_epoch < header.producer_epoch:
                refused[index] = TransactionVerificationUnavailableError(
                    transactional_id, f"the producer's transaction of epoch {open_epoch} has no marker in this partition yet"
                )
            elif open_epoch != header.producer_epoch:
                by_producer.setdefault((header.producer_id, header.producer_epoch), []).append(index)
        for (producer_id, producer_epoch), indexes in by_producer.items():
            partitions = [(entries[index][0], entries[index][1]) for index in indexes]
            outcomes = self.verify(transactional_id, producer_id, producer_epoch, partitions)
            for index, topic_partition in zip(indexes, partitions):
                error = outcomes.get(topic_partition)
                if error is None:
                    continue
                if not isinstance(error, (InvalidTransactionStateError, ProducerFencedError, InvalidProducerIdMappingError)):
                    error = TransactionVerificationUnavailableError(transactional_id, str(error))
                refused[index] = error
        return refused

    def verify(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, Exception | None]:
        """None for each partition in the producer's ongoing transaction, else the error its batch is refused with."""
        this_broker = self._this_broker()
        try:
            coordinator = find_transaction_coordinator(self._snapshot(), transactional_id, this_broker)
        except Exception as error:
            return dict.fromkeys(partitions, error)
        if coordinator.node_id == this_broker.node_id:
            try:
                return self._coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, partitions)
            except Exception as error:
                return dict.fromkeys(partitions, error)
        return self._verify_remotely(f"{coordinator.host}:{coordinator.port}", transactional_id, producer_id, producer_epoch, partitions)

    def _verify_remotely(
        self, address: str, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, Exception | None]:
        request = replication_pb2.VerifyTxnPartitionsRequest(
            transactional_id=transactional_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            partitions=[replication_pb2.TxnMarkerPartition(topic=topic, partition=partition) for topic, partition in partitions],
        )
        try:
            response = self._stubs.stub(address).VerifyTxnPartitions(request, timeout=VERIFY_DEADLINE_SECONDS, metadata=self._metadata)
        except grpc.RpcError as error:
            unavailable = TransactionCoordinatorNotAvailableError(transactional_id, f"the coordinator at {address} did not answer ({error.code().name})")
            return dict.fromkeys(partitions, unavailable)
        outcomes: dict[TopicPartition, Exception | None] = dict.fromkeys(
            partitions, TransactionCoordinatorNotAvailableError(transactional_id, f"the coordinator at {address} did not answer for the partition")
        )
        for result in response.partitions:
            outcomes[(result.topic, result.partition)] = _error_of(transactional_id, producer_id, producer_epoch, result.error_code, result.error_message)
        return outcomes

    def close(self) -> None:
        self._stubs.close()


def _error_of(transactional_id: str, producer_id: int, producer_epoch: int, code: int, message: str) -> Exception | None:
    """The typed error of a coordinator's answer: the refusals as themselves, anything else retriable (nothing appended)."""
    if code == ErrorCode.NO_ERROR:
        return None
    if code == ErrorCode.INVALID_TXN_STATE:
        return InvalidTransactionStateError(transactional_id, message)
    if code == ErrorCode.PRODUCER_FENCED:
        return ProducerFencedError(transactional_id, producer_epoch, -1)
    if code == ErrorCode.INVALID_PRODUCER_ID_MAPPING:
        return InvalidProducerIdMappingError(transactional_id, producer_id)
    return TransactionCoordinatorNotAvailableError(transactional_id, f"the coordinator could not verify the partition: {message}")
