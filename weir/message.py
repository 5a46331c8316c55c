"""The values an application handles: ``Message``, ``TopicPartition`` and their constants.

Both mirror confluent-kafka's classes of the same names (accessor methods on ``Message``,
plain attributes on ``TopicPartition``) so that code written for confluent-kafka ports by
changing its import.
"""

from __future__ import annotations

from collections.abc import Sequence

from weir.errors import KafkaError

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

    The record's fields are kept as the tuple the decoder produced, so that building a
    Message costs one object and four slot stores; consumers build hundreds of thousands of
    them per second. Not thread-safe for the ``set_*`` methods, like confluent-kafka's.
    """

    __slots__ = ("_topic", "_partition", "_record", "_timestamp_type", "_error", "_latency", "_leader_epoch")

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
        self._record = record
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
        offset = self._record[0]
        return None if offset == OFFSET_INVALID else offset

    def key(self) -> bytes | None:
        return self._record[2]

    def value(self) -> bytes | None:
        return self._record[3]

    def headers(self) -> Headers | None:
        """Headers as a list of (name, value) tuples, or None when the record has none (as confluent-kafka)."""
        headers = self._record[4]
        return list(headers) if headers else None

    def timestamp(self) -> tuple[int, int]:
        """``(timestamp type, milliseconds since the epoch)``; ``(TIMESTAMP_NOT_AVAILABLE, -1)`` without one."""
        if self._timestamp_type == TIMESTAMP_NOT_AVAILABLE:
            return (TIMESTAMP_NOT_AVAILABLE, -1)
        return (self._timestamp_type, self._record[1])

    def error(self) -> KafkaError | None:
        return self._error

    def latency(self) -> float | None:
        """Seconds from produce() to the delivery report (producer side only)."""
        return self._latency

    def leader_epoch(self) -> int | None:
        return self._leader_epoch

    def set_key(self, key: bytes | None) -> None:
        offset, timestamp, _, value, headers = self._record
        self._record = (offset, timestamp, key, value, headers)

    def set_value(self, value: bytes | None) -> None:
        offset, timestamp, key, _, headers = self._record
        self._record = (offset, timestamp, key, value, headers)

    def set_headers(self, headers: Headers | None) -> None:
        offset, timestamp, key, value, _ = self._record
        self._record = (offset, timestamp, key, value, tuple(headers or ()))

    def __len__(self) -> int:
        """Size of the value in bytes (confluent-kafka's ``len(msg)``)."""
        value = self._record[3]
        return 0 if value is None else len(value)

    def len(self) -> int:
        return self.__len__()

    def __repr__(self) -> str:
        if self._error is not None:
            return f"Message(topic={self._topic!r}, partition={self._partition}, error={self._error})"
        return f"Message(topic={self._topic!r}, partition={self._partition}, offset={self.offset()})"


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
