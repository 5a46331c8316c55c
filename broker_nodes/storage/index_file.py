"""A file of fixed-size, sorted entries searched in place with ``os.pread``.

The offset index and the time index share this mechanism; each says what its entries mean.
Entries are not held in memory: a lookup binary-searches the file through the shared
descriptor cache, so a closed segment's index costs no memory and, when idle, no descriptor.
Nothing is read when an index is opened: its entry count and last entry are loaded on first
use, so a broker of thousands of partitions starts without reading indexes it does not need.
"""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Callable
from pathlib import Path

from broker_nodes.storage.file_cache import FileHandleCache

# A search reads single entries (one ``os.pread`` each) only while its range spans more than
# this; then it reads the range in one call and finishes in memory. One page: 512 offset-index
# entries, so a segment's index of up to 512 entries is searched with one system call.
SEARCH_WINDOW_BYTES = 4096


def search_greatest_at_most(key_at: Callable[[int], int], count: int, target: int) -> int:
    """Index of the last of ``count`` ascending keys that is <= ``target``; -1 if none is.

    ``key_at(i)`` returns the i-th key; the search reads O(log count) of them.
    """
    low, high = 0, count - 1
    found = -1
    while low <= high:
        middle = (low + high) // 2
        if key_at(middle) <= target:
            found = middle
            low = middle + 1
        else:
            high = middle - 1
    return found


