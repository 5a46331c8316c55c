"""Print and verify a partition's files on disk, like Kafka's ``DumpLogSegments`` tool.

``weir-dump-log PATH`` reads segment files directly, with no broker: a ``.log`` file (every
batch header, and with ``print_data`` every record, transaction markers as COMMIT / ABORT
with their coordinator epoch), an ``.index``, ``.timeindex`` or ``.txnindex`` file (every
entry, each checked against the sibling ``.log``), or a partition directory (every segment in
base-offset order). Byte layouts come from ``weir.records`` and ``log_formats.log_files``,
the same definitions the broker's storage engine writes with.

What is checked:

- ``.log``: the length, magic and CRC-32C of every batch, and that base offsets increase. The
  first corrupt batch is reported with its position and ends the scan (nothing after it can
  be trusted to start at a batch boundary); a partial batch at the end is reported as a torn
  tail with the number of bytes left over.
- ``.index``: entries strictly increasing in offset and position; each position is the start
  of a batch and the entry's offset lies within that batch.
- ``.timeindex``: timestamps strictly increasing, offsets never decreasing; the batch holding
  each entry's offset has exactly the entry's timestamp as its max timestamp.
- ``.txnindex``: entries of version 0, last offsets strictly increasing, each first offset at
  or below its last offset, and each last offset the offset of a control batch (the ABORT
  marker) of the sibling log.
- control records: each control batch holds a transaction marker (``log_formats.control_records``).

Every finding becomes a :class:`DumpProblem` in the returned :class:`DumpReport`, and is also
printed where it was found, so the text output reads top to bottom like Kafka's.
"""

from __future__ import annotations

import bisect
import mmap
import os
from array import array
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from log_formats.control_records import decode_marker
from log_formats.log_files import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    OFFSET_INDEX_ENTRY,
    TIME_INDEX_ENTRY,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_ENTRY,
    TXN_INDEX_ENTRY_VERSION,
    TXN_INDEX_SUFFIX,
    parse_segment_file_name,
    segment_file_name,
)
from weir.records import (
    COMPRESSION_NAMES,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_LOG_APPEND_TIME,
    BatchHeader,
    RecordFormatError,
    batch_records_bytes,
    decode_records,
    iter_batch_positions,
    peek_batch_size,
    validate_batch,
)

DUMPABLE_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
# Order in which one segment's files are dumped: the log first, so that its batch table is
# built (with CRCs checked) once and then reused to check both indexes.
_SEGMENT_FILE_ORDER = {LOG_SUFFIX: 0, INDEX_SUFFIX: 1, TIME_INDEX_SUFFIX: 2, TXN_INDEX_SUFFIX: 3}
# Progress is reported at most once per this many bytes of log, so that a caller's progress
# bar costs nothing measurable next to the CRC work.
_PROGRESS_STEP_BYTES = 4 * 1024 * 1024

ProgressCallback = Callable[[int], None]


class DumpLogError(Exception):
    """The path cannot be dumped at all: missing, unreadable, or not a segment file or directory."""

    retriable = False

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True, slots=True)
class DumpProblem:
    """One thing wrong with a file; ``position`` is a byte position in that file when known."""

    path: Path
    position: int | None
    message: str

    def __str__(self) -> str:
        where = f" at byte {self.position}" if self.position is not None else ""
        return f"{self.path}{where}: {self.message}"


