"""Log compaction: keep the latest record per key in the closed segments of compacted logs.

A pass over one log:

1. The cleanable range is the prefix of closed segments below the high watermark whose
   newest record is older than ``min.compaction.lag.ms``; the active segment is never touched.
2. The pass runs when the dirty share of that range (bytes at or after the first dirty offset,
   the end of the previous pass) reaches ``min.cleanable.dirty.ratio``, when the oldest dirty
   segment is older than ``max.compaction.lag.ms``, or when a tombstone's delete horizon passed.
3. An offset map ``key -> latest offset`` is built from the dirty part.
4. Each segment of the range is rewritten one to one: a record survives when no later record
   has its key. Tombstones (null value) survive until their batch's delete horizon (set to
   ``now + delete.retention.ms`` the first time a pass keeps them, stored in the batch header
   as Kafka's KIP-534 does) has passed. Offsets never change: each retained batch keeps its
   base offset, last offset delta, producer id, epoch and base sequence. Batches whose
   records all survive are copied byte for byte.
5. A rewritten segment is swapped in crash-safely: write ``<base>.{log,index,timeindex,txnindex}.cleaned``
   and fsync them; rename the indexes to ``.swap``, then the log (the commit point); rename
   the old files to ``.deleted``; rename the ``.swap`` files to their live names. Recovery
   completes a swap whose ``.log.swap`` exists and discards any other ``.cleaned`` / ``.swap``.

Records without a key cannot be superseded and are kept.

Transactions (Kafka's LogCleaner with KIP-98): the cleanable range ends at the last stable
offset, so no open transaction is compacted. Batches of aborted transactions (found through
the ``.txnindex`` entries) are removed and their records supersede nothing; a committed
record is never compacted away in favour of an aborted one. A transaction marker (control
batch) stays while any batch of its transaction remains below it. The first pass after which
none remains stores a delete horizon in the marker (``now + delete.retention.ms``, in the
batch header as for tombstones) and a pass after that horizon removes it, so a reader that
saw the transaction's batches has delete.retention.ms to reach its marker. A rewritten
segment gets a new ``.txnindex`` (swapped in with its other files) without the entries whose
ABORT marker was removed: a read_committed reader told of an aborted transaction drops its
producer's batches until it reads that marker, so an entry must never outlive its marker.
An entry whose marker remains is kept even when its batches are gone. As in Kafka, a
producer's last batch is kept (emptied) so that its sequence survives, and then so is its
transaction's marker. Rewritten transactional batches keep their transactional bit.

A stored batch whose records cannot be decoded (written before brokers validated records, or
damaged on disk) is kept byte for byte and its records supersede nothing: compaction never
drops what it cannot read, nor a record whose newer version it cannot see. Each pass logs a
warning naming the partition and the batch's offsets, and compacts the rest of the log.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from broker_nodes.clock import Clock
from broker_nodes.storage.atomic_files import fsync_directory
from broker_nodes.storage.checkpoints import OffsetCheckpointFile
from broker_nodes.storage.deletion_queue import FileDeletionQueue, remove_files
from broker_nodes.storage.errors import CorruptCheckpointError
from broker_nodes.storage.log import PartitionLog
from broker_nodes.storage.retention import segment_age_reference_ms
from broker_nodes.storage.segment import LogSegment
from broker_nodes.storage.transaction_index import AbortedTransaction
from log_formats.log_files import CLEANED_SUFFIX, SWAP_SUFFIX
from weir.records import (
    NO_PRODUCER_ID,
    BatchHeader,
    Header,
    RecordFormatError,
    batch_records_bytes,
    decode_records,
    rebuild_batch,
)

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class CleanResult:
    """What one compaction pass did to one log."""

    segments_rewritten: int
    segments_removed: int
    records_removed: int
    bytes_before: int
    bytes_after: int
    end_offset: int


class LogCleaner:
    """Compacts logs whose cleanup.policy contains ``compact``.

    Keeps, per partition, the first dirty offset (persisted in ``cleaner-offset-checkpoint``)
    and the earliest pending tombstone delete horizon (in memory; unknown after a restart,
    which makes the first pass eligible). Not thread-safe: one maintenance thread calls it.
    """

    def __init__(self, clock: Clock, checkpoint_path: Path | None = None, deletion_queue: FileDeletionQueue | None = None) -> None:
        self._clock = clock
        self._checkpoint = OffsetCheckpointFile(checkpoint_path) if checkpoint_path is not None else None
        self._deletion_queue = deletion_queue
        self._first_dirty: dict[TopicPartition, int] = {}
        self._delete_horizons: dict[TopicPartition, int] = {}
        if self._checkpoint is not None:
            try:
                self._first_dirty = self._checkpoint.read()
            except CorruptCheckpointError as error:
                logger.warning("ignoring the cleaner checkpoint, every compacted log will be cleaned from its start: %s", error)

    def first_dirty_offset(self, log: PartitionLog) -> int:
        return max(self._first_dirty.get((log.topic, log.partition), 0), log.log_start_offset)

    def forget(self, topic: str, partition: int) -> None:
        self._first_dirty.pop((topic, partition), None)
        self._delete_horizons.pop((topic, partition), None)

    def write_checkpoint(self) -> None:
        if self._checkpoint is not None:
            self._checkpoint.write(self._first_dirty)

    # -------------------------------------------------------------- one pass

    def clean(self, log: PartitionLog, now_ms: int | None = None, *, force: bool = False) -> CleanResult | None:
        """Compact ``log`` if it is due (or ``force``); None when nothing was done."""
        config = log.config
        if not config.compacts:
            return None
        now_ms = self._clock.milliseconds() if now_ms is None else now_ms
        key = (log.topic, log.partition)
        cleanable = self._cleanable_segments(log, now_ms)
        if not cleanable:
            return None
        first_dirty = self.first_dirty_offset(log)
        dirty = [segment for segment in cleanable if segment.next_offset > first_dirty]
        clean_bytes = sum(segment.size for segment in cleanable if segment.next_offset <= first_dirty)
        dirty_bytes = sum(segment.size for segment in dirty)
        total = clean_bytes + dirty_bytes
        ratio = dirty_bytes / total if total else 0.0
        horizon = self._delete_horizons.get(key, 0 if key not in self._first_dirty else None)
        due = (
            force
            or (dirty_bytes > 0 and ratio >= config.min_cleanable_dirty_ratio)
            or (dirty and now_ms - segment_age_reference_ms(dirty[0]) > config.max_compaction_lag_ms)
            or (horizon is not None and horizon <= now_ms)
        )
        if not due:
            return None
        aborted = _AbortedRanges(log.aborted_transactions(cleanable[0].base_offset, cleanable[-1].next_offset))
        offset_map = _build_offset_map(dirty, first_dirty, aborted)
        result = self._rewrite(log, cleanable, offset_map, now_ms, aborted)
        self._first_dirty[key] = result.end_offset
        return result

    def _cleanable_segments(self, log: PartitionLog, now_ms: int) -> list[LogSegment]:
        config = log.config
        # The last stable offset is at most the high watermark: open transactions stay dirty.
        last_stable_offset = log.last_stable_offset
        cleanable = []
        for segment in log.segments[:-1]:
            if segment.next_offset > last_stable_offset:
                break
            if config.min_compaction_lag_ms > 0 and now_ms - segment_age_reference_ms(segment) < config.min_compaction_lag_ms:
                break
            cleanable.append(segment)
        return cleanable

    def _rewrite(self, log: PartitionLog, segments: list[LogSegment], offset_map: dict[bytes, int], now_ms: int, aborted: _AbortedRanges) -> CleanResult:
        rewritten = removed_segments = removed_records = 0
        bytes_before = sum(segment.size for segment in segments)
        bytes_after = 0
        earliest_horizon: int | None = None
        transactions = _TransactionTracker()
        for segment in segments:
            output = _compact_segment(segment, offset_map, now_ms, log, aborted, transactions)
            if output.earliest_horizon is not None:
                earliest_horizon = output.earliest_horizon if earliest_horizon is None else min(earliest_horizon, output.earliest_horizon)
            if output.data is None:
                bytes_after += segment.size
                continue
            removed_records += output.dropped
            bytes_after += len(output.data)
            if output.data:
                self._swap_in(log, segment, output.data, output.removed_markers)
                rewritten += 1
            else:
                self._remove(log, segment)
                removed_segments += 1
        key = (log.topic, log.partition)
        if earliest_horizon is None:
            self._delete_horizons.pop(key, None)
        else:
            self._delete_horizons[key] = earliest_horizon
        result = CleanResult(rewritten, removed_segments, removed_records, bytes_before, bytes_after, segments[-1].next_offset)
        logger.info(
            "%s: compacted %d segment(s), removed %d segment(s) and %d record(s), %d -> %d bytes",
            log.directory.name,
            rewritten,
            removed_segments,
            removed_records,
            bytes_before,
            bytes_after,
        )
        return result

    # -------------------------------------------------------------- swapping

    def _swap_in(self, log: PartitionLog, old: LogSegment, data: bytes, removed_markers: set[int]) -> None:
        directory = log.directory
        file_cache = old.file_cache
        config = log.config
        cleaned = LogSegment(
            directory,
            old.base_offset,
            file_cache,
            index_max_bytes=max(config.segment_index_bytes, old.offset_index.entry_count * 8 + 8),
            index_interval_bytes=config.index_interval_bytes,
            created_ms=old.created_ms,
            suffix=CLEANED_SUFFIX,
        )
        for path in cleaned.file_paths():
            with open(path, "wb"):
                pass
        # The index keeps the entries whose ABORT marker stays (a marker's offset is its entry's last offset).
        cleaned.txn_index.create()
        for entry in old.txn_index.entries:
            if entry.last_offset not in removed_markers:
                cleaned.txn_index.append(entry)
        cleaned.txn_index.flush()
        with open(cleaned.log_path, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        cleaned.size = len(data)
        cleaned.rebuild_indexes()
        cleaned.flush()
        cleaned.close()
        with log.locked():
            if log.closed or old not in log.segments:
                remove_files(cleaned.file_paths())
                return
            # Indexes first, the log last: a .log.swap on disk means the swap is committed.
            cleaned_log, cleaned_index, cleaned_time_index = cleaned.file_paths()
            cleaned_files = (cleaned_index, cleaned_time_index, cleaned.txn_index.path, cleaned_log)
            for path in cleaned_files:
                os.rename(path, _swap_name(path))
            fsync_directory(directory)
            deleted = old.rename_to_deleted()
            for path in cleaned_files:
                swap = _swap_name(path)
                os.rename(swap, swap.with_name(swap.name[: -len(SWAP_SUFFIX)]))
            fsync_directory(directory)
            replacement = LogSegment(
                directory,
                old.base_offset,
                file_cache,
                index_max_bytes=config.segment_index_bytes,
                index_interval_bytes=config.index_interval_bytes,
                created_ms=old.created_ms,
            )
            log.replace_segment(old, replacement)
        self._dispose(deleted, config.file_delete_delay_ms)

    def _remove(self, log: PartitionLog, old: LogSegment) -> None:
        with log.locked():
            if log.closed or old not in log.segments:
                return
            deleted = old.rename_to_deleted()
            log.replace_segment(old, None)
        self._dispose(deleted, log.config.file_delete_delay_ms)

    def _dispose(self, paths: list[Path], delay_ms: int) -> None:
        if self._deletion_queue is not None and delay_ms > 0:
            self._deletion_queue.schedule(paths, self._clock.milliseconds() + delay_ms)
        else:
            remove_files(paths)


def _swap_name(cleaned_path: Path) -> Path:
    return cleaned_path.with_name(cleaned_path.name[: -len(CLEANED_SUFFIX)] + SWAP_SUFFIX)


# ------------------------------------------------------------------ record selection


def _iter_stored_batches(segment: LogSegment) -> Iterator[tuple[BatchHeader, bytes]]:
    for position, header in segment.iter_headers(0):
        yield header, segment.pread(header.size, position)


DecodedRecords = list[tuple[int, int, bytes | None, bytes | None, tuple[Header, ...]]]  # as decode_records gives them


def _decoded_or_none(header: BatchHeader, data: bytes, min_offset: int = 0) -> DecodedRecords | None:
    """The records of one stored batch, or None when they cannot be decoded."""
    try:
        return decode_records(batch_records_bytes(data, 0, header), header, min_offset)
    except RecordFormatError as error:
        logger.debug("batch at offsets %d..%d cannot be decoded: %s", header.base_offset, header.last_offset, error.reason)
        return None


class _AbortedRanges:
    """Which stored batches belong to aborted transactions, from the log's ``.txnindex`` entries."""

    def __init__(self, transactions: tuple[AbortedTransaction, ...]) -> None:
        self._by_producer: dict[int, list[tuple[int, int]]] = {}
        for transaction in transactions:
            self._by_producer.setdefault(transaction.producer_id, []).append((transaction.first_offset, transaction.last_offset))

    def contains(self, header: BatchHeader) -> bool:
        if not header.is_transactional or header.is_control:
            return False
        ranges = self._by_producer.get(header.producer_id, ())
        return any(first <= header.base_offset <= last for first, last in ranges)


