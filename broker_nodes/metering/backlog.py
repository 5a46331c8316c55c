"""Usage windows not yet acknowledged by ``__usage``: bounded, and kept on disk until they are.

A closed window becomes a :class:`PendingWindow`: its rows already encoded (schema
``weir.usage/1``, binary encoding), each row unsent, in flight or acknowledged. The emitter sends the unsent
rows, and a row that fails becomes unsent again and is sent again later with the same
content, so with the same identity: readers drop the repeats.

On disk: one file per window in ``<data dir>/metering/``, written atomically when the window
closes (before its first row is sent) and deleted once every row is acknowledged. File
layout: the window's encoded rows, each preceded by its length (4 bytes, big-endian), since a
binary row may hold any byte; files of earlier versions, one JSON row per line (first byte
``{``), are read too. Name
``<window end ms, 15 digits>-<incarnation>-<sequence, 10 digits>.usage``, so that sorting the
names sorts the windows by age. A broker that starts finds the windows of its previous runs
there and sends them again (their identities name the old incarnation): a crash loses only
the window that was still open, and a row acknowledged just before a crash is at worst sent
twice, never counted twice.

Bound: at most ``max_rows`` rows are held (acknowledged rows of partly acknowledged windows
included). Beyond it the oldest windows are dropped, with their files, and a WARNING names
how many rows of how many windows were lost. The newest window is always kept.

Not thread-safe: owned by the emitter's thread (acknowledgements arrive on it too).
"""

from __future__ import annotations

import logging
import os
import struct
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from broker_nodes.storage.atomic_files import fsync_directory, write_atomically
from broker_nodes.storage.file_names import TEMPORARY_SUFFIX
from log_formats.usage_records import UsageRecordError, decode

logger = logging.getLogger(__name__)

BACKLOG_DIRECTORY_NAME = "metering"  # in the data directory; never parsed as a partition (no -<n> suffix)
WINDOW_FILE_SUFFIX = ".usage"
LEGACY_ROW_SEPARATOR = b"\n"  # files of JSON rows (compact JSON never holds a raw newline)
_ROW_LENGTH = struct.Struct(">I")


class MalformedBacklogFileError(ValueError):
    """A backlog file whose row lengths do not add up to its size (a torn or foreign file)."""


def pack_rows(values: tuple[bytes, ...]) -> bytes:
    """A window file's content: every row preceded by its length."""
    return b"".join(_ROW_LENGTH.pack(len(value)) + value for value in values)


def unpack_rows(content: bytes) -> tuple[bytes, ...]:
    """The rows of a window file, of this version (length-prefixed) or an earlier one (JSON lines)."""
    if content.startswith(b"{"):
        return tuple(line for line in content.split(LEGACY_ROW_SEPARATOR) if line)
    rows = []
    position = 0
    while position < len(content):
        if position + _ROW_LENGTH.size > len(content):
            raise MalformedBacklogFileError(f"{len(content) - position} bytes after the last row are not a row length")
        (length,) = _ROW_LENGTH.unpack_from(content, position)
        position += _ROW_LENGTH.size
        if position + length > len(content):
            raise MalformedBacklogFileError(f"a row of {length} bytes at byte {position} runs past the end of the file ({len(content)} bytes)")
        rows.append(content[position : position + length])
        position += length
    return tuple(rows)


def window_file_name(end_ms: int, incarnation: str, sequence: int) -> str:
    """``001700000060000-3f2a…-0000000007.usage``: sorts by window end."""
    return f"{end_ms:015d}-{incarnation}-{sequence:010d}{WINDOW_FILE_SUFFIX}"


@dataclass(eq=False)
class PendingWindow:
    """One closed window's rows and the delivery state of each (indexes into ``values``)."""

    incarnation: str
    sequence: int
    start_ms: int
    end_ms: int
    values: tuple[bytes, ...]
    unsent: set[int] = field(default_factory=set)
    in_flight: set[int] = field(default_factory=set)
    path: Path | None = None

    def __post_init__(self) -> None:
        if not self.unsent and not self.in_flight:
            self.unsent = set(range(len(self.values)))

    @property
    def unacknowledged(self) -> int:
        return len(self.unsent) + len(self.in_flight)

    @property
    def acknowledged(self) -> bool:
        return not self.unsent and not self.in_flight

    def describe(self) -> str:
        return f"window {self.start_ms}-{self.end_ms} (incarnation {self.incarnation}, sequence {self.sequence})"


