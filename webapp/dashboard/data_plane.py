"""The dashboard's window onto the data plane: scan a topic's records (the message browser and
its live tail, see ``webapp.dashboard.record_scan``), produce one record.

Both go through the SDK (``weir.Consumer`` / ``weir.Producer``) against
``settings.WEIR_BOOTSTRAP_SERVERS`` with a short-lived tenant token (``weir.tenant.token``,
minted by ``webapp.tenant_clients``): the brokers then treat the call as the tenant's own
with full rights on that tenant's names only, and topic names stay plain. Authorization by
role happens before these functions are called (developer and above). The functions that hold
a client configuration are ``sensitive_variables()``: an error report blanks their frames and
every frame below them (the SDK's, which hold the same token, and the tenant's records).

Every call is bounded: clients are created per call with short request timeouts and closed
in ``finally``, so a broker that is down costs the page a few seconds and a clear error,
never a hung worker. Nothing here keeps a connection between requests: browsing is rare and
a fresh client keeps the worker stateless. The configuration is ``webapp.tenant_clients``'s,
shared with the consumer group pages and API.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.views.decorators.debug import sensitive_variables

from webapp.dashboard.record_scan import Budget, Chunk, ChunkReader, Direction, Order, PartitionRange, RecordFilter, ScanResult, scan
from webapp.tenant_clients import REQUEST_TIMEOUT_SECONDS, client_config
from weir import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from weir.consumer import consume_available
from weir.errors import BadBatchError
from weir.message import TIMESTAMP_LOG_APPEND_TIME, Message

# Longest a page waits for records to arrive or for a produced record to be acknowledged.
PAGE_WAIT_SECONDS = 5.0
# The most records one browse returns (the form offers fewer).
MAX_BROWSE_RECORDS = 500


class DataPlaneError(Exception):
    """Brokers answered with an error or did not answer in time; ``message`` is for the page."""

    def __init__(self, message: str, retriable: bool) -> None:
        super().__init__(message)
        self.message = message
        self.retriable = retriable

    @classmethod
    def from_kafka(cls, error: KafkaError, doing: str) -> DataPlaneError:
        return cls(f"{doing} failed: {error.name()}: {error.str()}", error.retriable())


@dataclass(frozen=True)
class BrowsedRecord:
    """One row of the browser: a record, or (``error`` set) a stored batch that cannot be
    decoded, covering ``offset`` to ``last_offset``. ``timestamp`` is None when the record has
    none or its milliseconds (``timestamp_ms``) lie outside what a datetime can hold."""

    offset: int
    timestamp: datetime | None
    timestamp_is_log_append_time: bool
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    timestamp_ms: int = -1
    error: str = ""
    last_offset: int = -1
    partition: int = 0

    @property
    def is_error(self) -> bool:
        return bool(self.error)


@dataclass(frozen=True)
class ProducedRecord:
    partition: int
    offset: int


def _row(message: Message) -> BrowsedRecord:
    timestamp_type, timestamp_ms = message.timestamp()
    return BrowsedRecord(
        offset=message.offset(),  # type: ignore[arg-type]
        timestamp=_datetime_or_none(timestamp_ms),
        timestamp_is_log_append_time=timestamp_type == TIMESTAMP_LOG_APPEND_TIME,
        key=message.key(),
        value=message.value(),
        headers=list(message.headers() or []),
        timestamp_ms=timestamp_ms,
        partition=message.partition(),  # type: ignore[arg-type]
    )


def _bad_batch_row(offset: int, error: BadBatchError, partition: int = 0) -> BrowsedRecord:
    return BrowsedRecord(
        offset=offset,
        timestamp=None,
        timestamp_is_log_append_time=False,
        key=None,
        value=None,
        headers=[],
        error=error.str(),
        last_offset=error.last_offset,
        partition=partition,
    )


def _datetime_or_none(timestamp_ms: int) -> datetime | None:
    """The timestamp as a UTC datetime; None without one (-1) or outside datetime's years 1-9999
    (Kafka timestamps are any int64: the page then shows the raw milliseconds)."""
    if timestamp_ms < 0:
        return None
    try:
        return datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


# Longest one consume() call of a scan waits before the reader checks its position again.
SCAN_POLL_SECONDS = 0.25
# The most new records one live-tail poll returns.
MAX_TAIL_RECORDS = 100


@dataclass(frozen=True)
class ScanStart:
    """Where a scan of several partitions starts: ``mode`` is ``newest`` (backwards from the
    end), ``beginning``, ``end`` (nothing now: a live tail's start), ``offset`` (``offsets``
    per partition, clamped to what the partition holds) or ``timestamp`` (epoch ms)."""

    mode: str
    offsets: dict[int, int] | None = None
    timestamp_ms: int = 0


@sensitive_variables()
def scan_topic(
    tenant_public_id: str,
    topic: str,
    partitions: list[int],
    start: ScanStart,
    record_filter: RecordFilter,
    *,
    order: Order,
    limit: int,
    budget: Budget,
) -> ScanResult:
    """Up to ``limit`` records of ``partitions`` matching ``record_filter``, read within
    ``budget`` (see ``webapp.dashboard.record_scan``). Raises :class:`DataPlaneError`."""
    consumer = _browse_consumer(tenant_public_id)
    try:
        try:
            ranges = [_partition_range(consumer, topic, partition, start) for partition in partitions]
        except KafkaException as error:
            raise DataPlaneError.from_kafka(error.error, "Reading the partitions' offsets") from None
        if start.mode == "end":
            return ScanResult([], 0, 0, 0, "", {r.partition: r.high for r in ranges})
        direction = Direction.NEWEST_FIRST if start.mode == "newest" else Direction.FORWARD
        return scan(_chunk_reader(consumer, topic), ranges, record_filter, direction=direction, order=order, limit=limit, budget=budget)
    finally:
        consumer.close()


@sensitive_variables()
def tail_topic(tenant_public_id: str, topic: str, positions: dict[int, int], record_filter: RecordFilter, *, budget: Budget) -> ScanResult:
    """The records written to the partitions of ``positions`` since those offsets (at most
    ``MAX_TAIL_RECORDS``), and the offsets the next poll starts from. Raises :class:`DataPlaneError`."""
    consumer = _browse_consumer(tenant_public_id)
    try:
        try:
            ranges = []
            for partition, position in sorted(positions.items()):
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=REQUEST_TIMEOUT_SECONDS)  # type: ignore[misc]
                ranges.append(PartitionRange(partition, low, high, start=max(low, min(position, high))))
        except KafkaException as error:
            raise DataPlaneError.from_kafka(error.error, "Reading the partitions' offsets") from None
        reader = _chunk_reader(consumer, topic)
        return scan(reader, ranges, record_filter, direction=Direction.FORWARD, order=Order.TIMESTAMP, limit=MAX_TAIL_RECORDS, budget=budget)
    finally:
        consumer.close()


def _browse_consumer(tenant_public_id: str) -> Consumer:
    config = client_config(tenant_public_id) | {
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
    }
    try:
        return Consumer(config)
    except KafkaException as error:
        raise DataPlaneError.from_kafka(error.error, "Connecting to the brokers") from None


def _partition_range(consumer: Consumer, topic: str, partition: int, start: ScanStart) -> PartitionRange:
    topic_partition = TopicPartition(topic, partition)
    low, high = consumer.get_watermark_offsets(topic_partition, timeout=REQUEST_TIMEOUT_SECONDS)  # type: ignore[misc]
    if start.mode == "timestamp":
        [found] = consumer.offsets_for_times([TopicPartition(topic, partition, start.timestamp_ms)], timeout=REQUEST_TIMEOUT_SECONDS)
        if found.error is not None:
            raise KafkaException(found.error)
        # -1: every record is older than the time.
        first = high if found.offset < 0 else found.offset
    elif start.mode == "offset":
        first = (start.offsets or {}).get(partition, low)
    elif start.mode in ("end", "newest"):
        first = high
    else:
        first = low
    return PartitionRange(partition, low, high, start=max(low, min(first, high)))


def _chunk_reader(consumer: Consumer, topic: str) -> ChunkReader:
    """Reads ``[first, end)`` of a partition with ``consumer`` (re-assigned for each chunk)."""

    def read(partition: int, first: int, end: int, seconds: float) -> Chunk:
        consumer.assign([TopicPartition(topic, partition, first)])
        records: list[BrowsedRecord] = []
        deadline = time.monotonic() + min(seconds, PAGE_WAIT_SECONDS)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return Chunk(records, complete=False)
            for message in consume_available(consumer, end - first, min(remaining, SCAN_POLL_SECONDS)):
                if message.partition() != partition:
                    continue
                error = message.error()
                if isinstance(error, BadBatchError):
                    records.append(_bad_batch_row(message.offset(), error, partition))  # type: ignore[arg-type]
                    consumer.seek(TopicPartition(topic, partition, error.next_offset))
                    break
                if error is not None:
                    raise DataPlaneError.from_kafka(error, "Fetching records")
                if first <= message.offset() < end:  # type: ignore[operator]
                    records.append(_row(message))
            if records and max(records[-1].offset, records[-1].last_offset) >= end - 1:
                return Chunk([record for record in records if record.offset < end], complete=True)
            [position] = consumer.position([TopicPartition(topic, partition)])
            if position.offset >= end:
                return Chunk(records, complete=True)

    return read


@sensitive_variables()
def produce_record(
    tenant_public_id: str,
    topic: str,
    *,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes]],
    partition: int | None = None,
) -> ProducedRecord:
    """Produce one record and wait for its acknowledgement; raises :class:`DataPlaneError`."""
    wait_ms = int(PAGE_WAIT_SECONDS * 1000)
    config = client_config(tenant_public_id) | {"linger.ms": 0, "delivery.timeout.ms": wait_ms, "max.block.ms": wait_ms}
    outcome: dict[str, Any] = {}

    def delivered(error: KafkaError | None, message: Any) -> None:
        outcome["error"] = error
        outcome["message"] = message

    try:
        producer = Producer(config)
    except KafkaException as error:
        raise DataPlaneError.from_kafka(error.error, "Connecting to the brokers") from None
    try:
        try:
            producer.produce(topic, value=value, key=key, partition=-1 if partition is None else partition, headers=headers or None, on_delivery=delivered)
        except KafkaException as error:
            raise DataPlaneError.from_kafka(error.error, "Producing") from None
        except BufferError:
            raise DataPlaneError("Producing failed: the brokers did not accept the record in time.", retriable=True) from None
        producer.flush(PAGE_WAIT_SECONDS)
    finally:
        producer.close(timeout=1.0)
    if "message" not in outcome:
        raise DataPlaneError(f"Producing failed: no acknowledgement within {PAGE_WAIT_SECONDS:g} s.", retriable=True)
    if outcome["error"] is not None:
        raise DataPlaneError.from_kafka(outcome["error"], "Producing")
    message = outcome["message"]
    return ProducedRecord(partition=message.partition(), offset=message.offset())
