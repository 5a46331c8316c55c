"""One segment of a partition log: a ``.log`` file of batches, its two indexes and its aborted-transaction index."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from broker_nodes.storage.file_cache import FileHandleCache
from broker_nodes.storage.offset_index import OffsetIndex
from broker_nodes.storage.time_index import TimeIndex
from broker_nodes.storage.transaction_index import TransactionIndex
from log_formats.log_files import DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, segment_file_name
from weir.records import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    NO_TIMESTAMP,
    BatchHeader,
    RecordFormatError,
    batch_records_bytes,
    decode_records,
    peek_batch_size,
    read_batch_header,
    validate_batch,
)

logger = logging.getLogger(__name__)

# Bytes read per system call while scanning batch headers or validating a segment.
SCAN_CHUNK_BYTES = 256 * 1024
# Bytes read per system call by a lookup (``find_batch``): its target lies within about
# index.interval.bytes of where it starts, so a whole scan chunk would mostly be read for nothing.
FIND_CHUNK_BYTES = 16 * 1024
# Largest offset distance from a segment's base that the int32 relative offsets can hold.
MAX_RELATIVE_OFFSET = 2**31 - 1


class AppendedBatch(NamedTuple):
    """Where one batch of an append lies (``position`` within the appended bytes) and what it holds."""

    position: int
    size: int
    base_offset: int
    last_offset: int
    max_timestamp: int


@dataclass(frozen=True, slots=True)
class SegmentRecovery:
    """What ``LogSegment.recover`` found: the valid prefix and, if any, why the rest was dropped."""

    valid_bytes: int
    truncated_bytes: int
    reason: str | None
    next_offset: int
    # (leader epoch, base offset of its first batch) at each change of epoch among the valid batches, in order.
    epoch_starts: tuple[tuple[int, int], ...] = ()


class LogSegment:
    """Batches ``[base_offset, next_offset)`` in ``<base>.log`` with ``.index``, ``.timeindex`` and ``.txnindex``.

    On disk: the ``.log`` file holds RecordBatch v2 batches back to back, exactly as Kafka
    stores them; see ``OffsetIndex``, ``TimeIndex`` and ``TransactionIndex`` for the index
    layouts. The owning log writes the ``.txnindex`` (it knows the producers' transactions);
    the segment creates, truncates, flushes and renames it with its other files. Invariants:
    batch offsets strictly increase, every offset minus ``base_offset`` fits an int32, and an
    index entry is added once more than ``index.interval.bytes`` were appended since the last.

    Files are reached through the shared ``FileHandleCache``, so an idle segment holds no
    descriptor and no index data in memory. Thread-safety: one writer at a time (the owning
    log serializes appends, truncation and rolling); readers may run concurrently with the
    writer because they only read below a snapshot of ``size`` taken before reading, and
    bytes below ``size`` are never rewritten.
    """

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        file_cache: FileHandleCache,
        *,
        index_max_bytes: int,
        index_interval_bytes: int,
        created_ms: int,
        suffix: str = "",
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self._file_cache = file_cache
        self.index_interval_bytes = index_interval_bytes
        self.log_path = directory / (segment_file_name(base_offset, LOG_SUFFIX) + suffix)
        self.offset_index = OffsetIndex(directory / (segment_file_name(base_offset, INDEX_SUFFIX) + suffix), base_offset, file_cache, index_max_bytes)
        self.time_index = TimeIndex(directory / (segment_file_name(base_offset, TIME_INDEX_SUFFIX) + suffix), base_offset, file_cache, index_max_bytes)
        self.txn_index = TransactionIndex(directory / (segment_file_name(base_offset, TXN_INDEX_SUFFIX) + suffix))
        self.created_ms = created_ms
        self._lock = threading.Lock()
        self.size = self._stat_size()
        self._next_offset: int | None = None
        self._max_timestamp = NO_TIMESTAMP
        self._offset_of_max_timestamp = base_offset
        self._bytes_since_last_index_entry = 0
        self._tail_loaded = False
        # The last batch a lookup found or scanned past: (truncation generation, position, header).
        # Bytes below ``size`` are never rewritten but by a truncation, so while no truncation ran
        # since it was taken (the generation, bumped before and after each cut) it still describes
        # the batch at that position: a lookup of an offset at or after it starts there instead of
        # at the offset index's entry, which makes the reads that follow the log end (followers'
        # fetches, tailing consumers) look at the new batches only.
        self._truncations = 0
        self._last_found: tuple[int, int, BatchHeader] | None = None
        # (next offset, size) as the last append left them, one object so that a reader sees a
        # consistent pair; None until an append and after every cut. A lookup at or past that
        # next offset finds nothing without reading (a fetch's high-watermark bound at the log end).
        self._appended_end: tuple[int, int] | None = None

    # -------------------------------------------------------------- construction

    @classmethod
    def create(
        cls,
        directory: Path,
        base_offset: int,
        file_cache: FileHandleCache,
        *,
        index_max_bytes: int,
        index_interval_bytes: int,
        created_ms: int,
    ) -> LogSegment:
        """A new, empty segment; its four files are created (truncated if they existed)."""
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            path = directory / segment_file_name(base_offset, suffix)
            file_cache.invalidate(path)
            with open(path, "wb"):
                pass
        segment = cls(
            directory,
            base_offset,
            file_cache,
            index_max_bytes=index_max_bytes,
            index_interval_bytes=index_interval_bytes,
            created_ms=created_ms,
        )
        segment.txn_index.create()
        segment._next_offset = base_offset
        segment._tail_loaded = True
        return segment

    # -------------------------------------------------------------- state

    @property
    def file_cache(self) -> FileHandleCache:
        """The descriptor cache this segment's files are reached through."""
        return self._file_cache

    @property
    def next_offset(self) -> int:
        """One past the last offset stored in this segment (``base_offset`` when empty)."""
        self._load_tail()
        assert self._next_offset is not None
        return self._next_offset

    @property
    def max_timestamp(self) -> int:
        """Largest batch max timestamp in the segment, NO_TIMESTAMP (-1) when none."""
        self._load_tail()
        return self._max_timestamp

    @property
    def offset_of_max_timestamp(self) -> int:
        self._load_tail()
        return self._offset_of_max_timestamp

    @property
    def is_empty(self) -> bool:
        return self.size == 0

    @property
    def indexes_full(self) -> bool:
        return self.offset_index.is_full or self.time_index.is_full

    def last_modified_ms(self) -> int:
        try:
            return int(self.log_path.stat().st_mtime * 1000)
        except FileNotFoundError:
            return self.created_ms

    def _stat_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except FileNotFoundError:
            return 0

    def _load_tail(self) -> None:
        # Closed segments are opened without reading them; the first question about their end
        # reads the last index entries and scans the headers after the last offset index entry.
        if self._tail_loaded:
            return
        with self._lock:
            if self._tail_loaded:
                return
            last_time_entry = self.time_index.last_entry
            if last_time_entry is not None:
                self._max_timestamp, self._offset_of_max_timestamp = last_time_entry
            _, start = self.offset_index.lookup(self.offset_index.last_offset)
            next_offset = self.base_offset
            for _, header in self.iter_headers(start):
                next_offset = header.next_offset
                if header.max_timestamp > self._max_timestamp:
                    self._max_timestamp = header.max_timestamp
                    self._offset_of_max_timestamp = header.base_offset
            self._bytes_since_last_index_entry = self.size - start
            if next_offset == self.base_offset and start > 0:
                # The index points past the end of the log: only a corrupt index does that, and
                # open-time sanity checks rebuild those; fall back to a full scan regardless.
                for _, header in self.iter_headers(0):
                    next_offset = header.next_offset
            self._next_offset = next_offset
            self._tail_loaded = True

    # -------------------------------------------------------------- reading

    def pread(self, length: int, position: int) -> bytes:
        with self._file_cache.lease(self.log_path) as descriptor:
            return os.pread(descriptor, length, position)

    def iter_headers(self, start: int = 0, end: int | None = None, *, chunk_bytes: int = SCAN_CHUNK_BYTES) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of every complete batch in ``[start, end)``; stops at a torn or malformed one.

        Reads ``chunk_bytes`` per system call (a batch larger than that costs one read of its own).
        """
        end = self.size if end is None else end
        position = start
        while end - position >= HEADER_SIZE:
            chunk = self.pread(min(chunk_bytes, end - position), position)
            offset = 0
            while len(chunk) - offset >= HEADER_SIZE:
                header = read_batch_header(chunk, offset)
                if header.batch_length < MIN_BATCH_LENGTH or position + offset + header.size > end:
                    return
                yield position + offset, header
                offset += header.size
            if offset == 0:
                return
            position += offset

    def find_batch(self, offset: int) -> tuple[int, BatchHeader] | None:
        """(position, header) of the first batch whose last offset is >= ``offset``; None if none is."""
        appended_end = self._appended_end
        if appended_end is not None and offset >= appended_end[0]:
            return None  # past the last append: as if looked up before a concurrent append
        generation = self._truncations
        start = self._scan_start(offset, generation)
        if isinstance(start, tuple):
            return start
        last: tuple[int, int, BatchHeader] | None = None
        for position, header in self.iter_headers(start, chunk_bytes=FIND_CHUNK_BYTES):
            last = (generation, position, header)
            if header.last_offset >= offset:
                self._last_found = last
                return position, header
        if last is not None:
            self._last_found = last
        return None

    def _scan_start(self, offset: int, generation: int) -> int | tuple[int, BatchHeader]:
        """Where a lookup of ``offset`` scans from, or the batch itself when the last one found holds it."""
        last_found = self._last_found
        if last_found is not None and last_found[0] == generation and last_found[2].base_offset <= offset:
            _, position, header = last_found
            if header.last_offset >= offset:
                return position, header
            # Past the last index entry, no entry can be closer to ``offset`` than the batch after it.
            if header.base_offset >= self.offset_index.last_offset:
                return position + header.size
        return self.offset_index.lookup(offset)[1]

    def read(self, offset: int, max_bytes: int, *, max_position: int | None, min_one_batch: bool) -> bytes | None:
        """Whole batches from the one containing ``offset``, at most ``max_bytes`` (see ``PartitionLog.read``).

        None when the segment holds nothing at or after ``offset``; ``b""`` when something is
        there but nothing may be returned (``max_position`` reached, or the first batch does not
        fit and ``min_one_batch`` is false).
        """
        size = self.size
        limit = size if max_position is None else min(max_position, size)
        found = self.find_batch(offset)
        if found is None:
            return None
        position, header = found
        if position >= limit:
            return b""
        length = min(max_bytes, limit - position)
        if header.size > length:
            if not min_one_batch or position + header.size > limit:
                return b""
            return self.pread(header.size, position)
        data = self.pread(length, position)
        return data[: _complete_batches_length(data)]

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after ``start_offset`` with timestamp >= ``timestamp``."""
        entry = self.time_index.lookup(timestamp)
        from_offset = max(entry[1] if entry is not None else self.base_offset, start_offset)
        _, start = self.offset_index.lookup(from_offset)
        for position, header in self.iter_headers(start):
            if header.last_offset < start_offset or header.max_timestamp < timestamp:
                continue
            found = self._first_record_at_or_after(position, header, timestamp, start_offset)
            if found is not None:
                return found
        return None

    def _first_record_at_or_after(self, position: int, header: BatchHeader, timestamp: int, start_offset: int) -> tuple[int, int] | None:
        # The ListOffsets slow path: decode this one batch to find the exact record.
        data = self.pread(header.size, position)
        try:
            records = decode_records(batch_records_bytes(data, 0, header), header, start_offset)
        except RecordFormatError:
            return max(header.base_offset, start_offset), header.max_timestamp
        for record_offset, record_timestamp, _, _, _ in records:
            if record_timestamp >= timestamp:
                return record_offset, record_timestamp
        return None

    # -------------------------------------------------------------- writing

    def append(self, data: bytes | bytearray, batches: list[AppendedBatch]) -> None:
        """Write ``data`` (whole batches with offsets assigned) at the end and index it.

        Preconditions (checked by the log): offsets exceed ``next_offset`` and fit the segment.
        """
        self._load_tail()
        position = self.size
        before = (
            self.offset_index.entry_count,
            self.time_index.entry_count,
            self._max_timestamp,
            self._offset_of_max_timestamp,
            self._bytes_since_last_index_entry,
        )
        try:
            with self._file_cache.lease(self.log_path, create=True) as descriptor:
                view = memoryview(data)
                written = 0
                while written < len(view):
                    written += os.pwrite(descriptor, view[written:], position + written)
            for batch in batches:
                if batch.max_timestamp > self._max_timestamp:
                    self._max_timestamp = batch.max_timestamp
                    self._offset_of_max_timestamp = batch.base_offset
                if self._bytes_since_last_index_entry > self.index_interval_bytes:
                    self.offset_index.append(batch.base_offset, position + batch.position)
                    if self._max_timestamp >= 0:
                        self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
                    self._bytes_since_last_index_entry = 0
                self._bytes_since_last_index_entry += batch.size
        except OSError:
            self._undo_failed_append(position, before)
            raise
        self.size = position + len(data)
        self._next_offset = batches[-1].last_offset + 1
        self._appended_end = (self._next_offset, self.size)

    def _undo_failed_append(self, position: int, before: tuple[int, int, int, int, int]) -> None:
        """Put the segment back as it was before a write that failed part-way (a full disk: ENOSPC).

        Shrinking a file needs no space, so the bytes written so far and any index entries are
        removed and the segment ends where it did; should even that fail, the stale bytes lie
        past ``size`` (never served, overwritten by the next append, truncated by recovery).
        """
        offset_entries, time_entries, self._max_timestamp, self._offset_of_max_timestamp, self._bytes_since_last_index_entry = before
        try:
            with self._file_cache.lease(self.log_path, create=True) as descriptor:
                os.ftruncate(descriptor, position)
            self.offset_index.truncate_entries(offset_entries)
            self.time_index.truncate_entries(time_entries)
        except OSError as error:
            logger.error("%s: could not remove a partly written append at byte %d: %s", self.log_path, position, error)

    def on_roll(self) -> None:
        """Seal the segment: its time index's last entry now holds the segment's largest timestamp."""
        self._load_tail()
        if self._max_timestamp >= 0:
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
        self.flush()

    def flush(self) -> None:
        """fsync the log and its indexes (the transaction index only when it holds entries)."""
        with self._file_cache.lease(self.log_path, create=True) as descriptor:
            os.fsync(descriptor)
        self.offset_index.flush()
        self.time_index.flush()
        if self.txn_index.entries:
            self.txn_index.flush()

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset``; return the bytes removed."""
        found = self.find_batch(offset)
        if found is None:
            return 0
        position, _ = found
        return self.truncate_to_position(position)

    def truncate_to_position(self, position: int) -> int:
        """Cut the log at byte ``position`` (a batch boundary) and drop index entries beyond it."""
        removed = self.size - position
        if removed <= 0:
            return 0
        self._forget_found_batches()
        with self._file_cache.lease(self.log_path, create=True) as descriptor:
            os.ftruncate(descriptor, position)
        self.size = position
        self.offset_index.truncate_to_position(position)
        # Time index entries name batches by offset; drop those of batches that are gone.
        next_offset = self.base_offset
        for _, header in self.iter_headers(self.offset_index.lookup(self.offset_index.last_offset)[1]):
            next_offset = header.next_offset
        if self.offset_index.entry_count == 0 and next_offset == self.base_offset:
            for _, header in self.iter_headers(0):
                next_offset = header.next_offset
        self.time_index.truncate_to(next_offset)
        self.txn_index.truncate_to(next_offset)
        self._tail_loaded = False
        self._max_timestamp = NO_TIMESTAMP
        self._offset_of_max_timestamp = self.base_offset
        self._bytes_since_last_index_entry = 0
        self._load_tail()
        self._forget_found_batches()
        return removed

    def _forget_found_batches(self) -> None:
        """Before and after a cut: a lookup that overlapped it keeps no batch it found (see ``_last_found``)."""
        self._truncations += 1
        self._last_found = None
        self._appended_end = None

    # -------------------------------------------------------------- recovery

    def rebuild_indexes(self) -> None:
        """Recreate both indexes from the batch headers of the log."""
        self.recover(validate=False)

    def recover(self, *, validate: bool = True, expected_start_offset: int | None = None) -> SegmentRecovery:
        """Check every batch, rebuild both indexes, cut the log after the last valid batch.

        With ``validate``, each batch's length, magic and CRC are checked and offsets must
        increase from ``expected_start_offset`` (default: the base offset) and stay within
        int32 of the base. The first failure ends the valid prefix.
        """
        self._forget_found_batches()
        self.offset_index.reset()
        self.time_index.reset()
        self._max_timestamp = NO_TIMESTAMP
        self._offset_of_max_timestamp = self.base_offset
        self._bytes_since_last_index_entry = 0
        expected = self.base_offset if expected_start_offset is None else expected_start_offset
        valid = 0
        reason: str | None = None
        size = self._stat_size()
        self.size = size
        epoch_starts: list[tuple[int, int]] = []
        for position, header, problem in self._scan_for_recovery(size, validate):
            if problem is None and validate and header is not None:  # a header comes with every batch without a problem
                if header.base_offset < expected:
                    problem = f"batch base offset {header.base_offset} is below the expected {expected}"
                elif header.last_offset - self.base_offset > MAX_RELATIVE_OFFSET:
                    problem = f"batch last offset {header.last_offset} is beyond the segment's int32 range"
            if problem is not None:
                reason = problem
                break
            assert header is not None
            self.append_index_entries_for(position, header)
            if not epoch_starts or header.partition_leader_epoch != epoch_starts[-1][0]:
                epoch_starts.append((header.partition_leader_epoch, header.base_offset))
            expected = header.next_offset
            valid = position + header.size
        else:
            if valid < size and reason is None:
                reason = f"{size - valid} trailing bytes do not form a whole batch"
        truncated = size - valid
        if truncated > 0:
            with self._file_cache.lease(self.log_path, create=True) as descriptor:
                os.ftruncate(descriptor, valid)
            self.size = valid
        self._next_offset = expected if valid > 0 else self.base_offset
        self._tail_loaded = True
        self._forget_found_batches()
        if self._max_timestamp >= 0:
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
        return SegmentRecovery(valid, truncated, reason if truncated > 0 else None, self._next_offset, tuple(epoch_starts))

    def append_index_entries_for(self, position: int, header: BatchHeader) -> None:
        """Index maintenance for one batch at ``position``, exactly as ``append`` does it."""
        if header.max_timestamp > self._max_timestamp:
            self._max_timestamp = header.max_timestamp
            self._offset_of_max_timestamp = header.base_offset
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(header.base_offset, position)
            if self._max_timestamp >= 0:
                self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += header.size

    def _scan_for_recovery(self, size: int, validate: bool) -> Iterator[tuple[int, BatchHeader | None, str | None]]:
        # Yields (position, header, None) per good batch and finally (position, None, reason)
        # at the first bad one. Reads in large chunks; a batch larger than a chunk is read whole.
        position = 0
        while position < size:
            chunk = self.pread(min(SCAN_CHUNK_BYTES, size - position), position)
            offset = 0
            while offset < len(chunk):
                remaining_in_file = size - (position + offset)
                batch_size = peek_batch_size(chunk, offset)
                if batch_size is None:
                    if remaining_in_file < LOG_OVERHEAD:
                        yield position + offset, None, f"torn batch: {remaining_in_file} trailing bytes"
                        return
                    break
                if batch_size < HEADER_SIZE:
                    yield position + offset, None, f"batch length {batch_size - LOG_OVERHEAD} is below the minimum"
                    return
                if batch_size > remaining_in_file:
                    yield position + offset, None, f"torn batch: {batch_size} bytes declared, {remaining_in_file} present"
                    return
                if offset + batch_size > len(chunk):
                    if offset == 0:
                        chunk = self.pread(batch_size, position)
                    else:
                        break
                try:
                    header = validate_batch(chunk, offset) if validate else read_batch_header(chunk, offset)
                except RecordFormatError as error:
                    yield position + offset, None, error.reason
                    return
                yield position + offset, header, None
                offset += batch_size
            position += offset

    def sanity_check_indexes(self) -> str | None:
        """None when both index files look usable for this log; otherwise why not."""
        try:
            self.offset_index.sanity_check(self.size)
            self.time_index.sanity_check()
        except FileNotFoundError as error:
            return f"{Path(error.filename).name if error.filename else error} is missing"
        except Exception as error:  # CorruptIndexError, or a short read of a damaged file
            return str(error)
        return None

    # -------------------------------------------------------------- files

    def close(self) -> None:
        """Release cached descriptors; the segment can still be used (files reopen on demand)."""
        for path in (self.log_path, self.offset_index.path, self.time_index.path):
            self._file_cache.invalidate(path)

    def rename_to_deleted(self) -> list[Path]:
        """Rename the segment's files with the ``.deleted`` suffix; return the new paths.

        Readers that still hold this segment keep reading the renamed files until they are
        removed after ``file.delete.delay.ms``.
        """
        new_log_path = self.log_path.with_name(self.log_path.name + DELETED_SUFFIX)
        self._file_cache.invalidate(self.log_path)
        try:
            os.rename(self.log_path, new_log_path)
        except FileNotFoundError:
            pass
        self.log_path = new_log_path
        self.offset_index.rename_to(self.offset_index.path.with_name(self.offset_index.path.name + DELETED_SUFFIX))
        self.time_index.rename_to(self.time_index.path.with_name(self.time_index.path.name + DELETED_SUFFIX))
        self.txn_index.rename_to(self.txn_index.path.with_name(self.txn_index.path.name + DELETED_SUFFIX))
        return [self.log_path, self.offset_index.path, self.time_index.path, self.txn_index.path]

    def file_paths(self) -> list[Path]:
        return [self.log_path, self.offset_index.path, self.time_index.path]


def _complete_batches_length(data: bytes) -> int:
    """Bytes of ``data`` covered by whole batches from its start."""
    position = 0
    end = len(data)
    while True:
        size = peek_batch_size(data, position)
        if size is None or size < HEADER_SIZE or position + size > end:
            return position
        position += size
