"""The log of one partition: validated appends, reads, lookups, rolling, retention, truncation.

Transactions, as in Kafka: producers append transactional batches (attributes bit 4); the
transaction coordinator ends a producer's transaction in this partition with a marker
(``append_marker``, a control batch). The last stable offset is the first offset of the oldest
open transaction, bounded by the high watermark; read_committed reads stop there and carry the
transactions aborted in the range read, from the segments' ``.txnindex`` files.

Besides retention, two operations move the log start offset: a follower mirrors its leader's
(``increase_log_start_offset``), and a follower left behind the leader's log start discards its
whole log and restarts at that offset (``truncate_fully_and_start_at``).
"""

from __future__ import annotations

import bisect
import logging
import random
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from broker_nodes.clock import SYSTEM_CLOCK, Clock
from broker_nodes.storage.atomic_files import fsync_directory
from broker_nodes.storage.batch_validation import validate_batch_records
from broker_nodes.storage.deletion_queue import FileDeletionQueue, remove_files
from broker_nodes.storage.errors import (
    CorruptRecordError,
    InvalidRecordError,
    LogDirectoryError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordBatchTooLargeForSegmentError,
    RecordTooLargeError,
)
from broker_nodes.storage.file_cache import FileHandleCache
from broker_nodes.storage.leader_epoch_cache import LeaderEpochCache
from broker_nodes.storage.log_config import COMPRESSION_TYPE_PRODUCER, COMPRESSION_TYPE_UNCOMPRESSED, LogConfig
from broker_nodes.storage.producer_state import ActiveProducer, CompletedTransaction, ProducerEntry, ProducerStateManager
from broker_nodes.storage.recovery import PartitionRecovery, list_partition_directory, load_segments, prepare_directory
from broker_nodes.storage.retention import count_below_log_start, select_segments_to_delete
from broker_nodes.storage.segment import MAX_RELATIVE_OFFSET, AppendedBatch, LogSegment
from broker_nodes.storage.transaction_index import AbortedTransaction
from log_formats.control_records import EndTransactionMarker, encode_marker_batch, read_marker_batch
from log_formats.log_files import parse_partition_directory_name
from weir.records import (
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    BatchHeader,
    BatchTooLargeError,
    RecordFormatError,
    assign_offsets,
    batch_records_bytes,
    compression_codec,
    decode_records,
    iter_batch_positions,
    read_batch_header,
    rebuild_batch,
    set_log_append_time,
    validate_batch,
)

logger = logging.getLogger(__name__)
# A full disk fails every append until space returns: say so once per this many ms, not per request.
_APPEND_FAILURE_LOG_INTERVAL_MS = 10_000

# ListOffsets special timestamps, as Kafka defines them.
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
# Descriptors used by a log opened without a shared cache (tests, tools).
DEFAULT_PRIVATE_MAX_OPEN_FILES = 64


# The results of an append or a read, and the batches of an append, are NamedTuples: immutable
# like frozen dataclasses, and built several times per produced batch, where a frozen
# dataclass's __init__ (one object.__setattr__ per field) was a tenth of the append's own time.