def _build_offset_map(dirty: list[LogSegment], first_dirty: int, aborted: _AbortedRanges) -> dict[bytes, int]:
    """key -> offset of its latest record in the dirty segments.

    An undecodable batch adds nothing (``_compact_segment`` keeps it and says so), and
    neither does an aborted one.
    """
    offset_map: dict[bytes, int] = {}
    for segment in dirty:
        for header, data in _iter_stored_batches(segment):
            if header.last_offset < first_dirty or header.is_control or aborted.contains(header):
                continue
            for offset, _, key, _, _ in _decoded_or_none(header, data, first_dirty) or ():
                if key is not None:
                    offset_map[bytes(key)] = offset
    return offset_map


class _TransactionTracker:
    """One pass's view of transactions in log order: whose current transaction still has a batch.

    A transactional data batch that stays in the log (even emptied) opens its producer's
    transaction here; that producer's next marker closes it. A marker closing a transaction
    with no remaining batch is removable once its delete horizon has passed.
    """

    def __init__(self) -> None:
        self._with_batches: set[int] = set()

    def batch_kept(self, header: BatchHeader) -> None:
        if header.is_transactional and not header.is_control:
            self._with_batches.add(header.producer_id)

    def closes_empty_transaction(self, marker: BatchHeader) -> bool:
        if marker.producer_id in self._with_batches:
            self._with_batches.discard(marker.producer_id)
            return False
        return True


