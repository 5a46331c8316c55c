"""Typed errors of the transaction coordinator; ``server.errors`` maps each to Kafka's code.

Each names the transactional id as the tenant knows it (``names.plain``) and says whether a
client may retry it (``retriable``), as Kafka's errors of the same codes are.
"""

from __future__ import annotations

from broker_nodes import names


class TransactionCoordinatorError(Exception):
    retriable = False


class NotTransactionCoordinatorError(TransactionCoordinatorError):
    """This broker does not lead the id's ``__transaction_state`` partition (NOT_COORDINATOR)."""

    retriable = True

    def __init__(self, transactional_id: str, partition: int) -> None:
        super().__init__(
            f"this broker is not the transaction coordinator of {names.plain(transactional_id)!r}: "
            f"it does not lead partition {partition} of __transaction_state; find the coordinator again"
        )
        self.transactional_id = transactional_id
        self.partition = partition


class TransactionCoordinatorLoadingError(TransactionCoordinatorError):
    """The id's partition is led here but still being loaded (COORDINATOR_LOAD_IN_PROGRESS)."""

    retriable = True

    def __init__(self, transactional_id: str, partition: int) -> None:
        super().__init__(
            f"the transactions of partition {partition} of __transaction_state (holding {names.plain(transactional_id)!r}) are still being loaded; try again shortly"
        )
        self.transactional_id = transactional_id
        self.partition = partition


class TransactionCoordinatorNotAvailableError(TransactionCoordinatorError):
    """No broker can coordinate the id now, or its state could not be persisted (COORDINATOR_NOT_AVAILABLE)."""

    retriable = True

    def __init__(self, transactional_id: str, reason: str) -> None:
        super().__init__(f"no transaction coordinator is available for {names.plain(transactional_id)!r}: {reason}")
        self.transactional_id = transactional_id
        self.reason = reason


class InvalidTransactionalIdError(TransactionCoordinatorError):
    """An empty transactional id (INVALID_REQUEST, as Kafka answers it)."""

    def __init__(self) -> None:
        super().__init__("a transactional id must not be empty")


class InvalidTransactionTimeoutError(TransactionCoordinatorError):
    """transaction.timeout.ms not positive or above transaction.max.timeout.ms (INVALID_TRANSACTION_TIMEOUT)."""

    def __init__(self, timeout_ms: int, max_timeout_ms: int) -> None:
        super().__init__(f"transaction timeout {timeout_ms} ms must be positive and at most transaction.max.timeout.ms ({max_timeout_ms} ms)")
        self.timeout_ms = timeout_ms
        self.max_timeout_ms = max_timeout_ms


class ConcurrentTransactionsError(TransactionCoordinatorError):
    """The id's previous transaction is still completing, or another call on it is in flight (CONCURRENT_TRANSACTIONS)."""

    retriable = True

    def __init__(self, transactional_id: str, state: str) -> None:
        super().__init__(f"transactional id {names.plain(transactional_id)!r} is busy ({state}); retry shortly")
        self.transactional_id = transactional_id
        self.state = state


class InvalidProducerIdMappingError(TransactionCoordinatorError):
    """The producer id is not the one of the transactional id, or the id is unknown (INVALID_PRODUCER_ID_MAPPING)."""

    def __init__(self, transactional_id: str, producer_id: int) -> None:
        super().__init__(f"producer id {producer_id} is not the producer id of transactional id {names.plain(transactional_id)!r}")
        self.transactional_id = transactional_id
        self.producer_id = producer_id


class ProducerFencedError(TransactionCoordinatorError):
    """A newer producer (epoch) owns the transactional id (PRODUCER_FENCED)."""

    def __init__(self, transactional_id: str, producer_epoch: int, current_epoch: int) -> None:
        super().__init__(
            f"producer epoch {producer_epoch} of transactional id {names.plain(transactional_id)!r} is fenced: the current epoch is {current_epoch}"
        )
        self.transactional_id = transactional_id
        self.producer_epoch = producer_epoch
        self.current_epoch = current_epoch


class InvalidTransactionStateError(TransactionCoordinatorError):
    """The call does not fit the transaction's state, e.g. a commit without a transaction (INVALID_TXN_STATE)."""

    def __init__(self, transactional_id: str, reason: str) -> None:
        super().__init__(f"transactional id {names.plain(transactional_id)!r}: {reason}")
        self.transactional_id = transactional_id
        self.reason = reason


class TransactionalIdNotFoundError(TransactionCoordinatorError):
    """Describe of an id the coordinator does not know (TRANSACTIONAL_ID_NOT_FOUND)."""

    def __init__(self, transactional_id: str) -> None:
        super().__init__(f"transactional id {names.plain(transactional_id)!r} is not known to its coordinator")
        self.transactional_id = transactional_id


class TransactionalIdAuthorizationError(TransactionCoordinatorError):
    """The caller may not use the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED)."""

    def __init__(self, transactional_id: str, operation: str) -> None:
        super().__init__(f"not authorized to {operation} transactional id {transactional_id!r}")
        self.transactional_id = transactional_id
        self.operation = operation


class TransactionalBatchWithoutIdError(TransactionalIdAuthorizationError):
    """A Produce carries a transactional batch but no transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka answers it).

    Only the id's coordinator can verify (KIP-890) that the partition is in the producer's
    ongoing transaction: appended unverified, such a batch could open a transaction no
    coordinator knows, which would hold the partition's last stable offset back for ever.
    ``topic`` is the caller's plain name.
    """

    def __init__(self, topic: str, partition: int, batch_index: int) -> None:
        TransactionCoordinatorError.__init__(
            self,
            f"a transactional batch needs its producer's transactional id on the Produce request, and this request names none "
            f"(topic {topic!r} partition {partition}, batch {batch_index}); nothing of the request was appended",
        )
        self.transactional_id = ""
        self.operation = "use"
        self.topic = topic
        self.partition = partition
        self.batch_index = batch_index


class TransactionVerificationUnavailableError(TransactionCoordinatorError):
    """A transactional batch could not be verified with its coordinator now; nothing was appended.

    Answered NOT_ENOUGH_REPLICAS, as Kafka answers it (KIP-890): every producer retries that
    error, whatever its version.
    """

    retriable = True

    def __init__(self, transactional_id: str, reason: str) -> None:
        super().__init__(f"the partition could not be verified with the transaction coordinator of {names.plain(transactional_id)!r}: {reason}")
        self.transactional_id = transactional_id
        self.reason = reason