class AppendInfo(NamedTuple):
    """Result of one append call."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time_ms: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    record_count: int
    size_bytes: int
    duplicate: bool  # a retried idempotent batch: nothing appended, original offsets returned


class FetchDataInfo(NamedTuple):
    """Result of one read: whole stored batches and the log's offsets at the time of reading.

    ``aborted_transactions`` is None for a read_uncommitted read; for a read_committed one it
    lists the aborted transactions overlapping the returned batches (possibly empty).
    """

    records: bytes
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int
    aborted_transactions: tuple[AbortedTransaction, ...] | None = None


class _ValidatedBatch(NamedTuple):
    position: int
    header: BatchHeader


def _nothing() -> None:
    """The change hook of a log no log manager watches."""


class PartitionLog:
    """The segments of ``<topic>-<partition>/`` and everything that changes them.

    On disk: see ``LogSegment`` (segments), ``ProducerStateManager`` (``*.snapshot``) and
    ``LeaderEpochCache`` (``leader-epoch-checkpoint``). Invariants: offsets strictly increase
    across segments; the last segment is the active one, the only one appended to, and it is
    never deleted or compacted; ``log_start_offset <= high_watermark <= log_end_offset``;
    everything below ``recovery_point`` has been fsynced.

    Thread-safety: appends, truncation, rolling, retention, compaction swaps and config changes
    are serialized by one per-log lock. Reads take no lock: they work on an immutable snapshot
    of the segment list and read each segment below a snapshot of its size, so a concurrent
    append is either wholly visible or not at all. Segments removed while a read is under way
    are renamed to ``*.deleted`` and unlinked only after ``file.delete.delay.ms``.
    """

    def __init__(
        self,
        topic: str,
        partition: int,
        directory: Path,
        config: LogConfig,
        *,
        clock: Clock,
        file_cache: FileHandleCache,
        deletion_queue: FileDeletionQueue | None,
        segments: list[LogSegment],
        log_start_offset: int,
        recovery_point: int,
        producer_state: ProducerStateManager,
        leader_epoch_cache: LeaderEpochCache,
        recovery: PartitionRecovery,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.directory = directory
        self.config = config
        self.recovery = recovery
        # Standalone brokers acknowledge at the log end; replication switches this off and
        # moves the high watermark with update_high_watermark as followers catch up.
        self.auto_advance_high_watermark = True
        self._clock = clock
        self._last_append_failure_logged_ms = -_APPEND_FAILURE_LOG_INTERVAL_MS  # one line per interval while a disk is full
        self._file_cache = file_cache
        self._deletion_queue = deletion_queue
        self._lock = threading.RLock()
        self._segments = segments
        self._base_offsets = [segment.base_offset for segment in segments]
        self._log_end_offset = segments[-1].next_offset
        # Called whenever the log start offset or the recovery point changes (both are checkpointed by the
        # log manager, which skips the checkpoint pass while no log's changed); set by the log manager.
        self.checkpointed_offsets_changed: Callable[[], None] = _nothing
        self._log_start_offset_value = min(max(log_start_offset, segments[0].base_offset), self._log_end_offset)
        self._high_watermark = self._log_end_offset
        self._recovery_point_value = min(recovery_point, self._log_end_offset)
        self._producer_state = producer_state
        # Kept beside the producer state so that lock-free readers compute the LSO from one value.
        self._first_unstable_offset: int | None = None
        self._leader_epoch_cache = leader_epoch_cache
        self._unflushed_records = 0
        self._last_flush_ms = clock.milliseconds()
        # True when records above the recovery point were found valid by recovery (``open``): flush soon.
        self._flush_requested = False
        self._roll_jitter_ms = self._new_roll_jitter()
        self._closed = False

    # -------------------------------------------------------------- opening

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        *,
        clock: Clock = SYSTEM_CLOCK,
        file_cache: FileHandleCache | None = None,
        deletion_queue: FileDeletionQueue | None = None,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        clean_shutdown: bool = False,
    ) -> PartitionLog:
        """Open (creating if needed) the partition directory ``directory``, recovering it if needed.

        ``log_start_offset`` and ``recovery_point`` come from the data directory's checkpoints.
        What recovery did is in the returned log's ``recovery`` attribute.
        """
        parsed = parse_partition_directory_name(directory.name)
        if parsed is None:
            raise ValueError(f"{directory.name!r} is not a <topic>-<partition> directory name")
        topic, partition = parsed
        file_cache = file_cache if file_cache is not None else FileHandleCache(DEFAULT_PRIVATE_MAX_OPEN_FILES)
        try:
            recovery = PartitionRecovery()
            names = prepare_directory(directory, list_partition_directory(directory), file_cache, recovery)
            segments = load_segments(
                directory,
                names,
                config,
                file_cache,
                now_ms=clock.milliseconds(),
                log_start_offset=log_start_offset,
                recovery_point=recovery_point,
                clean_shutdown=clean_shutdown,
                recovery=recovery,
            )
            # After recovery everything scanned is valid, but the recovery point moves past it
            # only once it is fsynced: not here, where a broker of thousands of partitions
            # would fsync every written one before serving, but at the log's first flush, which
            # the log manager's first maintenance pass makes (``flush_requested``).
            flush_requested = recovery.recovered and segments[-1].next_offset > recovery_point
            if clean_shutdown:
                recovery_point = segments[-1].next_offset
            log = cls(
                topic,
                partition,
                directory,
                config,
                clock=clock,
                file_cache=file_cache,
                deletion_queue=deletion_queue,
                segments=segments,
                log_start_offset=log_start_offset,
                recovery_point=recovery_point,
                producer_state=ProducerStateManager(directory, file_names=names),
                leader_epoch_cache=LeaderEpochCache(directory, file_names=names),
                recovery=recovery,
            )
            log._flush_requested = flush_requested
            log._load_producer_state(log.log_end_offset, rebuild_txn_indexes_from=recovery.txn_index_rebuild_from)
            # Epochs that began in the scanned batches may be missing from a checkpoint that was
            # not fsynced when they began (LeaderEpochCache); the batches say where each began.
            for epoch, start_offset in recovery.leader_epoch_starts:
                log._leader_epoch_cache.assign(epoch, start_offset)
            log._leader_epoch_cache.truncate_from_end(log.log_end_offset)
            log._leader_epoch_cache.truncate_from_start(log.log_start_offset)
            log._leader_epoch_cache.flush()  # a no-op unless the scan found epochs the checkpoint lacked
            return log
        except OSError as error:
            raise LogDirectoryError(directory, str(error)) from error

    # -------------------------------------------------------------- properties

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset_value

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record receives."""
        return self._log_end_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest open transaction, bounded by the high watermark and
        never below the log start: read_committed consumers see nothing at or above it."""
        first_unstable = self._first_unstable_offset
        high_watermark = self._high_watermark
        limit = high_watermark if first_unstable is None else min(first_unstable, high_watermark)
        return max(limit, self._log_start_offset)

    @property
    def recovery_point(self) -> int:
        return self._recovery_point_value

    # The two checkpointed offsets are set only through these, so that no change escapes the log manager's checkpoint.
    @property
    def _log_start_offset(self) -> int:
        return self._log_start_offset_value

    @_log_start_offset.setter
    def _log_start_offset(self, offset: int) -> None:
        if offset != self._log_start_offset_value:
            self._log_start_offset_value = offset
            self.checkpointed_offsets_changed()

    @property
    def _recovery_point(self) -> int:
        return self._recovery_point_value

    @_recovery_point.setter
    def _recovery_point(self, offset: int) -> None:
        if offset != self._recovery_point_value:
            self._recovery_point_value = offset
            self.checkpointed_offsets_changed()

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    @property
    def segments(self) -> list[LogSegment]:
        """A snapshot of the segment list, oldest first (the last one is active)."""
        return list(self._segments)

    @property
    def leader_epoch_cache(self) -> LeaderEpochCache:
        return self._leader_epoch_cache

    @property
    def last_flush_ms(self) -> int:
        return self._last_flush_ms

    @property
    def flush_requested(self) -> bool:
        """True after a recovery that found valid records above the recovery point, until the next ``flush``."""
        return self._flush_requested

    def producer_state(self, producer_id: int) -> ProducerEntry | None:
        """The remembered state of ``producer_id`` (epoch and last batches), None if unknown."""
        with self._lock:
            return self._producer_state.entry(producer_id)

    def active_producers(self) -> list[ActiveProducer]:
        """Every producer id this partition remembers (DescribeProducers), read under the log's lock."""
        with self._lock:
            return self._producer_state.active_producers()

    # -------------------------------------------------------------- appending

    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int) -> AppendInfo:
        """Validate every batch (frame, then records), assign offsets, append; nothing is stored if any batch is bad.

        Raises CorruptRecordError, InvalidRecordError, RecordTooLargeError,
        RecordBatchTooLargeForSegmentError, InvalidTimestampError, OutOfOrderSequenceError,
        InvalidProducerEpochError, InvalidTxnStateError or LogDirectoryError. A retried
        idempotent batch returns its original offsets with ``duplicate=True``. Transactional
        batches are accepted (they open or extend their producer's transaction here); whether
        the partition belongs to the producer's transaction is checked by the caller (KIP-890).
        Control batches are refused: only ``append_marker`` writes them.
        """
        config = self.config
        now_ms = self._clock.milliseconds()
        buffer = bytearray(records)
        batches = _validate_batches(buffer, config, self.partition, from_client=True)
        for index, batch in enumerate(batches):
            # The records themselves, once per batch and before any is stored (Kafka's LogValidator).
            validate_batch_records(buffer, batch.position, batch.header, config, now_ms, partition=self.partition, batch_index=index)
        buffer, batches = _recompress_if_configured(buffer, batches, config)
        log_append_time = config.uses_log_append_time
        with self._lock:
            self._check_open()
            duplicates = self._producer_state.check_append(batch.header for batch in batches)
            if any(duplicate is not None for duplicate in duplicates):
                return self._duplicate_answer(batches, duplicates)
            next_offset = self._log_end_offset
            appended: list[AppendedBatch] = []
            record_count = 0
            for batch in batches:
                header = batch.header
                assign_offsets(buffer, batch.position, next_offset, leader_epoch)
                max_timestamp = header.max_timestamp
                if log_append_time:
                    set_log_append_time(buffer, batch.position, now_ms)
                    max_timestamp = now_ms
                appended.append(AppendedBatch(batch.position, header.size, next_offset, next_offset + header.last_offset_delta, max_timestamp))
                record_count += header.records_count
                next_offset += header.last_offset_delta + 1
            # A batch without a producer id leaves no producer state, so its header as validated
            # (offsets not yet assigned) serves; an idempotent one is read again with its offsets.
            headers = [batch.header if batch.header.producer_id == NO_PRODUCER_ID else read_batch_header(buffer, batch.position) for batch in batches]
            self._append_locked(buffer, appended, now_ms, headers)
            self._leader_epoch_cache.assign(leader_epoch, appended[0].base_offset)
            if self.auto_advance_high_watermark:
                self._high_watermark = self._log_end_offset
            self._unflushed_records += record_count
            flush_due = self._unflushed_records >= config.flush_messages
        if flush_due:
            self.flush()
        return AppendInfo(
            first_offset=appended[0].base_offset,
            last_offset=appended[-1].last_offset,
            max_timestamp=max(batch.max_timestamp for batch in appended),
            log_append_time_ms=now_ms if log_append_time else -1,
            log_start_offset=self._log_start_offset,
            record_count=record_count,
            size_bytes=len(buffer),
            duplicate=False,
        )

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        *,
        commit: bool,
        coordinator_epoch: int,
        leader_epoch: int,
        now_ms: int | None = None,
    ) -> AppendInfo:
        """Write a COMMIT or ABORT marker ending ``producer_id``'s transaction in this partition (leader only).

        The marker is one control batch (see ``log_formats.control_records``) stamped
        ``now_ms`` (default: the log's clock). An ABORT adds the transaction to the
        ``.txnindex`` of the segment the marker lands in (Kafka's choice: a read_committed
        fetch scans the segments from its fetch offset onwards, and every aborted transaction
        overlapping the fetch has its marker at or after that offset). A marker for a producer
        without an open transaction is written all the same (harmless, as in Kafka). Raises
        InvalidProducerEpochError for an epoch older than the producer's (fenced),
        TransactionCoordinatorFencedError for a coordinator epoch older than the last marker's,
        LogDirectoryError when the files cannot be written.
        """
        timestamp = self._clock.milliseconds() if now_ms is None else now_ms
        marker = EndTransactionMarker(commit, coordinator_epoch)
        buffer = bytearray(encode_marker_batch(producer_id, producer_epoch, marker, timestamp_ms=timestamp, partition_leader_epoch=leader_epoch))
        header = read_batch_header(buffer, 0)
        with self._lock:
            self._check_open()
            self._producer_state.check_marker(producer_id, producer_epoch, coordinator_epoch)
            offset = self._log_end_offset
            assign_offsets(buffer, 0, offset, leader_epoch)
            self._append_locked(buffer, [AppendedBatch(0, header.size, offset, offset, header.max_timestamp)], timestamp)
            self._leader_epoch_cache.assign(leader_epoch, offset)
            if self.auto_advance_high_watermark:
                self._high_watermark = self._log_end_offset
            self._unflushed_records += 1
            flush_due = self._unflushed_records >= self.config.flush_messages
        if flush_due:
            self.flush()
        return AppendInfo(
            first_offset=offset,
            last_offset=offset,
            max_timestamp=header.max_timestamp,
            log_append_time_ms=-1,
            log_start_offset=self._log_start_offset,
            record_count=1,
            size_bytes=len(buffer),
            duplicate=False,
        )

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> AppendInfo:
        """Append batches that already carry offsets (replication): checks CRCs and offset order.

        Transactional and control batches update the producers' transactions, the last stable
        offset and the ``.txnindex`` exactly as on the leader, so a follower that becomes
        leader serves read_committed fetches the same way.
        """
        buffer = bytes(records)
        batches = _validate_batches(buffer, self.config, self.partition, from_client=False)
        with self._lock:
            self._check_open()
            expected = self._log_end_offset
            appended = []
            record_count = 0
            for batch in batches:
                header = batch.header
                if header.base_offset < expected:
                    raise InvalidRecordError(f"batch base offset {header.base_offset} is below the log end offset {expected}")
                appended.append(AppendedBatch(batch.position, header.size, header.base_offset, header.last_offset, header.max_timestamp))
                record_count += header.records_count
                expected = header.next_offset
            self._append_locked(buffer, appended, self._clock.milliseconds())
            for batch in batches:
                if batch.header.partition_leader_epoch >= 0:
                    self._leader_epoch_cache.assign(batch.header.partition_leader_epoch, batch.header.base_offset)
            self._unflushed_records += record_count
            flush_due = self._unflushed_records >= self.config.flush_messages
        if flush_due:
            self.flush()
        return AppendInfo(
            first_offset=appended[0].base_offset,
            last_offset=appended[-1].last_offset,
            max_timestamp=max(batch.max_timestamp for batch in appended),
            log_append_time_ms=-1,
            log_start_offset=self._log_start_offset,
            record_count=record_count,
            size_bytes=len(buffer),
            duplicate=False,
        )

    def _append_locked(self, buffer: bytes | bytearray, appended: list[AppendedBatch], now_ms: int, headers: list[BatchHeader] | None = None) -> None:
        """Write ``appended`` and update the producers from ``headers`` (default: read from ``buffer``),
        which must carry the stored offsets wherever the batch has a producer id or is a control batch."""
        if headers is None:
            headers = [read_batch_header(buffer, batch.position) for batch in appended]
        markers = [_marker_of(buffer, batch.position, header) if header.is_control else None for batch, header in zip(appended, headers, strict=True)]
        try:
            segment = self._maybe_roll(len(buffer), appended[0].base_offset, appended[-1].last_offset, now_ms)
            segment.append(buffer, appended)
        except OSError as error:
            if now_ms - self._last_append_failure_logged_ms >= _APPEND_FAILURE_LOG_INTERVAL_MS:
                self._last_append_failure_logged_ms = now_ms
                logger.error("%s: append refused, nothing stored (%s); appends are retried as they come", self.directory.name, error)
            raise LogDirectoryError(self.directory, str(error)) from error
        self._log_end_offset = appended[-1].last_offset + 1
        try:
            for header, marker in zip(headers, markers, strict=True):
                self._update_producer_state_locked(header, marker, self._segments[-1])
        except OSError as error:
            raise LogDirectoryError(self.directory, str(error)) from error

    def _update_producer_state_locked(self, header: BatchHeader, marker: EndTransactionMarker | None, segment: LogSegment | None) -> None:
        """Producer and transaction bookkeeping for one appended (or replayed) batch.

        ``segment`` is where the batch lies, or None when replaying a range whose aborted
        transactions are already indexed; an ABORT marker adds its entry to that segment's
        ``.txnindex``.
        """
        if marker is None:
            self._producer_state.update(header)
        elif header.producer_id != NO_PRODUCER_ID:
            completed = self._producer_state.complete_transaction(
                header.producer_id, header.producer_epoch, marker.coordinator_epoch, header.base_offset, commit=marker.commit
            )
            if completed.aborted and segment is not None:
                segment.txn_index.append(self._aborted_entry(completed))
        self._first_unstable_offset = self._producer_state.first_unstable_offset()

    def _aborted_entry(self, completed: CompletedTransaction) -> AbortedTransaction:
        return AbortedTransaction(
            completed.producer_id, completed.first_offset, completed.last_offset, self._producer_state.last_stable_offset_after(completed)
        )

    def _duplicate_answer(self, batches: list[_ValidatedBatch], duplicates: list) -> AppendInfo:
        if not all(duplicate is not None for duplicate in duplicates):
            # A retried batch sent together with new ones: Kafka's clients never do this, and
            # accepting the new ones would reorder the producer's sequence.
            index = next(i for i, duplicate in enumerate(duplicates) if duplicate is not None)
            header = batches[index].header
            entry = self._producer_state.entry(header.producer_id)
            expected = (entry.last_sequence + 1) if entry is not None else 0
            raise OutOfOrderSequenceError(header.producer_id, expected, header.base_sequence)
        return AppendInfo(
            first_offset=duplicates[0].first_offset,
            last_offset=duplicates[-1].last_offset,
            max_timestamp=max(duplicate.max_timestamp for duplicate in duplicates),
            log_append_time_ms=-1,
            log_start_offset=self._log_start_offset,
            record_count=sum(batch.header.records_count for batch in batches),
            size_bytes=0,
            duplicate=True,
        )

    # -------------------------------------------------------------- rolling

    def _maybe_roll(self, size: int, first_offset: int, last_offset: int, now_ms: int) -> LogSegment:
        active = self._segments[-1]
        if active.is_empty:
            if last_offset - active.base_offset > MAX_RELATIVE_OFFSET or first_offset != active.base_offset:
                return self._roll_locked(first_offset)
            return active
        config = self.config
        reason = None
        if active.size + size > config.segment_bytes:
            reason = "segment.bytes"
        elif now_ms - active.created_ms > config.segment_ms - self._roll_jitter_ms:
            reason = "segment.ms"
        elif active.indexes_full:
            reason = "segment.index.bytes"
        elif last_offset - active.base_offset > MAX_RELATIVE_OFFSET:
            reason = "relative offset overflow"
        if reason is None:
            return active
        logger.debug("%s: rolling segment %d (%s)", self.directory.name, active.base_offset, reason)
        return self._roll_locked(first_offset)

    def roll(self) -> None:
        """Close the active segment (fsynced) and start a new one at the log end; no-op when it is empty."""
        with self._lock:
            self._check_open()
            if self._segments[-1].is_empty:
                return
            try:
                self._roll_locked(self._log_end_offset)
            except OSError as error:
                raise LogDirectoryError(self.directory, str(error)) from error

    def _roll_locked(self, base_offset: int) -> LogSegment:
        previous = self._segments[-1]
        segments = list(self._segments)
        if previous.is_empty:
            # An empty active segment is replaced rather than kept as an empty closed segment.
            segments.pop()
            self._remove_segments_locked([previous], schedule=False)
        else:
            previous.on_roll()
        config = self.config
        segment = LogSegment.create(
            self.directory,
            base_offset,
            self._file_cache,
            index_max_bytes=config.segment_index_bytes,
            index_interval_bytes=config.index_interval_bytes,
            created_ms=self._clock.milliseconds(),
        )
        segments.append(segment)
        self._set_segments(segments)
        fsync_directory(self.directory)
        self._producer_state.take_snapshot(base_offset)
        self._roll_jitter_ms = self._new_roll_jitter()
        return segment

    def _new_roll_jitter(self) -> int:
        jitter = self.config.segment_jitter_ms
        return random.randint(0, min(jitter, max(self.config.segment_ms - 1, 0))) if jitter > 0 else 0

    # -------------------------------------------------------------- reading

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
        read_committed: bool = False,
    ) -> FetchDataInfo:
        """Whole stored batches from the one containing ``offset``, below ``max_offset``.

        ``max_offset`` defaults to the high watermark, or to the last stable offset when
        ``read_committed``; such a read also returns the aborted transactions overlapping the
        batches returned (Kafka's collectAbortedTxns over the segments' ``.txnindex``). At most
        ``max_bytes`` bytes unless the first batch alone is larger and ``min_one_batch``
        (KIP-74). Raises OffsetOutOfRangeError outside [log start, log end].
        """
        log_end = self._log_end_offset
        high_watermark = self._high_watermark
        last_stable = self.last_stable_offset
        segments, bases = self._segments, self._base_offsets
        log_start = self._log_start_offset
        if offset < log_start or offset > log_end:
            raise OffsetOutOfRangeError(offset, log_start, log_end)
        default_limit = last_stable if read_committed else high_watermark
        limit = min(default_limit if max_offset is None else max_offset, log_end)
        aborted: tuple[AbortedTransaction, ...] | None = () if read_committed else None
        empty = FetchDataInfo(b"", high_watermark, log_start, log_end, last_stable, aborted)
        if offset >= limit or (max_bytes <= 0 and not min_one_batch):
            return empty
        index = max(bisect.bisect_right(bases, offset) - 1, 0)
        try:
            for position in range(index, len(segments)):
                segment = segments[position]
                if segment.base_offset >= limit:
                    break
                max_position = None
                if position == len(segments) - 1 or bases[position + 1] > limit:
                    size_before = segment.size
                    found = segment.find_batch(limit)
                    max_position = found[0] if found is not None else size_before
                data = segment.read(offset, max_bytes, max_position=max_position, min_one_batch=min_one_batch)
                if data is None:
                    continue
                if read_committed and data:
                    aborted = _collect_aborted_transactions(segments[index:], offset, _next_offset_after(data))
                return FetchDataInfo(data, high_watermark, log_start, log_end, last_stable, aborted)
        except FileNotFoundError:
            # The segment was removed by retention after this read took its snapshot and its
            # delay expired: the offset is gone, as if the read had come a moment later.
            raise OffsetOutOfRangeError(offset, self._log_start_offset, self._log_end_offset) from None
        except OSError as error:
            raise LogDirectoryError(self.directory, str(error)) from error
        return empty

    def iter_batch_headers(self, from_offset: int) -> Iterator[BatchHeader]:
        """Headers of every stored batch that ends at or after ``from_offset``, in order."""
        for _, _, header in self._iter_stored_batches(from_offset):
            yield header

    def _iter_stored_batches(self, from_offset: int) -> Iterator[tuple[LogSegment, int, BatchHeader]]:
        """(segment, position, header) of every stored batch that ends at or after ``from_offset``, in order."""
        segments, bases = self._segments, self._base_offsets
        index = max(bisect.bisect_right(bases, from_offset) - 1, 0)
        for segment in segments[index:]:
            found = segment.find_batch(from_offset)
            if found is None:
                continue
            for position, header in segment.iter_headers(found[0]):
                yield segment, position, header

    def aborted_transactions(self, start_offset: int, end_offset: int) -> tuple[AbortedTransaction, ...]:
        """The aborted transactions overlapping ``[start_offset, end_offset)``, from the segments' ``.txnindex``."""
        segments, bases = self._segments, self._base_offsets
        index = max(bisect.bisect_right(bases, start_offset) - 1, 0)
        return _collect_aborted_transactions(segments[index:], start_offset, end_offset)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """ListOffsets: (offset, timestamp) for ``timestamp`` or the special values -1, -2, -3."""
        if timestamp == EARLIEST_TIMESTAMP:
            return self._log_start_offset, NO_TIMESTAMP
        if timestamp == LATEST_TIMESTAMP:
            return self._log_end_offset, NO_TIMESTAMP
        segments = self._segments
        log_start = self._log_start_offset
        try:
            if timestamp == MAX_TIMESTAMP:
                best: LogSegment | None = None
                for segment in segments:
                    if segment.max_timestamp > (best.max_timestamp if best is not None else NO_TIMESTAMP):
                        best = segment
                if best is None:
                    return None
                return best.find_offset_by_timestamp(best.max_timestamp, max(log_start, best.offset_of_max_timestamp))
            for segment in segments:
                if segment.max_timestamp < timestamp or segment.next_offset <= log_start:
                    continue
                found = segment.find_offset_by_timestamp(timestamp, log_start)
                if found is not None:
                    return found
        except OSError as error:
            raise LogDirectoryError(self.directory, str(error)) from error
        return None

    # -------------------------------------------------------------- offsets and config

    def update_high_watermark(self, offset: int) -> None:
        """Set the high watermark, clamped to [log start, log end]."""
        with self._lock:
            self._high_watermark = min(max(offset, self._log_start_offset), self._log_end_offset)

    def update_config(self, config: LogConfig) -> None:
        with self._lock:
            self.config = config
            active = self._segments[-1]
            active.index_interval_bytes = config.index_interval_bytes
            active.offset_index.set_max_bytes(config.segment_index_bytes)
            active.time_index.set_max_bytes(config.segment_index_bytes)
            self._roll_jitter_ms = self._new_roll_jitter()

    # -------------------------------------------------------------- truncation

    def truncate_to(self, offset: int) -> None:
        """Remove every batch that holds an offset at or above ``offset`` (whole batches)."""
        with self._lock:
            self._check_open()
            if offset >= self._log_end_offset:
                return
            try:
                keep = [segment for segment in self._segments if segment.base_offset < offset]
                drop = [segment for segment in self._segments if segment.base_offset >= offset]
                if not keep:
                    new_start = max(offset, 0)
                    self._remove_segments_locked(drop, schedule=True)
                    keep = [
                        LogSegment.create(
                            self.directory,
                            new_start,
                            self._file_cache,
                            index_max_bytes=self.config.segment_index_bytes,
                            index_interval_bytes=self.config.index_interval_bytes,
                            created_ms=self._clock.milliseconds(),
                        )
                    ]
                    self._log_start_offset = new_start
                else:
                    self._remove_segments_locked(drop, schedule=True)
                    keep[-1].truncate_to(offset)
                self._set_segments(keep)
            except OSError as error:
                raise LogDirectoryError(self.directory, str(error)) from error
            self._log_end_offset = keep[-1].next_offset
            self._high_watermark = min(self._high_watermark, self._log_end_offset)
            self._recovery_point = min(self._recovery_point, self._log_end_offset)
            self._log_start_offset = min(self._log_start_offset, self._log_end_offset)
            self._producer_state.delete_snapshots_above(self._log_end_offset)
            self._load_producer_state(self._log_end_offset)
            self._leader_epoch_cache.truncate_from_end(self._log_end_offset)
            logger.info("%s: truncated to offset %d", self.directory.name, self._log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Discard every record and continue as an empty log starting at ``offset`` (Kafka's truncateFullyAndStartAt).

        A follower whose log end is below its leader's log start offset can never fetch the
        offsets in between (retention deleted them on the leader); it empties its log and
        fetches from the leader's log start. Afterwards log start, log end, high watermark and
        recovery point are all ``offset``, the leader-epoch cache is empty and the producer
        state is reset (no snapshots). ``offset`` may be above, below or inside the old range.

        Crash safety, by the order of the steps: (1) producer snapshots are removed, so a
        reopened old log rebuilds producer state from its own batches; (2) every old segment
        is renamed to ``*.deleted`` (removed at the next open) and the directory fsynced, so a
        crash leaves a remainder of the old segments, itself a valid log; (3) the empty
        segment at ``offset`` is created and the directory fsynced; (4) the epoch cache is
        cleared, and if a crash comes first, ``open`` cuts the stale epochs to the new log's
        range. Whatever the crash point, the reopened log is valid and a follower reaching
        the leader's log start again truncates again. Raises ValueError for a negative offset
        and LogDirectoryError when the files cannot be changed.
        """
        if offset < 0:
            raise ValueError(f"a log cannot start at the negative offset {offset}")
        with self._lock:
            self._check_open()
            try:
                self._producer_state.truncate_fully()
                self._first_unstable_offset = None
                self._remove_segments_locked(list(self._segments), schedule=True)
                fsync_directory(self.directory)
                segment = LogSegment.create(
                    self.directory,
                    offset,
                    self._file_cache,
                    index_max_bytes=self.config.segment_index_bytes,
                    index_interval_bytes=self.config.index_interval_bytes,
                    created_ms=self._clock.milliseconds(),
                )
                fsync_directory(self.directory)
                self._set_segments([segment])
                self._log_start_offset = self._log_end_offset = offset
                self._high_watermark = self._recovery_point = offset
                self._unflushed_records = 0
                self._roll_jitter_ms = self._new_roll_jitter()
                self._leader_epoch_cache.clear()
            except OSError as error:
                raise LogDirectoryError(self.directory, str(error)) from error
            logger.warning("%s: discarded the whole log; it now starts at offset %d", self.directory.name, offset)

    # -------------------------------------------------------------- durability

    def flush(self) -> None:
        """fsync every segment holding offsets above the recovery point; move it to the log end."""
        with self._lock:
            self._check_open()
            end = self._log_end_offset
            recovery_point = self._recovery_point
            segments = [segment for segment in self._segments if segment.next_offset > recovery_point]
            self._unflushed_records = 0
        try:
            for segment in segments:
                segment.flush()
            # The epochs of the flushed batches must be durable before the recovery point passes
            # them: recovery re-assigns epochs only from the batches above it.
            self._leader_epoch_cache.flush()
        except FileNotFoundError:
            pass  # A segment removed by retention meanwhile needs no fsync.
        except OSError as error:
            raise LogDirectoryError(self.directory, str(error)) from error
        with self._lock:
            self._recovery_point = max(self._recovery_point, min(end, self._log_end_offset))
            self._last_flush_ms = self._clock.milliseconds()
            self._flush_requested = False

    def write_producer_snapshot(self) -> None:
        """Persist producer state as of the log end (clean shutdown), unless loading needs no new snapshot.

        As Kafka's ``takeSnapshot``, nothing is written when the newest snapshot is already at
        the log end (nothing was appended since it), nor for a log with no batch, no producer
        and no snapshot (loading replays nothing): a broker of 10,000 mostly idle partitions
        otherwise stops with 10,000 snapshot writes of two fsyncs each.
        """
        with self._lock:
            end = self._log_end_offset
            snapshots = self._producer_state.snapshot_offsets()
            if snapshots and snapshots[-1] == end:
                return
            if not snapshots and end == self._log_start_offset and self._producer_state.is_empty:
                return
            self._producer_state.take_snapshot(end)

    # -------------------------------------------------------------- retention

    def apply_retention(self, now_ms: int) -> int:
        """Delete the closed segments that retention selects; return how many were deleted."""
        with self._lock:
            self._check_open()
            doomed = select_segments_to_delete(self._segments, self.config, now_ms, self._high_watermark, self._log_start_offset)
            if not doomed:
                return 0
            self._delete_oldest_segments_locked(len(doomed))
            logger.info(
                "%s: retention deleted %d segment(s); log start offset is now %d",
                self.directory.name,
                len(doomed),
                self._log_start_offset,
            )
            return len(doomed)

    def increase_log_start_offset(self, offset: int) -> bool:
        """Raise the log start offset to ``offset`` and delete the closed segments wholly below it.

        A follower mirrors its leader's log start from every fetch answer this way, so that
        retention on the leader (or a records deletion there) removes the same records here
        (Kafka's maybeIncrementLogStartOffset). The new start is capped at the high watermark,
        which keeps ``log_start_offset <= high_watermark``; an offset at or below the current
        log start changes nothing. Returns whether the log start moved. Records below the new
        start in a segment that also holds later ones stay on disk but cannot be read.
        """
        if offset <= self._log_start_offset:
            return False  # the common case, answered without the lock
        with self._lock:
            self._check_open()
            new_start = min(offset, self._high_watermark)
            if new_start <= self._log_start_offset:
                return False
            self._log_start_offset = new_start
            self._leader_epoch_cache.truncate_from_start(new_start)
            deleted = count_below_log_start(self._segments[:-1], new_start)
            if deleted:
                self._delete_oldest_segments_locked(deleted)
                logger.info("%s: log start offset raised to %d; %d segment(s) below it deleted", self.directory.name, new_start, deleted)
            return True

    def _delete_oldest_segments_locked(self, count: int) -> None:
        """Remove the ``count`` oldest segments (never the active one); the log start follows."""
        doomed, remaining = self._segments[:count], self._segments[count:]
        try:
            self._remove_segments_locked(doomed, schedule=True)
        except OSError as error:
            raise LogDirectoryError(self.directory, str(error)) from error
        self._set_segments(remaining)
        self._log_start_offset = max(self._log_start_offset, remaining[0].base_offset)
        self._leader_epoch_cache.truncate_from_start(self._log_start_offset)

    def replace_segment(self, old: LogSegment, new: LogSegment | None) -> None:
        """Swap a compacted replacement in for the closed segment ``old`` (or remove ``old`` when None).

        The caller (the cleaner) has already renamed the replacement's files to their live
        names; this updates the segment list and disposes of ``old``'s in-memory handle.
        """
        with self._lock:
            segments = list(self._segments)
            if old not in segments or old is segments[-1]:
                raise ValueError(f"segment {old.base_offset} is not a closed segment of {self.directory.name}")
            index = segments.index(old)
            if new is None:
                del segments[index]
            else:
                segments[index] = new
            self._set_segments(segments)

    def _remove_segments_locked(self, segments: list[LogSegment], *, schedule: bool) -> None:
        for segment in segments:
            paths = segment.rename_to_deleted()
            delay = self.config.file_delete_delay_ms
            if schedule and self._deletion_queue is not None and delay > 0:
                self._deletion_queue.schedule(paths, self._clock.milliseconds() + delay)
            else:
                remove_files(paths)

    def _set_segments(self, segments: list[LogSegment]) -> None:
        # Readers take the two lists without the lock; each assignment replaces a whole list.
        self._base_offsets = [segment.base_offset for segment in segments]
        self._segments = segments

    # -------------------------------------------------------------- producer state

    def _load_producer_state(self, end_offset: int, *, rebuild_txn_indexes_from: int | None = None) -> None:
        """Producer state as of ``end_offset``: the newest snapshot, then the batches after it.

        With ``rebuild_txn_indexes_from`` (a segment base offset; recovery emptied the
        ``.txnindex`` of that segment and every later one), the replay starts at a snapshot at
        or below it and re-adds the aborted transactions of those segments.
        """
        max_snapshot = end_offset if rebuild_txn_indexes_from is None else min(end_offset, rebuild_txn_indexes_from)
        snapshot_offset = self._producer_state.load_latest_snapshot(max_snapshot)
        self._producer_state.delete_snapshots_above(end_offset)
        self._first_unstable_offset = self._producer_state.first_unstable_offset()
        replay_from = snapshot_offset if snapshot_offset is not None else self._log_start_offset
        if replay_from >= end_offset:
            return
        # Headers only, no record decoding, except for the rare control batches (markers).
        for segment, position, header in self._iter_stored_batches(replay_from):
            if header.base_offset >= end_offset:
                break
            if header.base_offset < replay_from:
                continue
            marker = None
            if header.is_control:
                marker = _stored_marker_or_none(segment, position, header)
                if marker is None:
                    continue
            rebuilding = rebuild_txn_indexes_from is not None and segment.base_offset >= rebuild_txn_indexes_from
            self._update_producer_state_locked(header, marker, segment if rebuilding else None)

    # -------------------------------------------------------------- closing

    def close(self) -> None:
        """Release file descriptors; the log cannot be used afterwards."""
        with self._lock:
            self._closed = True
            for segment in self._segments:
                segment.close()

    def locked(self) -> threading.RLock:
        """The per-log lock, for maintenance that must not interleave with appends (compaction swaps)."""
        return self._lock

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise LogDirectoryError(self.directory, "the log is closed")


# ------------------------------------------------------------------ validation


def _validate_batches(buffer: bytes | bytearray, config: LogConfig, partition: int, *, from_client: bool) -> list[_ValidatedBatch]:
    """Check the frame of every batch of an append before any is stored; raise the first problem
    found, naming the partition and the batch's index in the request. Control batches come
    only from replication (``from_client`` false), never from a producer."""
    if not buffer:
        raise InvalidRecordError(f"the request holds no record batches for partition {partition}")
    batches: list[_ValidatedBatch] = []
    position = 0
    end = len(buffer)
    while position < end:
        where = f"partition {partition}, batch {len(batches)}"
        try:
            header = validate_batch(buffer, position, max_batch_size=config.max_message_bytes)
        except BatchTooLargeError as error:
            raise RecordTooLargeError(error.size, error.limit) from None
        except RecordFormatError as error:
            if error.corrupt:
                raise CorruptRecordError(f"{error.reason} ({where})", error.position) from None
            raise InvalidRecordError(f"{error.reason} ({where})") from None
        if header.size > config.segment_bytes:
            raise RecordBatchTooLargeForSegmentError(header.size, config.segment_bytes)
        _check_header_rules(header, where, from_client=from_client)
        batches.append(_ValidatedBatch(position, header))
        position += header.size
    return batches


def _check_header_rules(header: BatchHeader, where: str, *, from_client: bool) -> None:
    if header.records_count <= 0:
        raise InvalidRecordError(f"a batch must hold at least one record, not {header.records_count} ({where})")
    if header.last_offset_delta != header.records_count - 1:
        raise InvalidRecordError(f"lastOffsetDelta {header.last_offset_delta} disagrees with the record count {header.records_count} ({where})")
    if header.is_control:
        if from_client:
            raise InvalidRecordError(f"control batches may only be written by the broker ({where})")
        return
    if header.is_transactional and header.producer_id == NO_PRODUCER_ID:
        raise InvalidRecordError(f"a transactional batch must carry a producer id ({where})")
    if header.producer_id != NO_PRODUCER_ID and (header.producer_epoch < 0 or header.base_sequence < 0):
        raise InvalidRecordError(
            f"idempotent batch of producer {header.producer_id} has epoch {header.producer_epoch} and base sequence {header.base_sequence} ({where})"
        )


def _marker_of(buffer: bytes | bytearray, position: int, header: BatchHeader) -> EndTransactionMarker:
    """The marker of a replicated control batch; CorruptRecordError when it holds none."""
    try:
        return read_marker_batch(buffer, position, header)
    except RecordFormatError as error:
        raise CorruptRecordError(f"control batch at offset {header.base_offset}: {error.reason}", position) from None


def _stored_marker_or_none(segment: LogSegment, position: int, header: BatchHeader) -> EndTransactionMarker | None:
    """The marker of a stored control batch; None (logged) when it cannot be read, which replay skips."""
    try:
        return read_marker_batch(segment.pread(header.size, position), 0, header)
    except RecordFormatError as error:
        logger.warning("%s: control batch at offset %d ignored: %s", segment.log_path.name, header.base_offset, error.reason)
        return None


def _next_offset_after(data: bytes) -> int:
    """The offset after the last whole batch of ``data`` (non-empty, whole batches)."""
    next_offset = 0
    for _, header in iter_batch_positions(data):
        next_offset = header.next_offset
    return next_offset


def _collect_aborted_transactions(segments: list[LogSegment], start_offset: int, end_offset: int) -> tuple[AbortedTransaction, ...]:
    """Kafka's collectAbortedTransactions: walk the indexes from the segment of ``start_offset`` until one says the search is complete."""
    found: list[AbortedTransaction] = []
    for segment in segments:
        # A marker may lie far after the range its transaction overlaps, so no segment is
        # skipped by its base offset; an entry whose LSO reached the range end ends the walk.
        result = segment.txn_index.collect(start_offset, end_offset)
        found.extend(result.transactions)
        if result.complete:
            break
    return tuple(found)


def _recompress_if_configured(buffer: bytearray, batches: list[_ValidatedBatch], config: LogConfig) -> tuple[bytearray, list[_ValidatedBatch]]:
    """Re-encode batches whose codec differs from a fixed compression.type (the slow path)."""
    if config.compression_type == COMPRESSION_TYPE_PRODUCER:
        return buffer, batches
    name = "none" if config.compression_type == COMPRESSION_TYPE_UNCOMPRESSED else config.compression_type
    codec = compression_codec(name)
    if all(batch.header.compression == codec for batch in batches):
        return buffer, batches
    parts: list[bytes] = []
    for batch in batches:
        header = batch.header
        original = bytes(buffer[batch.position : batch.position + header.size])
        if header.compression == codec:
            parts.append(original)
            continue
        try:
            records = decode_records(batch_records_bytes(original, 0, header), header)
        except RecordFormatError as error:
            raise CorruptRecordError(error.reason, batch.position) from None
        parts.append(rebuild_batch(header, records, codec=codec))
    new_buffer = bytearray(b"".join(parts))
    new_batches = []
    position = 0
    for _ in batches:
        header = read_batch_header(new_buffer, position)
        if header.size > config.max_message_bytes:
            raise RecordTooLargeError(header.size, config.max_message_bytes)
        new_batches.append(_ValidatedBatch(position, header))
        position += header.size
    return new_buffer, new_batches