class UsageBacklog:
    """Pending windows, oldest first; see the module docstring."""

    def __init__(self, directory: Path | None, max_rows: int) -> None:
        if max_rows < 1:
            raise ValueError(f"the usage backlog must hold at least one row, not {max_rows}")
        self._directory = directory
        self._max_rows = max_rows
        self._windows: deque[PendingWindow] = deque()
        self._rows = 0

    # ------------------------------------------------------------------ state

    @property
    def windows(self) -> list[PendingWindow]:
        return list(self._windows)

    @property
    def rows(self) -> int:
        """Rows held (acknowledged rows of partly acknowledged windows included)."""
        return self._rows

    @property
    def unacknowledged_rows(self) -> int:
        return sum(window.unacknowledged for window in self._windows)

    @property
    def in_flight_rows(self) -> int:
        return sum(len(window.in_flight) for window in self._windows)

    def has_unsent(self) -> bool:
        return any(window.unsent for window in self._windows)

    def unsent_rows(self) -> Iterator[tuple[PendingWindow, int]]:
        """(window, row index) of every row to send, oldest window first. Take a list before changing states."""
        for window in self._windows:
            for index in sorted(window.unsent):
                yield window, index

    # ------------------------------------------------------------------ changes

    def add(self, window: PendingWindow) -> None:
        """Hold a newly closed window: on disk first, then in memory; drop the oldest beyond the bound."""
        window.path = self._persist(window)
        self._windows.append(window)
        self._rows += len(window.values)
        self._enforce_bound()

    def start_sending(self, window: PendingWindow, index: int) -> None:
        window.unsent.discard(index)
        window.in_flight.add(index)

    def acknowledge(self, window: PendingWindow, index: int) -> None:
        """``__usage`` has the row; a window whose rows all are is forgotten, with its file."""
        window.in_flight.discard(index)
        window.unsent.discard(index)
        if window.acknowledged and window in self._windows:
            self._windows.remove(window)
            self._rows -= len(window.values)
            self._delete(window)

    def failed(self, window: PendingWindow, index: int) -> None:
        """The row was not acknowledged: send it again later (unless its window was dropped meanwhile)."""
        window.in_flight.discard(index)
        if window in self._windows:
            window.unsent.add(index)

    def _enforce_bound(self) -> None:
        dropped_windows: list[PendingWindow] = []
        while self._rows > self._max_rows and len(self._windows) > 1:
            window = self._windows.popleft()
            self._rows -= len(window.values)
            self._delete(window)
            dropped_windows.append(window)
        if dropped_windows:
            lost = sum(window.unacknowledged for window in dropped_windows)
            logger.warning(
                "usage backlog above metering.backlog.max.rows=%d: dropped %d usage rows not acknowledged by __usage, "
                "of %d windows from %d to %d ms; that usage is lost",
                self._max_rows,
                lost,
                len(dropped_windows),
                dropped_windows[0].start_ms,
                dropped_windows[-1].end_ms,
            )

    # ------------------------------------------------------------------ disk

    def load(self) -> int:
        """Take up the windows a previous run left unacknowledged (before adding new ones); returns how many rows."""
        directory = self._directory
        if directory is None or not directory.is_dir():
            return 0
        loaded = 0
        for path in sorted(directory.iterdir()):
            if path.name.endswith(TEMPORARY_SUFFIX):
                path.unlink(missing_ok=True)  # an atomic write the crash interrupted: its window was never sent
                continue
            if not path.name.endswith(WINDOW_FILE_SUFFIX):
                continue
            window = self._read(path)
            if window is None:
                continue
            self._windows.append(window)
            self._rows += len(window.values)
            loaded += len(window.values)
        self._enforce_bound()
        return loaded

    def _read(self, path: Path) -> PendingWindow | None:
        try:
            values = unpack_rows(path.read_bytes())
            rows = [decode(value) for value in values]
        except (OSError, UsageRecordError, MalformedBacklogFileError) as error:
            logger.warning("usage backlog file %s is unreadable (%s): removed; the usage in it is lost", path, error)
            path.unlink(missing_ok=True)
            return None
        if not rows:
            path.unlink(missing_ok=True)
            return None
        first = rows[0]
        return PendingWindow(first.incarnation, first.sequence, first.window_start_ms, first.window_end_ms, values, path=path)

    def _persist(self, window: PendingWindow) -> Path | None:
        directory = self._directory
        if directory is None:
            return None
        path = directory / window_file_name(window.end_ms, window.incarnation, window.sequence)
        try:
            if not directory.is_dir():
                directory.mkdir(parents=True, exist_ok=True)
                fsync_directory(directory.parent)
            write_atomically(path, pack_rows(window.values))
        except OSError as error:
            # Still sent from memory; only a crash before its acknowledgement would lose it.
            logger.warning("cannot keep usage %s on disk at %s (%s): it is held in memory only", window.describe(), path, error)
            return None
        return path

    @staticmethod
    def _delete(window: PendingWindow) -> None:
        if window.path is None:
            return
        try:
            os.unlink(window.path)
        except FileNotFoundError:
            pass
        except OSError as error:
            logger.warning("cannot remove usage backlog file %s (%s); it will be sent again after a restart", window.path, error)
