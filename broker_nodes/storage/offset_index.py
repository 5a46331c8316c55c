"""Sparse offset index of one segment: relative offset -> position in the ``.log`` file."""

from __future__ import annotations

from pathlib import Path

from broker_nodes.storage.errors import CorruptIndexError
from broker_nodes.storage.file_cache import FileHandleCache
from broker_nodes.storage.index_file import SegmentIndex
from log_formats.log_files import OFFSET_INDEX_ENTRY

_RELATIVE_OFFSET = 0
_POSITION = 1


class OffsetIndex(SegmentIndex):
    """``<base>.index``: 8-byte entries (relative offset int32, position int32), big endian.

    One entry per ``index.interval.bytes`` of log, naming the base offset of a batch and the
    byte where that batch starts. Invariants: relative offsets and positions both strictly
    increase; every position lies inside the log file. Lookups return the greatest entry at or
    below a target, from which the caller scans batch headers forward. Thread-safety: see
    ``IndexFile``.
    """

    def __init__(self, path: Path, base_offset: int, file_cache: FileHandleCache, max_bytes: int) -> None:
        super().__init__(path, base_offset, OFFSET_INDEX_ENTRY, file_cache, max_bytes)

    @property
    def last_offset(self) -> int:
        """Absolute offset of the last entry, the base offset when empty."""
        last = self._file.last_entry
        return self.base_offset if last is None else self.base_offset + last[_RELATIVE_OFFSET]

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the greatest entry <= ``offset``; (base offset, 0) when there is none."""
        entry = self._file.search(_RELATIVE_OFFSET, offset - self.base_offset)
        if entry is None:
            return self.base_offset, 0
        return self.base_offset + entry[_RELATIVE_OFFSET], entry[_POSITION]

    def entry(self, index: int) -> tuple[int, int]:
        relative, position = self._file.entry(index)
        return self.base_offset + relative, position

    def append(self, offset: int, position: int) -> None:
        """Add an entry; ValueError unless offset and position exceed the last entry's."""
        last = self._file.last_entry
        if last is not None and (offset - self.base_offset <= last[_RELATIVE_OFFSET] or position <= last[_POSITION]):
            raise ValueError(f"index entry ({offset}, {position}) does not follow the last entry {last} of {self.path}")
        self._file.append_entry((offset - self.base_offset, position))

    def truncate_to(self, offset: int) -> None:
        """Remove entries for offsets >= ``offset``."""
        self._file.truncate_entries(self._file.first_index_at_least(_RELATIVE_OFFSET, offset - self.base_offset))

    def truncate_to_position(self, position: int) -> None:
        """Remove entries pointing at or beyond byte ``position`` of the log."""
        self._file.truncate_entries(self._file.first_index_at_least(_POSITION, position))

    def sanity_check(self, log_size: int) -> None:
        """Raise CorruptIndexError if the file cannot belong to a log of ``log_size`` bytes (FileNotFoundError if it is missing).

        Reloads the entry count and the last entry from the file first.
        """
        size = self._file.reload()  # FileNotFoundError when the file is missing
        if size % OFFSET_INDEX_ENTRY.size:
            raise CorruptIndexError(self.path, f"size {size} is not a multiple of {OFFSET_INDEX_ENTRY.size}")
        last = self._file.last_entry
        if last is None:
            return
        relative, position = last
        if relative < 0 or position < 0 or position >= log_size:
            raise CorruptIndexError(self.path, f"last entry {last} does not fit a log of {log_size} bytes")
        first_relative, first_position = self._file.entry(0)
        if first_relative < 0 or first_position < 0 or first_relative > relative or first_position > position:
            raise CorruptIndexError(self.path, f"first entry {(first_relative, first_position)} is out of order")
