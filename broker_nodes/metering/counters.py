"""Traffic counters of one metering window, per stored (tenant-qualified) topic and partition.

The request threads add to them and the emitter drains them once per window. Everything is
counted per batch and per request, never per record: produced bytes and records come from
the append's result (the stored batch bytes and the batch headers' record counts), fetched
ones from the headers of the returned batches (:func:`fetched_totals` reads two integers per
batch and decodes nothing).

Beside the window's counters, the same additions go to running totals since the broker
started (:meth:`TrafficCounters.totals`, never drained): the dashboard's live throughput reads
them through DescribeState and turns two readings into rates.

Thread-safety: one lock, taken once per request for a few dictionary updates, and by
:meth:`TrafficCounters.drain` to swap the table for an empty one. A request is therefore
counted whole in exactly one window: the one drained after it finished.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from broker_nodes.storage.log import AppendInfo
from weir.records import BATCH_LENGTH_OFFSET, HEADER_SIZE, LOG_OVERHEAD, MIN_BATCH_LENGTH

RECORDS_COUNT_OFFSET = 57  # recordsCount, the last int32 of the 61-byte RecordBatch v2 header
_INT32 = struct.Struct(">i")

# Positions in a counter list (a list, not an object, so that an update is a few index
# operations under the lock).
BYTES_IN, RECORDS_IN, BYTES_OUT, RECORDS_OUT, PRODUCE_REQUESTS, FETCH_REQUESTS, THROTTLE_TIME_MS = range(7)
_COUNTER_COUNT = 7

PartitionKey = tuple[str, int]  # (qualified topic, partition)
# One partition's part of one request: (qualified topic, partition, bytes, records).
PartitionAmount = tuple[str, int, int, int]


@dataclass(frozen=True, slots=True)
class PartitionTraffic:
    """The client traffic of one partition in one window (all counters are deltas of the window)."""

    bytes_in: int = 0
    records_in: int = 0
    bytes_out: int = 0
    records_out: int = 0
    produce_requests: int = 0
    fetch_requests: int = 0
    throttle_time_ms: int = 0


def fetched_totals(records: bytes | bytearray | memoryview) -> tuple[int, int]:
    """(bytes, records) of the whole batches at the start of ``records``, from their headers only.

    A fetch answer holds whole batches; a trailing partial batch (never sent by this broker)
    would not be counted. Records are the headers' recordsCount: lastOffsetDelta + 1, except
    in compacted batches, where it is the number of records actually kept.
    """
    end = len(records)
    position = 0
    total_records = 0
    while end - position >= HEADER_SIZE:
        batch_length = _INT32.unpack_from(records, position + BATCH_LENGTH_OFFSET)[0]
        size = batch_length + LOG_OVERHEAD
        if batch_length < MIN_BATCH_LENGTH or position + size > end:
            break
        total_records += _INT32.unpack_from(records, position + RECORDS_COUNT_OFFSET)[0]
        position += size
    return position, total_records


class TrafficCounters:
    """The open window's counters. Thread-safe (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[PartitionKey, list[int]] = {}
        self._totals: dict[PartitionKey, list[int]] = {}

    def add_produced(self, partitions: Iterable[PartitionAmount], throttle_time_ms: int) -> None:
        """One Produce request: bytes and records appended per partition it wrote (one request each)."""
        self._add(partitions, BYTES_IN, RECORDS_IN, PRODUCE_REQUESTS, throttle_time_ms)

    def add_fetched(self, partitions: Iterable[PartitionAmount], throttle_time_ms: int) -> None:
        """One Fetch request: bytes and records returned per partition it read (one request each)."""
        self._add(partitions, BYTES_OUT, RECORDS_OUT, FETCH_REQUESTS, throttle_time_ms)

    def _add(self, partitions: Iterable[PartitionAmount], bytes_index: int, records_index: int, requests_index: int, throttle_time_ms: int) -> None:
        amounts: Sequence[PartitionAmount] = partitions if isinstance(partitions, (list, tuple)) else list(partitions)
        if not amounts:
            return
        with self._lock:
            for counts in (self._counts, self._totals):
                for topic, partition, size, records in amounts:
                    counter = counts.get((topic, partition))
                    if counter is None:
                        counter = counts[(topic, partition)] = [0] * _COUNTER_COUNT
                    counter[bytes_index] += size
                    counter[records_index] += records
                    counter[requests_index] += 1
                    counter[THROTTLE_TIME_MS] += throttle_time_ms

    def drain(self) -> dict[PartitionKey, PartitionTraffic]:
        """Everything counted since the last drain, per (qualified topic, partition); the counters restart empty."""
        with self._lock:
            counts, self._counts = self._counts, {}
        return {key: PartitionTraffic(*counter) for key, counter in counts.items()}

    def totals(self) -> dict[PartitionKey, PartitionTraffic]:
        """Everything counted since this broker started, per (qualified topic, partition)."""
        with self._lock:
            return {key: PartitionTraffic(*counter) for key, counter in self._totals.items()}


class ProduceTally:
    """What one Produce request appended, collected without a lock while the request runs.

    ``appended`` is the replica manager's callback after each append (before any acks=all
    wait, so bytes that reached the log count even when the wait then fails); ``finish``
    adds the request to the window once its throttle time is known. Used by one request
    thread only.
    """

    __slots__ = ("_counters", "_amounts")

    def __init__(self, counters: TrafficCounters) -> None:
        self._counters = counters
        self._amounts: list[PartitionAmount] = []

    def appended(self, topic: str, partition: int, info: AppendInfo) -> None:
        """Batches were appended to ``topic`` (qualified); a retried duplicate counts as a request without bytes."""
        if info.duplicate:
            self._amounts.append((topic, partition, 0, 0))
        else:
            self._amounts.append((topic, partition, info.size_bytes, info.record_count))

    def finish(self, throttle_time_ms: int) -> None:
        self._counters.add_produced(self._amounts, throttle_time_ms)
