"""A bounded, shared cache of open file descriptors.

A broker may host thousands of partitions, each with several segments of three files. Opening
them all would exhaust the process's descriptor limit, so every segment and index reaches its
file through one ``FileHandleCache``: a descriptor is opened on first use, kept while it is
used again, and closed when it is the least recently used of more than ``max_open``.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

# Files are opened read-write so that one descriptor serves appends, reads and truncation.
_OPEN_FLAGS = os.O_RDWR | getattr(os, "O_CLOEXEC", 0)
# New files are readable by everyone and writable by the broker only, as Kafka creates them.
_NEW_FILE_MODE = 0o644


@dataclass
class _Entry:
    descriptor: int
    users: int = 0
    # True once the path was invalidated while in use: the last user closes the descriptor.
    stale: bool = False


class _Lease:
    """One use of a cached descriptor (``FileHandleCache.lease``): acquired on enter, released on exit."""

    __slots__ = ("_cache", "_key", "_create", "_entry")

    def __init__(self, cache: FileHandleCache, key: str, create: bool) -> None:
        self._cache = cache
        self._key = key
        self._create = create
        self._entry: _Entry | None = None

    def __enter__(self) -> int:
        entry = self._entry = self._cache._acquire(self._key, self._create)
        return entry.descriptor

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None) -> None:
        entry, self._entry = self._entry, None
        if entry is not None:
            self._cache._release(self._key, entry)


class FileHandleCache:
    """LRU cache of read-write descriptors keyed by path.

    Use ``with cache.lease(path) as descriptor:`` around each system call (``os.pread``,
    ``os.pwrite``, ``os.fsync``, ``os.ftruncate``). A leased descriptor is never closed under
    its user; eviction only closes idle descriptors, so when more than ``max_open`` are leased
    at the same moment the cache briefly holds more (bounded by the number of concurrent
    users). Writes through a later descriptor of the same file see earlier writes, since they
    share the page cache, so closing an idle descriptor never loses data.

    Invariants: at most one cached descriptor per path; an invalidated path's descriptor is
    closed once its last lease ends. Thread-safe: one lock guards the table; system calls on
    leased descriptors run outside it.
    """

    def __init__(self, max_open: int) -> None:
        if max_open < 1:
            raise ValueError(f"max_open must be at least 1, not {max_open}")
        self.max_open = max_open
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    @property
    def open_count(self) -> int:
        """Descriptors currently open through this cache."""
        with self._lock:
            return len(self._entries)

    def lease(self, path: Path | str, *, create: bool = False) -> _Lease:
        """``with`` it for an open descriptor of ``path``; FileNotFoundError if it is missing and not ``create``.

        A plain context manager rather than a ``contextlib`` generator: every append and read
        takes a few leases, and a generator-based one cost about three times as much.
        """
        return _Lease(self, str(path), create)

    def invalidate(self, path: Path | str) -> None:
        """Forget ``path`` (it is being renamed, replaced or deleted); its descriptor closes when idle."""
        with self._lock:
            entry = self._entries.pop(str(path), None)
            if entry is not None:
                self._close_or_mark(entry)

    def invalidate_directory(self, directory: Path | str) -> None:
        """Forget every path inside ``directory``."""
        prefix = str(directory).rstrip(os.sep) + os.sep
        with self._lock:
            for key in [key for key in self._entries if key.startswith(prefix)]:
                self._close_or_mark(self._entries.pop(key))

    def close_all(self) -> None:
        """Close every idle descriptor and mark the leased ones to close on release."""
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
            for entry in entries:
                self._close_or_mark(entry)

    def _acquire(self, key: str, create: bool) -> _Entry:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                entry.users += 1
                return entry
            flags = _OPEN_FLAGS | (os.O_CREAT if create else 0)
            entry = _Entry(os.open(key, flags, _NEW_FILE_MODE), users=1)
            self._entries[key] = entry
            self._evict_idle()
            return entry

    def _release(self, key: str, entry: _Entry) -> None:
        with self._lock:
            entry.users -= 1
            if entry.stale and entry.users == 0:
                os.close(entry.descriptor)
            elif len(self._entries) > self.max_open:
                self._evict_idle()

    def _evict_idle(self) -> None:
        # Called with the lock held. Walks from the least recently used end and stops as soon
        # as the table fits, so a full cache costs one or two steps per open.
        if len(self._entries) <= self.max_open:
            return
        for key in list(self._entries):
            if len(self._entries) <= self.max_open:
                return
            entry = self._entries[key]
            if entry.users == 0:
                del self._entries[key]
                os.close(entry.descriptor)

    def _close_or_mark(self, entry: _Entry) -> None:
        if entry.users == 0:
            os.close(entry.descriptor)
        else:
            entry.stale = True
