"""The dashboard's window onto the data plane: read a partition's records, produce one record.

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

from webapp.tenant_clients import REQUEST_TIMEOUT_SECONDS, client_config
from weir import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from weir.errors import BadBatchError
from weir.message import TIMESTAMP_LOG_APPEND_TIME

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
class StartAt:
    """Where a browse starts: ``mode`` is ``offset`` (``value`` is an offset),
    ``timestamp`` (``value`` is epoch milliseconds) or ``latest`` (the last N records)."""

    mode: str
    value: int = 0


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

    @property
    def is_error(self) -> bool:
        return bool(self.error)


@dataclass(frozen=True)
class BrowseResult:
    """Records from ``start_offset`` on; ``log_start_offset`` / ``high_watermark`` bound the partition."""

    records: list[BrowsedRecord]
    start_offset: int
    log_start_offset: int
    high_watermark: int


@dataclass(frozen=True)
class ProducedRecord:
    partition: int
    offset: int


@sensitive_variables()
def read_records(tenant_public_id: str, topic: str, partition: int, start: StartAt, limit: int) -> BrowseResult:
    """Up to ``limit`` records of one partition from ``start``.

    Precondition: ``1 <= limit <= MAX_BROWSE_RECORDS``. Raises :class:`DataPlaneError`.
    """
    limit = max(1, min(limit, MAX_BROWSE_RECORDS))
    config = client_config(tenant_public_id) | {
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 200,
    }
    try:
        consumer = Consumer(config)
    except KafkaException as error:
        raise DataPlaneError.from_kafka(error.error, "Connecting to the brokers") from None
    try:
        topic_partition = TopicPartition(topic, partition)
        try:
            low, high = consumer.get_watermark_offsets(topic_partition, timeout=REQUEST_TIMEOUT_SECONDS)  # type: ignore[misc]
            first = _first_offset(consumer, topic_partition, start, limit, low, high)
        except KafkaException as error:
            raise DataPlaneError.from_kafka(error.error, "Reading the partition's offsets") from None
        if first >= high:
            return BrowseResult([], first, low, high)
        consumer.assign([TopicPartition(topic, partition, first)])
        records = _consume(consumer, limit, last_offset=high - 1)
        return BrowseResult(records, first, low, high)
    finally:
        consumer.close()


def _first_offset(consumer: Consumer, topic_partition: TopicPartition, start: StartAt, limit: int, low: int, high: int) -> int:
    if start.mode == "latest":
        return max(low, high - limit)
    if start.mode == "timestamp":
        [found] = consumer.offsets_for_times([TopicPartition(topic_partition.topic, topic_partition.partition, start.value)], timeout=REQUEST_TIMEOUT_SECONDS)
        if found.error is not None:
            raise KafkaException(found.error)
        # -1: every record is older than the timestamp.
        return high if found.offset < 0 else max(low, found.offset)
    return min(max(low, start.value), high)


def _consume(consumer: Consumer, limit: int, last_offset: int) -> list[BrowsedRecord]:
    """Records until ``limit``, the partition's high watermark at the start, or the deadline."""
    records: list[BrowsedRecord] = []
    deadline = time.monotonic() + PAGE_WAIT_SECONDS
    while len(records) < limit:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        for message in consumer.consume(limit - len(records), timeout=remaining):
            error = message.error()
            if isinstance(error, BadBatchError):
                # A stored batch that cannot be decoded: one row says so, the rest is shown.
                records.append(_bad_batch_row(message.offset(), error))  # type: ignore[arg-type]
                consumer.seek(TopicPartition(message.topic(), message.partition(), error.next_offset))  # type: ignore[arg-type]
                break
            if error is not None:
                raise DataPlaneError.from_kafka(error, "Fetching records")
            timestamp_type, timestamp_ms = message.timestamp()
            records.append(
                BrowsedRecord(
                    offset=message.offset(),  # type: ignore[arg-type]
                    timestamp=_datetime_or_none(timestamp_ms),
                    timestamp_is_log_append_time=timestamp_type == TIMESTAMP_LOG_APPEND_TIME,
                    key=message.key(),
                    value=message.value(),
                    headers=list(message.headers() or []),
                    timestamp_ms=timestamp_ms,
                )
            )
        if records and max(records[-1].offset, records[-1].last_offset) >= last_offset:
            break
    return records[:limit]


def _bad_batch_row(offset: int, error: BadBatchError) -> BrowsedRecord:
    return BrowsedRecord(
        offset=offset,
        timestamp=None,
        timestamp_is_log_append_time=False,
        key=None,
        value=None,
        headers=[],
        error=error.str(),
        last_offset=error.last_offset,
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
