"""Typed errors of the storage engine.

Each error carries the fields a caller needs to answer a client and a ``retriable`` class
attribute. Only the server's error-mapping module turns them into Kafka error codes; the
Kafka name each one maps to is given in its docstring.
"""

from __future__ import annotations

from pathlib import Path


class StorageError(Exception):
    """Base of every storage error."""

    retriable = False


class OffsetOutOfRangeError(StorageError):
    """A read below the log start offset or above the log end offset (OFFSET_OUT_OF_RANGE)."""

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(f"offset {offset} is outside the log range [{log_start_offset}, {log_end_offset}]")
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class CorruptRecordError(StorageError):
    """A batch with a wrong CRC or truncated bytes (CORRUPT_MESSAGE)."""

    def __init__(self, reason: str, position: int) -> None:
        super().__init__(f"corrupt record batch at byte {position}: {reason}")
        self.reason = reason
        self.position = position


class InvalidRecordError(StorageError):
    """A well-formed batch that breaks a rule: wrong magic, inconsistent header (INVALID_RECORD)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"invalid record batch: {reason}")
        self.reason = reason


class RecordTooLargeError(StorageError):
    """A batch larger than the topic's max.message.bytes (MESSAGE_TOO_LARGE)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"record batch of {size} bytes exceeds max.message.bytes {limit}")
        self.size = size
        self.limit = limit


class RecordBatchTooLargeForSegmentError(StorageError):
    """A batch larger than the topic's segment.bytes (RECORD_LIST_TOO_LARGE)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"record batch of {size} bytes exceeds segment.bytes {limit}")
        self.size = size
        self.limit = limit


class InvalidTimestampError(StorageError):
    """A CreateTime timestamp outside message.timestamp.before/after.max.ms (INVALID_TIMESTAMP)."""

    def __init__(self, timestamp: int, reason: str) -> None:
        super().__init__(f"timestamp {timestamp} rejected: {reason}")
        self.timestamp = timestamp
        self.reason = reason


class OutOfOrderSequenceError(StorageError):
    """An idempotent batch whose sequence does not follow the producer's last one (OUT_OF_ORDER_SEQUENCE_NUMBER)."""

    def __init__(self, producer_id: int, expected_sequence: int, received_sequence: int) -> None:
        super().__init__(f"producer {producer_id}: expected sequence {expected_sequence}, received {received_sequence}")
        self.producer_id = producer_id
        self.expected_sequence = expected_sequence
        self.received_sequence = received_sequence


class InvalidProducerEpochError(StorageError):
    """A batch from a fenced (older) producer epoch (INVALID_PRODUCER_EPOCH)."""

    def __init__(self, producer_id: int, current_epoch: int, received_epoch: int) -> None:
        super().__init__(f"producer {producer_id}: epoch {received_epoch} is older than the current epoch {current_epoch}")
        self.producer_id = producer_id
        self.current_epoch = current_epoch
        self.received_epoch = received_epoch


class TransactionCoordinatorFencedError(StorageError):
    """A transaction marker from an older coordinator epoch than the last one seen for its producer (TRANSACTION_COORDINATOR_FENCED)."""

    def __init__(self, producer_id: int, current_coordinator_epoch: int, received_coordinator_epoch: int) -> None:
        super().__init__(
            f"producer {producer_id}: marker from coordinator epoch {received_coordinator_epoch}, older than the last one seen, {current_coordinator_epoch}"
        )
        self.producer_id = producer_id
        self.current_coordinator_epoch = current_coordinator_epoch
        self.received_coordinator_epoch = received_coordinator_epoch


class InvalidTxnStateError(StorageError):
    """A non-transactional batch from a producer whose transaction is still open in this partition (INVALID_TXN_STATE)."""

    def __init__(self, producer_id: int, first_offset: int) -> None:
        super().__init__(f"producer {producer_id} sent a non-transactional batch while its transaction from offset {first_offset} is open")
        self.producer_id = producer_id
        self.first_offset = first_offset


class LogDirectoryError(StorageError):
    """An I/O failure in a log directory (KAFKA_STORAGE_ERROR); retrying may reach a healthy replica."""

    retriable = True

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"storage failure at {path}: {reason}")
        self.path = Path(path)
        self.reason = reason


class CorruptIndexError(StorageError):
    """An index file that fails its sanity check; the owner rebuilds it from the log."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"corrupt index {path}: {reason}")
        self.path = Path(path)
        self.reason = reason


class CorruptCheckpointError(StorageError):
    """A checkpoint or snapshot file that cannot be parsed."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"corrupt checkpoint {path}: {reason}")
        self.path = Path(path)
        self.reason = reason
