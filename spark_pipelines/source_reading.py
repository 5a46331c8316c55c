"""Reading one input partition: the records of ``[from_offset, until_offset)`` of one topic-partition.

A task runs in a Spark Python worker. It fetches the partition's stored batches itself, one
Fetch at a time, each sized from the offsets still missing so that nothing past the range is
fetched and billed (:mod:`spark_pipelines.source_fetch`), and decodes them batch by batch with
the SDK's record codec (``weir.records.decode_records``, native C when built): each batch
becomes a list of ``(offset, timestamp, key, value, headers)`` tuples made in C, transposed
into columns with ``zip`` and handed to pyarrow, so no Python code runs per record (except
for the ``headers`` column, when asked for). Batches go to Spark as pyarrow ``RecordBatch``es
of about :data:`RECORDS_PER_BATCH` rows.

When is a range finished? Offsets are not dense: compaction removes records and control
batches take offsets without records, so the record at ``until_offset - 1`` may not exist.
The range ends when the position (the offset after the last batch read) reaches
``until_offset``, or when a fetch at the position returns no batch while the partition's
readable end (high watermark; last stable offset at read_committed) is at or past
``until_offset``. Records of a batch at or past ``until_offset`` are not returned.

Failures, each a clear error rather than a hung task:

- the position is outside the log (retention deleted records after planning, or the topic
  was recreated smaller): with ``failOnDataLoss`` the task raises :class:`DataLossError`;
  without, it goes on at the log start, or ends the range when the log ends before it;
- no progress (no batch, no readable end beyond the position) for
  ``kafkaConsumer.pollTimeoutMs``: :class:`ReadTimeoutError` naming the partition, the
  position, the end and the last client error seen (a revoked key, brokers gone);
- a stored batch whose records cannot be decoded (written by an older Weir or damaged on
  disk): with ``failOnDataLoss`` the task raises :class:`DataLossError` naming topic,
  partition and the batch's offsets; without, it goes on after the batch;
- an error that retrying cannot fix (authentication, authorization): raised at once.

At read_committed (the SDK's default ``isolation.level``) the records of aborted
transactions are left out, as the SDK's consumer does (``weir.read_committed``).

A timestamp too far from 1970 for Spark's microsecond timestamps (Kafka allows any int64 of
milliseconds) becomes a null ``timestamp`` rather than an overflow that fails the task.

The clock is injected so that the stall deadline can be tested without waiting.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from spark_pipelines.source_errors import AuthenticationFailedError, AuthorizationFailedError, DataLossError, ReadTimeoutError, WeirSourceError
from spark_pipelines.source_fetch import FetchAnswer, PartitionFetcher, densest, fetch_size
from spark_pipelines.source_planning import OffsetRange
from weir.errors import ErrorCode, KafkaError, KafkaException
from weir.read_committed import committed_batches
from weir.records import RecordFormatError, batch_records_bytes, decode_records, iter_batch_positions

RECORDS_PER_BATCH = 10_000  # rows per Arrow batch (a batch may run over by the rest of one stored batch)
_LOG_APPEND_TIME_BIT = 0x08  # RecordBatch attributes bit 3: the timestamps are the broker's
# Spark timestamps are int64 microseconds; record timestamps (ms) beyond them become null.
_MIN_MILLIS = -(2**63) // 1000 + 1
_MAX_MILLIS = (2**63 - 1) // 1000
_AUTHENTICATION = {KafkaError._AUTHENTICATION, ErrorCode.SASL_AUTHENTICATION_FAILED}
_AUTHORIZATION = {ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
_Decoded = list[tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]]


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
    topic, partition, until = offset_range.topic, offset_range.partition, offset_range.until_offset
    columns = _Columns(offset_range, arrow_schema)
    with PartitionFetcher(client_config, topic, partition) as fetcher:
        position = offset_range.from_offset
        bytes_per_offset: float | None = None
        last_error: KafkaError | None = None
        last_progress = clock()
        while position < until:
            size = fetch_size(until - position, bytes_per_offset, fetcher.max_bytes)
            try:
                answer = fetcher.fetch(position, size)
            except KafkaException as error:
                raise _fatal(error.error, offset_range) from None
            moved = position
            if answer.error is not None:
                if answer.error.code() == ErrorCode.OFFSET_OUT_OF_RANGE:
                    moved = _out_of_range(answer, offset_range, position, fail_on_data_loss)
                elif answer.error.retriable():
                    last_error = answer.error
                else:
                    raise _fatal(answer.error, offset_range)
            elif answer.records:
                with _collector_paused():
                    moved = _take(answer, columns, position, offset_range, fetcher.read_committed, fail_on_data_loss)
                bytes_per_offset = densest(answer.records, bytes_per_offset)
            elif answer.readable_end(fetcher.read_committed) >= until:
                moved = until  # nothing left below the end: compacted away, or control records only
            now = clock()
            if moved > position:
                position = moved
                last_progress = now
            elif now - last_progress >= poll_timeout_seconds:
                raise ReadTimeoutError(topic, partition, position, until, poll_timeout_seconds, last_error.str() if last_error else None)
            if len(columns) >= RECORDS_PER_BATCH:
                with _collector_paused():
                    batch = columns.flush()
                yield batch
    if len(columns):
        with _collector_paused():
            batch = columns.flush()
        yield batch


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while records are decoded and turned into columns.

    Decoding allocates a tuple per record and creates no reference cycles; with the collector
    on, every 700 allocations it may walk every live record (the SDK's consumer pauses it the
    same way). Restored as found.
    """
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _take(answer: FetchAnswer, columns: _Columns, position: int, offset_range: OffsetRange, read_committed: bool, fail_on_data_loss: bool) -> int:
    """Add the answer's records in ``[position, until)`` to ``columns``; the position after what was read."""
    records = answer.records
    until = offset_range.until_offset
    next_position = position
    # iter_batch_positions also yields control batches: they move the position on like the rest.
    for _, header in iter_batch_positions(records):
        last = header.base_offset + header.last_offset_delta
        if last < position:
            continue
        if header.base_offset >= until:
            break
        next_position = min(last + 1, until)
    batches = committed_batches(records, answer.aborted) if read_committed and answer.aborted else iter_batch_positions(records)
    for batch_position, header in batches:
        last = header.base_offset + header.last_offset_delta
        if header.is_control or last < position:
            continue
        if header.base_offset >= until:
            break
        try:
            decoded: _Decoded = decode_records(batch_records_bytes(records, batch_position, header), header, position)
        except RecordFormatError as error:
            if fail_on_data_loss:
                raise DataLossError(
                    offset_range.topic,
                    offset_range.partition,
                    f"offset {max(position, header.base_offset)} is in a stored batch (offsets {header.base_offset}..{last}) "
                    f"whose records cannot be decoded: {error.reason}",
                ) from None
            continue  # skipped: the position moves past it with the others
        if last >= until:
            decoded = [record for record in decoded if record[0] < until]
        columns.add(decoded, 1 if header.attributes & _LOG_APPEND_TIME_BIT else 0)
    return next_position