@dataclass
class _SegmentOutput:
    """What compacting one segment gives: new bytes (None when unchanged) and what changed."""

    data: bytes | None = None
    dropped: int = 0
    earliest_horizon: int | None = None
    removed_markers: set[int] = field(default_factory=set)

    def note_horizon(self, horizon: int) -> None:
        self.earliest_horizon = horizon if self.earliest_horizon is None else min(self.earliest_horizon, horizon)


def _compact_segment(
    segment: LogSegment, offset_map: dict[bytes, int], now_ms: int, log: PartitionLog, aborted: _AbortedRanges, transactions: _TransactionTracker
) -> _SegmentOutput:
    """The segment's batches after compaction; ``transactions`` carries the pass's state to the next segment."""
    output = _SegmentOutput()
    parts: list[bytes] = []
    changed = False
    for header, data in _iter_stored_batches(segment):
        if header.is_control:
            kept_marker = _compact_marker(header, data, now_ms, log, transactions, output)
            changed = changed or kept_marker is not data
            if kept_marker is not None:
                parts.append(kept_marker)
            continue
        if aborted.contains(header):
            changed = True
            records = _decoded_or_none(header, data)
            output.dropped += len(records) if records is not None else header.records_count
            if _is_producers_last_batch(header, log):
                parts.append(rebuild_batch(header, []) if records is not None else data)
                transactions.batch_kept(header)
            continue
        records = _decoded_or_none(header, data)
        if records is None:
            logger.warning(
                "%s: compaction keeps the batch at offsets %d..%d as it is: its records cannot be decoded",
                log.directory.name,
                header.base_offset,
                header.last_offset,
            )
            parts.append(data)
            transactions.batch_kept(header)
            continue
        kept, needs_horizon = _surviving_records(header, records, offset_map, now_ms)
        output.dropped += len(records) - len(kept)
        tombstone_horizon = None
        if any(record[3] is None and record[2] is not None for record in kept):
            tombstone_horizon = header.base_timestamp if header.has_delete_horizon else now_ms + log.config.delete_retention_ms
            output.note_horizon(tombstone_horizon)
        if len(kept) == len(records) and not needs_horizon:
            parts.append(data)
            transactions.batch_kept(header)
            continue
        changed = True
        if not kept and not _is_producers_last_batch(header, log):
            continue
        parts.append(rebuild_batch(header, kept, delete_horizon_ms=tombstone_horizon))
        transactions.batch_kept(header)
    if changed:
        output.data = b"".join(parts)
    return output


