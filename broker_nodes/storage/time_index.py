"""Time index of one segment: largest timestamp so far -> relative offset of the batch that set it."""

from __future__ import annotations

from pathlib import Path

from broker_nodes.storage.errors import CorruptIndexError
from broker_nodes.storage.file_cache import FileHandleCache
from broker_nodes.storage.index_file import SegmentIndex
from log_formats.log_files import TIME_INDEX_ENTRY

_TIMESTAMP = 0
_RELATIVE_OFFSET = 1


class TimeIndex(SegmentIndex):
    """``<base>.timeindex``: 12-byte entries (timestamp int64, relative offset int32), big endian.

    An entry ``(t, r)`` means: the largest batch max timestamp seen up to this point of the
    segment is ``t`` and the first batch to reach it has base offset ``base + r``. Batches
    before that one all have max timestamps below ``t``, so a search for the first batch with
    max timestamp >= target can start at the entry found for target. Invariants: timestamps
    strictly increase, offsets never decrease; when a segment rolls its last entry holds the
    segment's largest timestamp. Thread-safety: see ``IndexFile``.
    """

    def __init__(self, path: Path, base_offset: int, file_cache: FileHandleCache, max_bytes: int) -> None:
        super().__init__(path, base_offset, TIME_INDEX_ENTRY, file_cache, max_bytes)

    @property
    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, absolute offset) of the last entry, None when empty."""
        last = self._file.last_entry
        return None if last is None else (last[_TIMESTAMP], self.base_offset + last[_RELATIVE_OFFSET])

    def lookup(self, timestamp: int) -> tuple[int, int] | None:
        """(timestamp, absolute offset) of the last entry with timestamp <= ``timestamp``; None if none."""
        entry = self._file.search(_TIMESTAMP, timestamp)
        return None if entry is None else (entry[_TIMESTAMP], self.base_offset + entry[_RELATIVE_OFFSET])

    def maybe_append(self, timestamp: int, offset: int) -> bool:
        """Add ``(timestamp, offset)`` if ``timestamp`` exceeds the last entry's; return whether it did."""
        last = self._file.last_entry
        if last is not None and timestamp <= last[_TIMESTAMP]:
            return False
        if last is not None and offset - self.base_offset < last[_RELATIVE_OFFSET]:
            raise ValueError(f"time index entry ({timestamp}, {offset}) goes back in offsets in {self.path}")
        self._file.append_entry((timestamp, offset - self.base_offset))
        return True

    def truncate_to(self, offset: int) -> None:
        """Remove entries for offsets >= ``offset``."""
        relative = offset - self.base_offset
        count = self._file.entry_count
        # Offsets are non-decreasing but not keyed for search by offset ties; the entries to
        # drop are a suffix, found by walking back from the end (truncation is rare).
        while count > 0 and self._file.entry(count - 1)[_RELATIVE_OFFSET] >= relative:
            count -= 1
        self._file.truncate_entries(count)

    def sanity_check(self) -> None:
        """Raise CorruptIndexError if the file is not a whole number of ordered entries (FileNotFoundError if it is missing).

        Reloads the entry count and the last entry from the file first.
        """
        size = self._file.reload()  # FileNotFoundError when the file is missing
        if size % TIME_INDEX_ENTRY.size:
            raise CorruptIndexError(self.path, f"size {size} is not a multiple of {TIME_INDEX_ENTRY.size}")
        last = self._file.last_entry
        if last is None:
            return
        first = self._file.entry(0)
        if last[_RELATIVE_OFFSET] < 0 or first[_RELATIVE_OFFSET] < 0 or first[_TIMESTAMP] > last[_TIMESTAMP]:
            raise CorruptIndexError(self.path, f"entries {first} .. {last} are out of order")