@dataclass
class DumpReport:
    """What one :func:`dump` call read and found. ``ok`` is true when nothing is wrong."""

    files: list[Path] = field(default_factory=list)
    batches: int = 0
    records: int = 0
    problems: list[DumpProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


class _BatchTable:
    """Where each batch of one ``.log`` file lies, as compact arrays sorted by position.

    Built by scanning the log once; index entries are then checked with binary searches.
    Four ``array('q')`` columns instead of per-batch objects keep a segment of millions of
    batches within a few tens of megabytes. ``end`` is the byte after the last batch read;
    ``complete`` is false when the scan stopped early at ``max_bytes`` (entries pointing past
    ``end`` then cannot be judged) rather than at the end of the file or at a bad batch.
    """

    __slots__ = ("positions", "base_offsets", "last_offsets", "max_timestamps", "control_offsets", "end", "complete")

    def __init__(self) -> None:
        self.positions = array("q")
        self.base_offsets = array("q")
        self.last_offsets = array("q")
        self.max_timestamps = array("q")
        self.control_offsets: set[int] = set()  # few: one per transaction marker
        self.end = 0
        self.complete = True

    def add(self, position: int, header: BatchHeader) -> None:
        self.positions.append(position)
        self.base_offsets.append(header.base_offset)
        self.last_offsets.append(header.last_offset)
        self.max_timestamps.append(header.max_timestamp)
        if header.is_control:
            self.control_offsets.add(header.base_offset)
        self.end = position + header.size

    def __len__(self) -> int:
        return len(self.positions)

    def batch_at(self, position: int) -> int | None:
        """Row of the batch starting exactly at ``position``, or None."""
        row = bisect.bisect_left(self.positions, position)
        if row < len(self.positions) and self.positions[row] == position:
            return row
        return None

    def batch_containing(self, offset: int) -> int | None:
        """Row of the batch whose offsets include ``offset``, or None."""
        row = bisect.bisect_left(self.last_offsets, offset)
        if row < len(self.last_offsets) and self.base_offsets[row] <= offset:
            return row
        return None


def files_to_dump(path: Path | str) -> list[Path]:
    """The files :func:`dump` reads for ``path``, in order; DumpLogError when there are none.

    A file must end in ``.log``, ``.index``, ``.timeindex`` or ``.txnindex``. A directory yields
    its segment files grouped by base offset, each group in the order log, index, time index,
    transaction index.
    """
    path = Path(path)
    if not path.exists():
        raise DumpLogError(path, "no such file or directory")
    if path.is_dir():
        segment_files = []
        for child in path.iterdir():
            parsed = parse_segment_file_name(child.name)
            if parsed is not None and child.is_file():
                base_offset, suffix = parsed
                segment_files.append((base_offset, _SEGMENT_FILE_ORDER[suffix], child))
        if not segment_files:
            raise DumpLogError(path, "the directory holds no segment files (.log, .index, .timeindex, .txnindex)")
        return [child for _, _, child in sorted(segment_files)]
    if path.suffix not in DUMPABLE_SUFFIXES:
        raise DumpLogError(path, f"not a segment file: expected one of {', '.join(DUMPABLE_SUFFIXES)}")
    return [path]


def dump(
    path: Path | str,
    out: TextIO,
    print_data: bool = False,
    *,
    verify_index_only: bool = False,
    max_bytes: int | None = None,
    progress: ProgressCallback | None = None,
) -> DumpReport:
    """Print the segment file or partition directory at ``path`` to ``out`` and verify it.

    ``print_data`` also prints every record of every batch. ``verify_index_only`` prints only
    the problems of index files, not their entries, and does not print log batches (logs are
    still read and checked, since the index checks need them). ``max_bytes`` stops reading
    each log after that many bytes; index entries beyond that point are left unchecked.
    ``progress`` is called with the number of bytes just read, for progress bars.
    Raises DumpLogError when ``path`` cannot be dumped at all; problems inside the files are
    reported in the returned DumpReport instead.
    """
    if max_bytes is not None and max_bytes < 0:
        raise ValueError(f"max_bytes must not be negative, got {max_bytes}")
    dumper = _Dumper(out, print_data, verify_index_only, max_bytes, progress)
    for file_path in files_to_dump(path):
        dumper.dump_file(file_path)
    return dumper.report


@contextmanager
def _mapped(path: Path) -> Iterator[bytes | memoryview]:
    """The file's bytes, memory-mapped so that a 1 GiB segment is not copied into memory (a view
    of the mapping: what the record codec reads, without a copy)."""
    try:
        file = open(path, "rb")  # noqa: SIM115 - the mapping outlives this function; closed with it
    except OSError as error:
        raise DumpLogError(path, error.strerror or str(error)) from error
    with file:
        if os.fstat(file.fileno()).st_size == 0:
            # mmap refuses empty files; an empty segment is simply an empty buffer.
            yield b""
            return
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped, memoryview(mapped) as view:
            yield view


class _Dumper:
    """One dump run: prints to ``out`` and fills ``report``. Not thread-safe."""

    def __init__(
        self,
        out: TextIO,
        print_data: bool,
        verify_index_only: bool,
        max_bytes: int | None,
        progress: ProgressCallback | None,
    ) -> None:
        self.out = out
        self.print_data = print_data
        self.verify_index_only = verify_index_only
        self.max_bytes = max_bytes
        self.progress = progress
        self.report = DumpReport()
        # Batch tables of logs already scanned in this run, so that a directory's indexes
        # reuse the table its .log dump built instead of reading the log again.
        self._tables: dict[Path, _BatchTable] = {}

    # ------------------------------------------------------------------ shared helpers

    def _print(self, line: str) -> None:
        self.out.write(line + "\n")

    def _problem(self, path: Path, position: int | None, message: str) -> None:
        problem = DumpProblem(path, position, message)
        self.report.problems.append(problem)
        self._print(f"PROBLEM: {problem}")

    def _advance(self, byte_count: int) -> None:
        if self.progress is not None and byte_count:
            self.progress(byte_count)

    def dump_file(self, path: Path) -> None:
        self.report.files.append(path)
        self._print(f"Dumping {path}")
        if path.suffix == LOG_SUFFIX:
            self._dump_log(path)
        elif path.suffix == INDEX_SUFFIX:
            self._dump_offset_index(path)
        elif path.suffix == TIME_INDEX_SUFFIX:
            self._dump_time_index(path)
        else:
            self._dump_txn_index(path)

    # ------------------------------------------------------------------ .log files

    def _dump_log(self, path: Path) -> None:
        parsed = parse_segment_file_name(path.name)
        segment_base_offset = parsed[0] if parsed is not None else None
        if segment_base_offset is not None:
            self._print(f"Log starting offset: {segment_base_offset}")
        with _mapped(path) as data:
            self._tables[path] = self._scan_log(path, data, segment_base_offset)

    def _scan_log(self, path: Path, data: bytes | memoryview, segment_base_offset: int | None) -> _BatchTable:
        """Validate every batch, print it, and return the table of batches read."""
        table = _BatchTable()
        size = len(data)
        position = 0
        unreported = 0
        previous_last_offset: int | None = None
        while position < size:
            batch_size = peek_batch_size(data, position)
            if self.max_bytes is not None and batch_size is not None and position + batch_size > self.max_bytes:
                table.complete = False
                self._print(f"Stopped after {position} bytes: the next batch would pass --max-bytes {self.max_bytes}")
                break
            try:
                header = validate_batch(data, position)
            except RecordFormatError as error:
                self._report_unreadable_batch(path, data, position, error)
                break
            if segment_base_offset is not None and previous_last_offset is None and header.base_offset < segment_base_offset:
                self._problem(path, position, f"first batch has base offset {header.base_offset}, below the segment's base offset {segment_base_offset}")
            if previous_last_offset is not None and header.base_offset <= previous_last_offset:
                self._problem(path, position, f"batch base offset {header.base_offset} does not follow the previous batch's last offset {previous_last_offset}")
            if not self.verify_index_only:
                self._print(_format_batch(position, header))
                if self.print_data:
                    self._print_records(path, data, position, header)
            table.add(position, header)
            self.report.batches += 1
            self.report.records += header.records_count
            previous_last_offset = header.last_offset
            position += header.size
            unreported += header.size
            if unreported >= _PROGRESS_STEP_BYTES:
                self._advance(unreported)
                unreported = 0
        # Bytes not read (after a bad batch or past --max-bytes) count as done for progress.
        self._advance(unreported + size - position)
        return table

    def _report_unreadable_batch(self, path: Path, data: bytes | memoryview, position: int, error: RecordFormatError) -> None:
        remaining = len(data) - position
        batch_size = peek_batch_size(data, position)
        if batch_size is None or batch_size > remaining:
            # The last batch was cut short (a crash mid-write): recovery would truncate it.
            expected = f", the next batch needs {batch_size}" if batch_size is not None else ""
            self._problem(path, position, f"torn tail: {remaining} bytes left over after the last complete batch{expected}")
        else:
            self._problem(path, position, f"corrupt batch: {error.reason}; stopped reading this log")

    def _print_records(self, path: Path, data: bytes | memoryview, position: int, header: BatchHeader) -> None:
        try:
            records = decode_records(batch_records_bytes(data, position, header), header)
        except RecordFormatError as error:
            self._problem(path, position, f"records of the batch cannot be decoded: {error.reason}")
            return
        timestamp_name = _timestamp_type_name(header)
        for offset, timestamp, key, value, headers in records:
            if header.base_sequence == NO_SEQUENCE:
                sequence = NO_SEQUENCE
            else:
                # Sequences wrap at 2**31 as in Kafka's DefaultRecordBatch.incrementSequence.
                sequence = (header.base_sequence + offset - header.base_offset) % (2**31)
            header_text = ", ".join(f"{header_key}={_format_bytes(header_value)}" for header_key, header_value in headers)
            prefix = f"| offset: {offset} {timestamp_name}: {timestamp} keySize: {_size(key)} valueSize: {_size(value)} sequence: {sequence} headers: [{header_text}]"
            if header.is_control:
                self._print(f"{prefix} {self._control_record_text(path, position, key, value)}")
            else:
                self._print(f"{prefix} key: {_format_bytes(key)} payload: {_format_bytes(value)}")

    def _control_record_text(self, path: Path, position: int, key: bytes | None, value: bytes | None) -> str:
        """A transaction marker as Kafka's DumpLogSegments prints it; a problem when it is none."""
        try:
            marker = decode_marker(key, value)
        except RecordFormatError as error:
            self._problem(path, position, f"control record is not a transaction marker: {error.reason}")
            return f"key: {_format_bytes(key)} payload: {_format_bytes(value)}"
        return f"endTxnMarker: {marker.type_name} coordinatorEpoch: {marker.coordinator_epoch}"

    def _table_for(self, index_path: Path, base_offset: int) -> _BatchTable | None:
        """The batch table of the log beside ``index_path``, scanned now if not yet; None if absent."""
        log_path = index_path.with_name(segment_file_name(base_offset, LOG_SUFFIX))
        table = self._tables.get(log_path)
        if table is not None:
            return table
        if not log_path.is_file():
            self._problem(index_path, None, f"no sibling log {log_path.name}: entries are printed but not checked")
            return None
        table = _BatchTable()
        # Headers only, no CRCs: the index check needs where batches lie, and dumping the .log
        # itself is how to verify its contents.
        with _mapped(log_path) as data:
            end = len(data) if self.max_bytes is None else min(len(data), self.max_bytes)
            for position, header in iter_batch_positions(data, 0, end):
                table.add(position, header)
            table.complete = end == len(data)
        self._tables[log_path] = table
        return table

    def _read_entries(self, path: Path, entry_size: int) -> tuple[bytes, int]:
        """The index file's bytes and its entry count; a partial trailing entry is a problem."""
        try:
            data = path.read_bytes()
        except OSError as error:
            raise DumpLogError(path, error.strerror or str(error)) from error
        self._advance(len(data))
        leftover = len(data) % entry_size
        if leftover:
            self._problem(
                path, len(data) - leftover, f"file size {len(data)} is not a multiple of the {entry_size}-byte entry size: {leftover} bytes left over"
            )
        return data, len(data) // entry_size

    def _base_offset_of(self, path: Path) -> int:
        parsed = parse_segment_file_name(path.name)
        if parsed is None:
            raise DumpLogError(path, "an index file must be named by its segment's 20-digit base offset")
        return parsed[0]

    def _entry_line(self, line: str) -> None:
        if not self.verify_index_only:
            self._print(line)

    def _report_preallocated(self, path: Path, unused: int) -> None:
        if unused:
            self._print(f"{unused} unused preallocated entries (all zero) after the last entry")

    # ------------------------------------------------------------------ .index files

    def _dump_offset_index(self, path: Path) -> None:
        base_offset = self._base_offset_of(path)
        data, count = self._read_entries(path, OFFSET_INDEX_ENTRY.size)
        table = self._table_for(path, base_offset)
        previous: tuple[int, int] | None = None
        unchecked = 0
        for number, (relative_offset, position) in enumerate(OFFSET_INDEX_ENTRY.iter_unpack(data[: count * OFFSET_INDEX_ENTRY.size])):
            # A preallocated index ends in zero entries. Entry 0 may legitimately be (0, 0),
            # the first batch, unless the log is empty.
            if relative_offset == 0 and position == 0 and (number > 0 or not table):
                self._report_preallocated(path, count - number)
                break
            offset = base_offset + relative_offset
            entry_position = number * OFFSET_INDEX_ENTRY.size
            self._entry_line(f"offset: {offset} position: {position}")
            if previous is not None and (offset <= previous[0] or position <= previous[1]):
                self._problem(
                    path,
                    entry_position,
                    f"entry (offset {offset}, position {position}) does not follow the previous entry (offset {previous[0]}, position {previous[1]})",
                )
            previous = (offset, position)
            if table is None:
                continue
            if not table.complete and position >= table.end:
                unchecked += 1
                continue
            row = table.batch_at(position)
            if row is None:
                if position >= table.end:
                    self._problem(
                        path,
                        entry_position,
                        f"entry (offset {offset}, position {position}) points past the last batch of the log, which ends at byte {table.end}",
                    )
                else:
                    self._problem(
                        path, entry_position, f"entry (offset {offset}, position {position}): position {position} is not the start of a batch in the log"
                    )
            elif not table.base_offsets[row] <= offset <= table.last_offsets[row]:
                self._problem(
                    path,
                    entry_position,
                    f"entry (offset {offset}, position {position}): the batch at position {position} holds offsets {table.base_offsets[row]}..{table.last_offsets[row]}",
                )
        if unchecked:
            self._print(f"{unchecked} entries past --max-bytes were not checked against the log")

    # ------------------------------------------------------------------ .timeindex files

    def _dump_time_index(self, path: Path) -> None:
        base_offset = self._base_offset_of(path)
        data, count = self._read_entries(path, TIME_INDEX_ENTRY.size)
        table = self._table_for(path, base_offset)
        previous: tuple[int, int] | None = None
        unchecked = 0
        for number, (timestamp, relative_offset) in enumerate(TIME_INDEX_ENTRY.iter_unpack(data[: count * TIME_INDEX_ENTRY.size])):
            if timestamp == 0 and relative_offset == 0 and (number > 0 or not table):
                self._report_preallocated(path, count - number)
                break
            offset = base_offset + relative_offset
            entry_position = number * TIME_INDEX_ENTRY.size
            self._entry_line(f"timestamp: {timestamp} offset: {offset}")
            if previous is not None and timestamp <= previous[0]:
                self._problem(path, entry_position, f"timestamp {timestamp} (offset {offset}) is not above the previous entry's timestamp {previous[0]}")
            if previous is not None and offset < previous[1]:
                self._problem(path, entry_position, f"offset {offset} (timestamp {timestamp}) is below the previous entry's offset {previous[1]}")
            previous = (timestamp, offset)
            if table is None:
                continue
            row = table.batch_containing(offset)
            if row is None:
                if not table.complete and (not table or offset > table.last_offsets[-1]):
                    unchecked += 1
                else:
                    self._problem(path, entry_position, f"entry (timestamp {timestamp}, offset {offset}): no batch of the log holds offset {offset}")
            elif table.max_timestamps[row] != timestamp:
                self._problem(
                    path,
                    entry_position,
                    f"entry (timestamp {timestamp}, offset {offset}): the batch at position {table.positions[row]} holding that offset has max timestamp {table.max_timestamps[row]}",
                )
        if unchecked:
            self._print(f"{unchecked} entries past --max-bytes were not checked against the log")

    # ------------------------------------------------------------------ .txnindex files

    def _dump_txn_index(self, path: Path) -> None:
        base_offset = self._base_offset_of(path)
        data, count = self._read_entries(path, TXN_INDEX_ENTRY.size)
        table = self._table_for(path, base_offset)
        previous_last_offset: int | None = None
        unchecked = 0
        for number, (version, producer_id, first_offset, last_offset, last_stable_offset) in enumerate(
            TXN_INDEX_ENTRY.iter_unpack(data[: count * TXN_INDEX_ENTRY.size])
        ):
            entry_position = number * TXN_INDEX_ENTRY.size
            self._entry_line(
                f"version: {version} producerId: {producer_id} firstOffset: {first_offset} lastOffset: {last_offset} lastStableOffset: {last_stable_offset}"
            )
            if version != TXN_INDEX_ENTRY_VERSION:
                self._problem(path, entry_position, f"entry version {version} is not {TXN_INDEX_ENTRY_VERSION}")
            if first_offset > last_offset:
                self._problem(path, entry_position, f"first offset {first_offset} is above the last offset {last_offset}")
            if previous_last_offset is not None and last_offset <= previous_last_offset:
                self._problem(path, entry_position, f"last offset {last_offset} is not above the previous entry's last offset {previous_last_offset}")
            previous_last_offset = last_offset
            if table is None:
                continue
            if last_offset not in table.control_offsets:
                if not table.complete and (not table or last_offset > table.last_offsets[-1]):
                    unchecked += 1
                else:
                    self._problem(
                        path, entry_position, f"aborted transaction of producer {producer_id}: no control batch of the log is at its last offset {last_offset}"
                    )
        if unchecked:
            self._print(f"{unchecked} entries past --max-bytes were not checked against the log")


# ------------------------------------------------------------------ formatting


def _timestamp_type_name(header: BatchHeader) -> str:
    return "LogAppendTime" if header.timestamp_type == TIMESTAMP_TYPE_LOG_APPEND_TIME else "CreateTime"


def _format_batch(position: int, header: BatchHeader) -> str:
    """One batch in the words of Kafka's DumpLogSegments, so that its readers feel at home."""
    delete_horizon = header.base_timestamp if header.has_delete_horizon else "none"
    return (
        f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} count: {header.records_count}"
        f" baseSequence: {header.base_sequence} lastSequence: {header.last_sequence}"
        f" producerId: {header.producer_id} producerEpoch: {header.producer_epoch}"
        f" partitionLeaderEpoch: {header.partition_leader_epoch}"
        f" isTransactional: {str(header.is_transactional).lower()} isControl: {str(header.is_control).lower()}"
        f" deleteHorizonMs: {delete_horizon} position: {position}"
        f" {_timestamp_type_name(header)}: {header.max_timestamp} size: {header.size} magic: {header.magic}"
        f" compresscodec: {COMPRESSION_NAMES[header.compression]} crc: {header.crc} isValid: true"
    )


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


def _format_bytes(data: bytes | None) -> str:
    """UTF-8 text when the bytes are printable text, else their Python repr; ``null`` for None.

    Text with line breaks or other control characters is shown as a repr so that every
    record stays on one line of output.
    """
    if data is None:
        return "null"
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return repr(bytes(data))
    return text if text.isprintable() else repr(bytes(data))