def _surviving_records(header: BatchHeader, records: DecodedRecords, offset_map: dict[bytes, int], now_ms: int) -> tuple[DecodedRecords, bool]:
    """The records no later key supersedes and no passed tombstone horizon removes; whether a tombstone needs its horizon set."""
    kept = []
    needs_horizon = False
    for record in records:
        offset, _, key, value, _ = record
        if key is not None and offset_map.get(bytes(key), offset) > offset:
            continue
        if value is None and key is not None:
            if header.has_delete_horizon and now_ms >= header.base_timestamp:
                continue
            if not header.has_delete_horizon:
                needs_horizon = True
        kept.append(record)
    return kept, needs_horizon


def _compact_marker(
    header: BatchHeader, data: bytes, now_ms: int, log: PartitionLog, transactions: _TransactionTracker, output: _SegmentOutput
) -> bytes | None:
    """The marker's bytes as kept (``data`` itself when unchanged), or None when it is removed."""
    if not transactions.closes_empty_transaction(header):
        return data
    if header.has_delete_horizon:
        if now_ms >= header.base_timestamp:
            output.dropped += header.records_count
            output.removed_markers.add(header.base_offset)
            return None
        output.note_horizon(header.base_timestamp)
        return data
    records = _decoded_or_none(header, data)
    if records is None:
        return data  # a marker that cannot be read is kept as it is (and its transaction's index entry with it)
    horizon = now_ms + log.config.delete_retention_ms
    output.note_horizon(horizon)
    return rebuild_batch(header, records, delete_horizon_ms=horizon)


def _is_producers_last_batch(header: BatchHeader, log: PartitionLog) -> bool:
    # An idempotent producer's latest batch is kept even when emptied, so that its sequence
    # survives a restart that rebuilds producer state from the log.
    if header.producer_id == NO_PRODUCER_ID:
        return False
    entry = log.producer_state(header.producer_id)
    return entry is not None and entry.last_offset == header.last_offset