def search_file(descriptor: int, entry: struct.Struct, count: int, key_field: int, target: int) -> tuple[int, tuple[int, ...] | None]:
    """(index, entry) of the last of the ``count`` entries in ``descriptor`` whose field ``key_field`` is <= ``target``; (-1, None) if none is.

    Keys ascend. Halves the range with one-entry reads until it fits SEARCH_WINDOW_BYTES, then
    reads it whole and finishes in memory: about log2(count * entry.size / SEARCH_WINDOW_BYTES)
    + 1 system calls instead of log2(count) + 1.
    """
    size = entry.size
    low, high = 0, count  # every entry below ``low`` is <= target, every entry from ``high`` on is above it
    below: tuple[int, ...] | None = None  # the entry at low - 1 once read
    while (high - low) * size > SEARCH_WINDOW_BYTES:
        middle = (low + high) // 2
        values = entry.unpack(os.pread(descriptor, size, middle * size))
        if values[key_field] <= target:
            low, below = middle + 1, values
        else:
            high = middle
    window = os.pread(descriptor, (high - low) * size, low * size) if high > low else b""
    unpack_from = entry.unpack_from
    found = search_greatest_at_most(lambda index: int(unpack_from(window, index * size)[key_field]), len(window) // size, target)
    if found >= 0:
        return low + found, unpack_from(window, found * size)
    return low - 1, below  # ``below`` was read when ``low`` moved past 0; (-1, None) when it never did


class IndexFile:
    """Entries of ``entry.size`` bytes appended at the end of ``path``, keys ascending.

    On disk: entries back to back, nothing else; the entry count is the file size divided by
    the entry size (a missing file has none). Only the entry count and the last entry are
    cached in memory, both loaded on first use. Thread-safe: loading, appends and truncations
    take the index's lock; lookups read a snapshot of the entry count and then only read
    entries below it, which are never rewritten in place.
    """

    def __init__(self, path: Path, entry: struct.Struct, file_cache: FileHandleCache, max_bytes: int) -> None:
        self.path = path
        self._entry = entry
        self._file_cache = file_cache
        self._lock = threading.Lock()
        self._max_entries = max(1, max_bytes // entry.size)
        # None until loaded (``_loaded_count``); then kept up to date by appends and truncations.
        self._count: int | None = None
        self._last: tuple[int, ...] | None = None

    # -------------------------------------------------------------- loading

    def _loaded_count(self) -> int:
        count = self._count
        if count is None:
            with self._lock:
                if self._count is None:
                    self._load_locked(self.file_size())
                count = self._count
                assert count is not None
        return count

    def _load_locked(self, file_bytes: int) -> None:
        count = file_bytes // self._entry.size
        self._last = self._read_entry(count - 1) if count else None
        self._count = count

    def reload(self) -> int:
        """Read the entry count and last entry from the file again; return its size in bytes.

        FileNotFoundError when the file is missing (open-time checks tell that apart from an
        empty index; everything else treats a missing file as empty).
        """
        with self._lock:
            file_bytes = os.stat(self.path).st_size
            self._load_locked(file_bytes)
            return file_bytes

    # -------------------------------------------------------------- reading

    @property
    def entry_count(self) -> int:
        return self._loaded_count()

    @property
    def is_full(self) -> bool:
        """True when one more entry would exceed segment.index.bytes."""
        return self._loaded_count() >= self._max_entries

    @property
    def last_entry(self) -> tuple[int, ...] | None:
        self._loaded_count()
        return self._last

    def entry(self, index: int) -> tuple[int, ...]:
        return self._read_entry(index)

    def search(self, key_field: int, target: int) -> tuple[int, ...] | None:
        """The last entry whose field ``key_field`` is <= ``target``, None if none is."""
        count = self._loaded_count()
        if count == 0:
            return None
        with self._file_cache.lease(self.path) as descriptor:
            return search_file(descriptor, self._entry, count, key_field, target)[1]

    def first_index_at_least(self, key_field: int, target: int) -> int:
        """Position in the file of the first entry whose field is >= ``target`` (= count if none)."""
        count = self._loaded_count()
        if count == 0:
            return 0
        with self._file_cache.lease(self.path) as descriptor:
            # The last entry strictly below the target; the one after it is the answer.
            return search_file(descriptor, self._entry, count, key_field, target - 1)[0] + 1

    # -------------------------------------------------------------- writing

    def append_entry(self, values: tuple[int, ...]) -> None:
        """Write one entry after the last; the caller guarantees key order."""
        data = self._entry.pack(*values)
        with self._lock:
            if self._count is None:
                self._load_locked(self.file_size())
            assert self._count is not None
            with self._file_cache.lease(self.path, create=True) as descriptor:
                os.pwrite(descriptor, data, self._count * self._entry.size)
            self._count += 1
            self._last = values

    def truncate_entries(self, count: int) -> None:
        """Keep only the first ``count`` entries."""
        with self._lock:
            if self._count is None:
                self._load_locked(self.file_size())
            assert self._count is not None
            if count >= self._count:
                return
            with self._file_cache.lease(self.path, create=True) as descriptor:
                os.ftruncate(descriptor, count * self._entry.size)
            self._count = count
            self._last = self._read_entry(count - 1) if count else None

    def reset(self) -> None:
        """Remove every entry."""
        self.truncate_entries(0)

    def flush(self) -> None:
        with self._file_cache.lease(self.path, create=True) as descriptor:
            os.fsync(descriptor)

    def rename_to(self, path: Path) -> None:
        """Rename the file (a missing file is fine: it has no entries) and follow it."""
        with self._lock:
            self._file_cache.invalidate(self.path)
            try:
                os.rename(self.path, path)
            except FileNotFoundError:
                pass
            self.path = path

    def delete(self) -> None:
        """Remove the file; a missing file is fine."""
        with self._lock:
            self._file_cache.invalidate(self.path)
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            self._count = 0
            self._last = None

    def set_max_bytes(self, max_bytes: int) -> None:
        self._max_entries = max(1, max_bytes // self._entry.size)

    def file_size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def _read_entry(self, index: int) -> tuple[int, ...]:
        with self._file_cache.lease(self.path) as descriptor:
            data = os.pread(descriptor, self._entry.size, index * self._entry.size)
        return self._entry.unpack(data)


class SegmentIndex:
    """What a segment's offset index and time index share: an :class:`IndexFile` of fixed-size
    entries relative to the segment's base offset. Subclasses add lookups, appends and checks.
    Thread-safety: see ``IndexFile``."""

    def __init__(self, path: Path, base_offset: int, entry: struct.Struct, file_cache: FileHandleCache, max_bytes: int) -> None:
        self.base_offset = base_offset
        self._file = IndexFile(path, entry, file_cache, max_bytes)

    @property
    def path(self) -> Path:
        return self._file.path

    @property
    def entry_count(self) -> int:
        return self._file.entry_count

    @property
    def is_full(self) -> bool:
        return self._file.is_full

    def reset(self) -> None:
        self._file.reset()

    def truncate_entries(self, count: int) -> None:
        """Keep only the first ``count`` entries (undoing the appends of a failed write)."""
        self._file.truncate_entries(count)

    def flush(self) -> None:
        self._file.flush()

    def set_max_bytes(self, max_bytes: int) -> None:
        self._file.set_max_bytes(max_bytes)

    def rename_to(self, path: Path) -> None:
        self._file.rename_to(path)

    def delete(self) -> None:
        self._file.delete()
