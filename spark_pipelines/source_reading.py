"""Reading one input partition: the records of ``[from_offset, until_offset)`` of one topic-partition.

A task runs in a Spark Python worker. It makes one SDK ``Consumer`` (no group, no commits),
assigns the partition at ``from_offset`` and consumes until it has passed ``until_offset - 1``,
turning records into pyarrow ``RecordBatch``es of at most :data:`RECORDS_PER_BATCH` rows
column by column (Spark takes Arrow batches as they are; per-row tuples would be converted
row by row in Python).

When is a range finished? Offsets are not dense: compaction removes records and control
batches take offsets without records, so the record at ``until_offset - 1`` may not exist.
The consumer therefore runs with ``enable.partition.eof``: an end-of-partition event at an
offset ``>= until_offset`` ends the range, and so does any record at ``until_offset`` or
later (it is not returned).

Failures, each a clear error rather than a hung task:

- the position is outside the log (retention deleted records after planning, or the topic
  was recreated smaller): the consumer's offset reset is ``error``, so this is reported
  rather than silently moved. With ``failOnDataLoss`` the task raises :class:`DataLossError`;
  without, it goes on at the log start, or ends the range when the log ends before it;
- no progress (no record, no end-of-partition event beyond the position) for
  ``kafkaConsumer.pollTimeoutMs``: :class:`ReadTimeoutError` naming the partition, the
  position, the end and the last client error seen (a revoked key, brokers gone);
- a stored batch whose records cannot be decoded (the SDK's _BAD_MSG, written by an older
  Weir or damaged on disk): with ``failOnDataLoss`` the task raises :class:`DataLossError`
  naming topic, partition and the batch's offsets; without, it seeks past the batch and goes on;
- an error the SDK reports as not retriable (authentication, authorization): raised at once.

A timestamp too far from 1970 for Spark's microsecond timestamps (Kafka allows any int64 of
milliseconds) becomes a null ``timestamp`` rather than an overflow that fails the task.

The clock is injected so that the stall deadline can be tested without waiting.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from spark_pipelines.source_errors import AuthenticationFailedError, AuthorizationFailedError, DataLossError, ReadTimeoutError, WeirSourceError
from spark_pipelines.source_planning import OffsetRange
from weir import Consumer, KafkaError, Message, TopicPartition
from weir.errors import BadBatchError, ErrorCode
from weir.message import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME

RECORDS_PER_BATCH = 10_000  # rows per Arrow batch, and records asked of one consume()
# Longest single consume() wait, so the stall deadline is checked at least this often.
CONSUME_WAIT_SECONDS = 1.0
# Prefetch limit of a task's consumer (KiB): a range ends before the partition does, and
# prefetching far past its end would be read for nothing.
PREFETCH_KIB = 16 * 1024
# Kafka's TimestampType ids, which Spark's timestampType column carries.
_SPARK_TIMESTAMP_TYPE = {TIMESTAMP_CREATE_TIME: 0, TIMESTAMP_LOG_APPEND_TIME: 1}
_NO_TIMESTAMP_TYPE = -1
# Spark timestamps are int64 microseconds; record timestamps beyond them become null.
_MIN_MICROS = -(2**63)
_MAX_MICROS = 2**63 - 1
_OFFSET_RESET_FAILED = KafkaError._AUTO_OFFSET_RESET  # type: ignore[attr-defined]
_PARTITION_EOF = KafkaError._PARTITION_EOF  # type: ignore[attr-defined]
_AUTHENTICATION = {KafkaError._AUTHENTICATION, ErrorCode.SASL_AUTHENTICATION_FAILED}  # type: ignore[attr-defined]
_AUTHORIZATION = {ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED}  # type: ignore[attr-defined]


def reader_config(client_config: Mapping[str, Any], *, errors: list[KafkaError]) -> dict[str, Any]:
    """The task consumer's configuration: the caller's plus what reading ranges depends on."""
    return {
        **client_config,
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        # A position outside the log is reported, not silently moved: read_range decides per failOnDataLoss.
        "auto.offset.reset": "error",
        "queued.max.messages.kbytes": min(int(client_config.get("queued.max.messages.kbytes", PREFETCH_KIB)), PREFETCH_KIB),
        "error_cb": errors.append,
    }


def read_range(
    offset_range: OffsetRange,
    client_config: Mapping[str, Any],
    arrow_schema: pa.Schema,
    *,
    fail_on_data_loss: bool,
    poll_timeout_seconds: float,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[pa.RecordBatch]:
    """Arrow batches (``arrow_schema``: Spark's Kafka columns, with headers when it has them) of the range's records."""
    if offset_range.size <= 0:
        return
    errors: list[KafkaError] = []
    consumer = Consumer(reader_config(client_config, errors=errors))
    try:
        consumer.assign([TopicPartition(offset_range.topic, offset_range.partition, offset_range.from_offset)])
        columns = _Columns(offset_range, arrow_schema)
        position = offset_range.from_offset
        last_progress = clock()
        while position < offset_range.until_offset:
            messages = consumer.consume(RECORDS_PER_BATCH, timeout=CONSUME_WAIT_SECONDS)
            step = _take(messages, columns, position, offset_range)
            _raise_fatal(errors, offset_range)
            if step.bad_batch is not None:
                step = _skip_bad_batch(consumer, offset_range, step, fail_on_data_loss)
            if step.out_of_range is not None:
                if fail_on_data_loss:
                    raise DataLossError(offset_range.topic, offset_range.partition, f"offset {step.position} is no longer in the log ({step.out_of_range})")
                resumed = _skip_missing(consumer, offset_range, step.position)
                step = _Step(step.progressed or resumed != step.position, resumed)
            position = step.position
            now = clock()
            if step.progressed:
                last_progress = now
            elif now - last_progress >= poll_timeout_seconds:
                raise ReadTimeoutError(
                    offset_range.topic, offset_range.partition, position, offset_range.until_offset, poll_timeout_seconds, errors[-1].str() if errors else None
                )
            if len(columns) >= RECORDS_PER_BATCH:
                yield columns.flush()
        if len(columns):
            yield columns.flush()
    finally:
        consumer.close()


@dataclass(frozen=True)
class _Step:
    """What one consume() round did: whether the position moved, the new position, and the
    out-of-range report that stopped it, if any."""

    progressed: bool
    position: int
    out_of_range: str | None = None
    bad_batch: BadBatchError | None = None


def _take(messages: list[Message], columns: _Columns, position: int, offset_range: OffsetRange) -> _Step:
    """Add ``messages`` below the range's end to ``columns``."""
    until = offset_range.until_offset
    start = position
    for message in messages:
        error = message.error()
        if error is not None:
            if error.code() == _PARTITION_EOF:
                if (message.offset() or 0) >= until:
                    return _Step(True, until)
                continue
            if error.code() == _OFFSET_RESET_FAILED:
                return _Step(position > start, position, error.str())
            if isinstance(error, BadBatchError):
                return _Step(position > start, position, bad_batch=error)
            if error.retriable():
                continue
            raise _fatal(error, offset_range)
        offset = message.offset()
        if offset is None or offset < position:
            continue
        if offset >= until:
            return _Step(True, until)
        columns.append(message)
        position = offset + 1
    return _Step(position > start, position)


def _skip_bad_batch(consumer: Consumer, offset_range: OffsetRange, step: _Step, fail_on_data_loss: bool) -> _Step:
    """A batch at the position cannot be decoded: fail naming it, or (failOnDataLoss false) go on after it."""
    bad = step.bad_batch
    assert bad is not None
    if fail_on_data_loss:
        raise DataLossError(
            offset_range.topic,
            offset_range.partition,
            f"offset {step.position} is in a stored batch (offsets {bad.first_offset}..{bad.last_offset}) whose records cannot be decoded: {bad.str()}",
        )
    resumed = min(bad.next_offset, offset_range.until_offset)
    consumer.seek(TopicPartition(offset_range.topic, offset_range.partition, resumed))
    return _Step(True, resumed)


def _skip_missing(consumer: Consumer, offset_range: OffsetRange, position: int) -> int:
    """failOnDataLoss false and ``position`` is outside the log: the position to go on from.

    The log start when records below it are gone, the range's end when nothing of the range
    is left (the log now starts after it, or ends before the position: a recreated topic).
    """
    low, high = consumer.get_watermark_offsets(TopicPartition(offset_range.topic, offset_range.partition))
    if position < low < offset_range.until_offset:
        resumed = low
    elif low <= position < high:
        resumed = position  # back in range meanwhile (the log moved): fetch again from here
    else:
        return offset_range.until_offset
    consumer.seek(TopicPartition(offset_range.topic, offset_range.partition, resumed))
    return resumed


def _raise_fatal(errors: list[KafkaError], offset_range: OffsetRange) -> None:
    for error in errors:
        if not error.retriable():
            raise _fatal(error, offset_range)


def _fatal(error: KafkaError, offset_range: OffsetRange) -> WeirSourceError:
    if error.code() in _AUTHENTICATION:
        return AuthenticationFailedError(error.str())
    if error.code() in _AUTHORIZATION:
        return AuthorizationFailedError(offset_range.topic, error.str())
    return WeirSourceError(f"weir source: {offset_range.topic} [{offset_range.partition}]: {error.name()}: {error.str()}")


class _Columns:
    """Column lists of the rows of the next Arrow batch."""

    def __init__(self, offset_range: OffsetRange, arrow_schema: pa.Schema) -> None:
        self._topic = offset_range.topic
        self._partition = offset_range.partition
        self._schema = arrow_schema
        self._with_headers = "headers" in arrow_schema.names
        self._headers_type = arrow_schema.field("headers").type if self._with_headers else None
        self._reset()

    def _reset(self) -> None:
        self._keys: list[bytes | None] = []
        self._values: list[bytes | None] = []
        self._offsets: list[int] = []
        self._timestamps: list[int | None] = []
        self._timestamp_types: list[int] = []
        self._headers: list[list[dict[str, Any]] | None] = []

    def __len__(self) -> int:
        return len(self._offsets)

    def append(self, message: Message) -> None:
        self._keys.append(message.key())
        self._values.append(message.value())
        self._offsets.append(message.offset())  # type: ignore[arg-type]
        timestamp_type, timestamp_ms = message.timestamp()
        micros = timestamp_ms * 1000
        self._timestamps.append(micros if _MIN_MICROS <= micros <= _MAX_MICROS else None)
        self._timestamp_types.append(_SPARK_TIMESTAMP_TYPE.get(timestamp_type, _NO_TIMESTAMP_TYPE))
        if self._with_headers:
            headers = message.headers()
            # Spark's Kafka source: null, not an empty array, for a record without headers.
            self._headers.append([{"key": name, "value": value} for name, value in headers] if headers else None)

    def flush(self) -> pa.RecordBatch:
        rows = len(self._offsets)
        fields = self._schema
        arrays = [
            pa.array(self._keys, fields.field("key").type),
            pa.array(self._values, fields.field("value").type),
            pa.array([self._topic] * rows, fields.field("topic").type),
            pa.array([self._partition] * rows, fields.field("partition").type),
            pa.array(self._offsets, fields.field("offset").type),
            pa.array(self._timestamps, fields.field("timestamp").type),
            pa.array(self._timestamp_types, fields.field("timestampType").type),
        ]
        if self._with_headers:
            arrays.append(pa.array(self._headers, self._headers_type))
        self._reset()
        return pa.RecordBatch.from_arrays(arrays, schema=self._schema)
