"""The values an application handles: ``Message``, ``TopicPartition`` and their constants.

Both mirror confluent-kafka's classes of the same names (accessor methods on ``Message``,
plain attributes on ``TopicPartition``) so that code written for confluent-kafka ports by
changing its import.
"""

from __future__ import annotations

from collections.abc import Sequence

from weir import records
from weir.errors import KafkaError
from weir.records import TIMESTAMP_TYPE_LOG_APPEND_TIME, BatchHeader

# Special offsets, as confluent-kafka numbers them.
OFFSET_BEGINNING = -2  # the log start offset of the partition
OFFSET_END = -1  # the log end offset: only records produced from now on
OFFSET_STORED = -1000  # the offset committed for the consumer's group.id
OFFSET_INVALID = -1001  # no offset: "not set" in results and arguments

# The first element of ``Message.timestamp()``.
TIMESTAMP_NOT_AVAILABLE = 0
TIMESTAMP_CREATE_TIME = 1
TIMESTAMP_LOG_APPEND_TIME = 2

Headers = list[tuple[str, bytes | None]]

# A decoded record as ``weir.records.decode_records`` yields it: (offset, timestamp, key, value, headers).
RecordTuple = tuple[int, int, bytes | None, bytes | None, Sequence[tuple[str, bytes | None]]]

_NO_RECORD: RecordTuple = (OFFSET_INVALID, -1, None, None, ())


class Message:
    """One consumed record, one delivery report, or one event carrying an error.

    Each field has a slot of its own, so that building a Message costs one object: consumers
    build a million of them per second, in C (``decode_messages``, which fills these slots
    directly; keep their names in step with weir/_records_native.c). Not thread-safe for the
    ``set_*`` methods, like confluent-kafka's.
    """

    __slots__ = ("_topic", "_partition", "_offset", "_timestamp", "_key", "_value", "_headers", "_timestamp_type", "_error", "_latency", "_leader_epoch")

    def __init__(
        self,
        topic: str | None,
        partition: int | None,
        record: RecordTuple = _NO_RECORD,
        timestamp_type: int = TIMESTAMP_NOT_AVAILABLE,
        error: KafkaError | None = None,
        latency: float | None = None,
        leader_epoch: int | None = None,
    ) -> None:
        self._topic = topic
        self._partition = partition
        self._offset, self._timestamp, self._key, self._value, self._headers = record
        self._timestamp_type = timestamp_type
        self._error = error
        self._latency = latency
        self._leader_epoch = leader_epoch

    def topic(self) -> str | None:
        return self._topic

    def partition(self) -> int | None:
        return self._partition

    def offset(self) -> int | None:
        """The record's offset; None when there is no record (some error events); -1 for acks=0."""
        offset = self._offset
        return None if offset == OFFSET_INVALID else offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> Headers | None:
        """Headers as a list of (name, value) tuples, or None when the record has none (as confluent-kafka)."""
        headers = self._headers
        return list(headers) if headers else None

    def timestamp(self) -> tuple[int, int]:
        """``(timestamp type, milliseconds since the epoch)``; ``(TIMESTAMP_NOT_AVAILABLE, -1)`` without one."""
        if self._timestamp_type == TIMESTAMP_NOT_AVAILABLE:
            return (TIMESTAMP_NOT_AVAILABLE, -1)
        return (self._timestamp_type, self._timestamp)

    def error(self) -> KafkaError | None:
        return self._error

    def latency(self) -> float | None:
        """Seconds from produce() to the delivery report (producer side only)."""
        return self._latency

    def leader_epoch(self) -> int | None:
        return self._leader_epoch

    def set_key(self, key: bytes | None) -> None:
        self._key = key

    def set_value(self, value: bytes | None) -> None:
        self._value = value

    def set_headers(self, headers: Headers | None) -> None:
        self._headers = tuple(headers or ())

    def __len__(self) -> int:
        """Size of the value in bytes (confluent-kafka's ``len(msg)``)."""
        value = self._value
        return 0 if value is None else len(value)

    def len(self) -> int:
        return self.__len__()

    def __repr__(self) -> str:
        if self._error is not None:
            return f"Message(topic={self._topic!r}, partition={self._partition}, error={self._error})"
        return f"Message(topic={self._topic!r}, partition={self._partition}, offset={self.offset()})"


def decode_messages(data: bytes, header: BatchHeader, min_offset: int, topic: str, partition: int, leader_epoch: int | None) -> list[Message]:
    """The records of one batch's (decompressed) records section as consumed Messages.

    ``decode_records`` and a Message per record, in one C call when the native codec is on (the
    consumer's hot path); records below ``min_offset`` are skipped. Raises RecordFormatError on
    malformed records, as decode_records.
    """
    timestamp_type = TIMESTAMP_LOG_APPEND_TIME if header.timestamp_type == TIMESTAMP_TYPE_LOG_APPEND_TIME else TIMESTAMP_CREATE_TIME
    native = records._native
    if native is not None and type(data) is bytes:
        try:
            decoded: list[Message] | None = native.decode_messages(
                data,
                header.records_count,
                header.base_offset,
                header.base_timestamp,
                header.max_timestamp,
                header.timestamp_type == TIMESTAMP_TYPE_LOG_APPEND_TIME,
                min_offset,
                topic,
                partition,
                timestamp_type,
                leader_epoch,
            )
        except OverflowError:  # a min_offset beyond int64: the Python path below
            decoded = None
        if decoded is not None:
            return decoded
    return [Message(topic, partition, record, timestamp_type, None, None, leader_epoch) for record in records.decode_records_python(data, header, min_offset)]


if records._native is not None:
    records._native.init_message(Message)


class TopicPartition:
    """A topic, a partition and an offset: the argument and result type of many client calls.

    ``partition`` -1 means "not given" and ``offset`` OFFSET_INVALID (-1001) means "no
    offset", as in confluent-kafka. ``error`` is set on results that failed for this
    partition only. Instances hash and compare by (topic, partition), so they can key dicts.
    """

    __slots__ = ("topic", "partition", "offset", "metadata", "leader_epoch", "error")

    def __init__(
        self,
        topic: str,
        partition: int = -1,
        offset: int = OFFSET_INVALID,
        metadata: str | None = None,
        leader_epoch: int | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.metadata = metadata
        self.leader_epoch = leader_epoch
        self.error: KafkaError | None = None

    def __hash__(self) -> int:
        return hash((self.topic, self.partition))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return (self.topic, self.partition) == (other.topic, other.partition)

    def __lt__(self, other: TopicPartition) -> bool:
        return (self.topic, self.partition) < (other.topic, other.partition)

    def __repr__(self) -> str:
        error = f", error={self.error}" if self.error is not None else ""
        return f"TopicPartition{{topic={self.topic},partition={self.partition},offset={self.offset},leader_epoch={self.leader_epoch}{error}}}"

    __str__ = __repr__


class ThrottleEvent:
    """A broker held back a response for the tenant's quota (confluent-kafka's ThrottleEvent, given to ``throttle_cb``).

    ``throttle_time`` is in seconds (float), as confluent-kafka's.
    """

    __slots__ = ("broker_name", "broker_id", "throttle_time")

    def __init__(self, broker_name: str, broker_id: int, throttle_time: float) -> None:
        self.broker_name = broker_name
        self.broker_id = broker_id
        self.throttle_time = throttle_time

    def __str__(self) -> str:
        return f"{self.broker_name}/{self.broker_id} throttled for {int(self.throttle_time * 1000)} ms"

    def __repr__(self) -> str:
        return f"ThrottleEvent({self.broker_name!r}, {self.broker_id}, {self.throttle_time})"