def _out_of_range(answer: FetchAnswer, offset_range: OffsetRange, position: int, fail_on_data_loss: bool) -> int:
    """The position is outside the log: fail (failOnDataLoss), or where to go on from.

    The log start when records below it are gone, the range's end when nothing of the range
    is left (the log now starts after it, or ends before the position: a recreated topic).
    """
    low, high = answer.log_start_offset, answer.high_watermark
    if fail_on_data_loss:
        raise DataLossError(offset_range.topic, offset_range.partition, f"offset {position} is no longer in the log (it holds offsets {low}..{high})")
    if position < low < offset_range.until_offset:
        return low
    if low <= position < high:
        return position  # back in range meanwhile (the log moved): fetch again from here
    return offset_range.until_offset


def _fatal(error: KafkaError, offset_range: OffsetRange) -> WeirSourceError:
    if error.code() in _AUTHENTICATION:
        return AuthenticationFailedError(error.str())
    if error.code() in _AUTHORIZATION:
        return AuthorizationFailedError(offset_range.topic, error.str())
    return WeirSourceError(f"weir source: {offset_range.topic} [{offset_range.partition}]: {error.name()}: {error.str()}")


class _Columns:
    """The decoded records (C-made tuples, per stored batch) of the next Arrow batch."""

    def __init__(self, offset_range: OffsetRange, arrow_schema: pa.Schema) -> None:
        self._topic = offset_range.topic
        self._partition = offset_range.partition
        self._schema = arrow_schema
        self._with_headers = "headers" in arrow_schema.names
        self._records: _Decoded = []
        self._timestamp_types: list[int] = []

    def __len__(self) -> int:
        return len(self._records)

    def add(self, decoded: _Decoded, timestamp_type: int) -> None:
        self._records += decoded
        self._timestamp_types += [timestamp_type] * len(decoded)

    def flush(self) -> pa.RecordBatch:
        rows = len(self._records)
        offsets, timestamps_ms, keys, values, headers = zip(*self._records)
        schema = self._schema
        millis = pa.array(timestamps_ms, pa.int64())
        in_range = pc.and_(pc.greater_equal(millis, _MIN_MILLIS), pc.less_equal(millis, _MAX_MILLIS))
        micros = pc.if_else(in_range, pc.multiply(pc.if_else(in_range, millis, 0), 1000), pa.scalar(None, pa.int64()))
        arrays = [
            pa.array(keys, schema.field("key").type),
            pa.array(values, schema.field("value").type),
            pa.array([self._topic] * rows, schema.field("topic").type),
            pa.array([self._partition] * rows, schema.field("partition").type),
            pa.array(offsets, schema.field("offset").type),
            micros.cast(schema.field("timestamp").type),
            pa.array(self._timestamp_types, schema.field("timestampType").type),
        ]
        if self._with_headers:
            # Spark's Kafka source: null, not an empty array, for a record without headers.
            arrays.append(pa.array([list(record_headers) or None for record_headers in headers], schema.field("headers").type))
        self._records = []
        self._timestamp_types = []
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
