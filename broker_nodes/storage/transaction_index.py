"""The aborted-transaction index of one segment (``<base>.txnindex``), as Kafka's TransactionIndex.

A read_committed consumer receives, with every fetch, the transactions aborted within the
fetched range so that it can drop their records; this file lets the broker answer without
decoding any batch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from broker_nodes.storage.errors import CorruptIndexError
from log_formats.log_files import TXN_INDEX_ENTRY, TXN_INDEX_ENTRY_VERSION


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    """One aborted transaction of one producer: its offsets ``[first_offset, last_offset]`` (the marker's).

    ``last_stable_offset`` is the partition's LSO right after the marker: a reader whose fetch
    ends at or below it need not look at later segments for other aborted transactions that
    overlap its range (Kafka's ``isComplete`` rule).
    """

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


@dataclass(frozen=True, slots=True)
class AbortedTransactionsFound:
    """What one index contributes to a fetch: the overlapping entries, and whether the search may stop here."""

    transactions: list[AbortedTransaction]
    complete: bool


class TransactionIndex:
    """``<base>.txnindex``: 34-byte entries (version int16, producer id int64, first offset int64,
    last offset int64, last stable offset int64), big endian, appended in marker order.

    Invariant: last offsets strictly increase (each entry is added when its ABORT marker is
    appended to the segment). The file exists for every live segment (empty when no
    transaction was aborted in it), so a missing file means it was lost and recovery rebuilds
    it. Entries are few (one per aborted transaction) and are cached in memory after the first
    read. Thread-safety: one writer at a time (the owning log's lock); readers take a reference
    to an immutable tuple, so a concurrent append is either wholly visible or not at all.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: tuple[AbortedTransaction, ...] | None = None

    # -------------------------------------------------------------- reading

    @property
    def entries(self) -> tuple[AbortedTransaction, ...]:
        """Every entry, oldest first (read from the file once, then kept)."""
        entries = self._entries
        if entries is None:
            entries = self._entries = tuple(self._read_file())
        return entries

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> AbortedTransactionsFound:
        """Entries overlapping ``[fetch_offset, upper_bound_offset)`` (Kafka's collectAbortedTxns)."""
        found = []
        for entry in self.entries:
            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound_offset:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound_offset:
                return AbortedTransactionsFound(found, True)
        return AbortedTransactionsFound(found, False)

    def sanity_check(self) -> str | None:
        """None when the file is usable; otherwise why not (missing, torn, unknown version, out of order)."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return f"{self.path.name} is missing"
        if size % TXN_INDEX_ENTRY.size:
            return f"{self.path.name} is {size} bytes, not a multiple of {TXN_INDEX_ENTRY.size}"
        if size == 0:
            self._entries = ()  # the common case (no aborted transaction), answered without reading
            return None
        try:
            self._entries = None
            entries = self.entries
        except CorruptIndexError as error:
            return error.reason
        for previous, entry in zip(entries, entries[1:], strict=False):
            if entry.last_offset <= previous.last_offset:
                return f"{self.path.name}: last offset {entry.last_offset} does not follow {previous.last_offset}"
        return None

    def _read_file(self) -> list[AbortedTransaction]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        entries = []
        for position in range(0, len(data) - TXN_INDEX_ENTRY.size + 1, TXN_INDEX_ENTRY.size):
            version, producer_id, first_offset, last_offset, last_stable_offset = TXN_INDEX_ENTRY.unpack_from(data, position)
            if version != TXN_INDEX_ENTRY_VERSION:
                raise CorruptIndexError(self.path, f"entry at byte {position} has version {version}")
            entries.append(AbortedTransaction(producer_id, first_offset, last_offset, last_stable_offset))
        return entries

    # -------------------------------------------------------------- writing

    def create(self) -> None:
        """Create the file empty (truncating any old one)."""
        try:
            os.truncate(self.path, 0)  # one system call where the file exists, as after every unclean shutdown
        except FileNotFoundError:
            with open(self.path, "wb"):
                pass
        self._entries = ()

    def append(self, entry: AbortedTransaction) -> None:
        """Add the entry of an ABORT marker just appended; its last offset must exceed the previous entry's."""
        entries = self.entries
        if entries and entry.last_offset <= entries[-1].last_offset:
            raise ValueError(f"aborted transaction ending at {entry.last_offset} does not follow the one ending at {entries[-1].last_offset}")
        data = TXN_INDEX_ENTRY.pack(TXN_INDEX_ENTRY_VERSION, entry.producer_id, entry.first_offset, entry.last_offset, entry.last_stable_offset)
        with open(self.path, "ab") as file:
            file.write(data)
        self._entries = (*entries, entry)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or above ``offset`` (the log was cut there)."""
        entries = self.entries
        kept = tuple(entry for entry in entries if entry.last_offset < offset)
        if len(kept) == len(entries):
            return
        with open(self.path, "r+b" if self.path.exists() else "wb") as file:
            file.truncate(len(kept) * TXN_INDEX_ENTRY.size)
        self._entries = kept

    def flush(self) -> None:
        """fsync the file, if it exists (a segment written before Weir had transactions has none until rebuilt)."""
        try:
            descriptor = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def rename_to(self, path: Path) -> None:
        """Rename the file (a missing one is fine) and keep using it under the new name."""
        try:
            os.rename(self.path, path)
        except FileNotFoundError:
            pass
        self.path = path
