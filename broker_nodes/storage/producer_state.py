"""Idempotent and transactional producer state of one partition, with snapshot files.

For every producer id seen, the partition remembers the producer epoch and the metadata of
the last five batches, enough to recognise a retried batch and to reject gaps and fenced
epochs, as Kafka's ProducerStateManager does. For a transactional producer it also remembers
the first offset of its ongoing transaction (set by its first transactional batch after its
last marker, cleared by the next marker) and the coordinator epoch of its last marker. The
smallest ongoing first offset bounds the partition's last stable offset.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import crc32c

from broker_nodes.storage.atomic_files import write_atomically
from broker_nodes.storage.errors import (
    CorruptCheckpointError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from broker_nodes.storage.file_names import parse_producer_snapshot_file_name, producer_snapshot_file_name
from weir.records import NO_PRODUCER_ID, BatchHeader

logger = logging.getLogger(__name__)

# Batches remembered per producer: Kafka's max.in.flight.requests.per.connection limit for idempotence.
BATCHES_PER_PRODUCER = 5
# Snapshot files kept in a partition directory; older ones are removed when a new one is written.
SNAPSHOTS_KEPT = 2
# Version of the snapshot file layout below; version 1 (no transactions) is still read.
SNAPSHOT_VERSION = 2
_SNAPSHOT_VERSION_WITHOUT_TRANSACTIONS = 1
# Sequence numbers wrap to zero after this value, as in Kafka.
SEQUENCE_MODULUS = 2**31

_SNAPSHOT_HEADER = struct.Struct(">hIi")  # version, CRC-32C of everything after the header, producer count
_PRODUCER_V1 = struct.Struct(">qhi")  # producer id, epoch, batch count
_PRODUCER = struct.Struct(">qhqii")  # producer id, epoch, ongoing transaction's first offset, coordinator epoch, batch count
_BATCH = struct.Struct(">iiqqq")  # first sequence, last sequence, first offset, last offset, max timestamp


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """What is remembered of one appended idempotent batch."""

    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int
    max_timestamp: int


@dataclass
class ProducerEntry:
    """State of one producer id: its epoch, its last (up to five) batches, oldest first, and its transaction.

    ``current_txn_first_offset`` is -1 when no transaction of the producer is open here;
    ``coordinator_epoch`` is -1 until a marker for it was written.
    """

    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCHES_PER_PRODUCER))
    current_txn_first_offset: int = -1
    coordinator_epoch: int = -1

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, first_sequence: int, last_sequence: int) -> BatchMetadata | None:
        for batch in self.batches:
            if batch.first_sequence == first_sequence and batch.last_sequence == last_sequence:
                return batch
        return None


@dataclass(frozen=True, slots=True)
class ActiveProducer:
    """What DescribeProducers reports of one producer id of a partition."""

    producer_id: int
    epoch: int
    last_sequence: int  # -1 when no batch of it is remembered
    last_timestamp: int  # the max timestamp of its last remembered batch, -1 when none
    current_txn_start_offset: int = -1  # first offset of its open transaction here, -1 when none
    coordinator_epoch: int = -1  # of its last transaction marker, -1 when none


@dataclass(frozen=True, slots=True)
class CompletedTransaction:
    """A transaction ended by a marker: its producer, first offset and the marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


class ProducerStateManager:
    """Producer id -> ``ProducerEntry`` for one partition, plus its ``<offset>.snapshot`` files.

    Snapshot layout (big endian): header (version int16, CRC-32C uint32 of the rest, producer
    count int32), then per producer (id int64, epoch int16, ongoing transaction's first offset
    int64 (-1: none), coordinator epoch int32, batch count int32) followed by that many batches
    (first sequence int32, last sequence int32, first offset int64, last offset int64, max
    timestamp int64). Version 1 lacked the two transaction fields. A snapshot named for offset
    N describes the state after every batch below N, so a restart keeps the open transactions
    (and the last stable offset) without rescanning the log. Not thread-safe: the owning log
    calls it under its lock.
    """

    def __init__(self, directory: Path, *, file_names: Iterable[str] | None = None) -> None:
        """State of the partition in ``directory``, empty until a snapshot is loaded.

        ``file_names`` (the directory's listing, when the caller has just made one) gives the
        snapshot files present; this manager then keeps that list up to date itself instead of
        listing the directory at every question (it is the only writer of snapshot files).
        """
        self.directory = directory
        self._producers: dict[int, ProducerEntry] = {}
        # producer id -> first offset of its open transaction, for the last stable offset.
        self._ongoing: dict[int, int] = {}
        # Offsets of the snapshot files present, ascending; None: list the directory when asked.
        self._snapshots: list[int] | None = None
        if file_names is not None:
            self._snapshots = _snapshot_offsets_in(file_names)

    # -------------------------------------------------------------- queries

    @property
    def is_empty(self) -> bool:
        """True when no producer is remembered."""
        return not self._producers

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def active_producers(self) -> list[ActiveProducer]:
        """Every remembered producer id, in id order, with its epoch, last batch and open transaction."""
        return [
            ActiveProducer(
                producer_id,
                entry.epoch,
                entry.last_sequence,
                entry.batches[-1].max_timestamp if entry.batches else -1,
                entry.current_txn_first_offset,
                entry.coordinator_epoch,
            )
            for producer_id, entry in sorted(self._producers.items())
        ]

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction, None when none is open."""
        return min(self._ongoing.values()) if self._ongoing else None

    def ongoing_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of its open transaction (a copy)."""
        return dict(self._ongoing)

    def check_append(self, headers: Iterable[BatchHeader]) -> list[BatchMetadata | None]:
        """Validate the idempotence rules for the batches of one append, in order.

        Returns, per batch, the metadata of the original when it is a retried duplicate, else
        None. Raises OutOfOrderSequenceError or InvalidProducerEpochError for the first
        violation. State is not changed; call ``update`` after the append succeeds.
        """
        # Batches earlier in the same append count as appended for the ones after them.
        pending: dict[int, tuple[int, int]] = {}
        results: list[BatchMetadata | None] = []
        for header in headers:
            producer_id = header.producer_id
            if producer_id == NO_PRODUCER_ID:
                results.append(None)
                continue
            entry = self._producers.get(producer_id)
            if producer_id in pending:
                epoch, last_sequence = pending[producer_id]
            elif entry is not None:
                epoch, last_sequence = entry.epoch, entry.last_sequence
            else:
                epoch, last_sequence = -1, -1
            received_epoch = header.producer_epoch
            if epoch >= 0 and received_epoch < epoch:
                raise InvalidProducerEpochError(producer_id, epoch, received_epoch)
            if not header.is_transactional and entry is not None and entry.current_txn_first_offset >= 0:
                raise InvalidTxnStateError(producer_id, entry.current_txn_first_offset)
            if received_epoch > epoch or epoch < 0:
                if header.base_sequence != 0:
                    raise OutOfOrderSequenceError(producer_id, 0, header.base_sequence)
            else:
                duplicate = None
                if entry is not None and producer_id not in pending:
                    duplicate = entry.find_duplicate(header.base_sequence, header.last_sequence)
                if duplicate is not None:
                    results.append(duplicate)
                    continue
                expected = (last_sequence + 1) % SEQUENCE_MODULUS
                if header.base_sequence != expected:
                    raise OutOfOrderSequenceError(producer_id, expected, header.base_sequence)
            pending[producer_id] = (received_epoch, header.last_sequence)
            results.append(None)
        return results

    # -------------------------------------------------------------- updates

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Validate a transaction marker about to be written; state is not changed.

        Raises InvalidProducerEpochError for an epoch older than the producer's current one
        (a marker of a fenced transaction) and TransactionCoordinatorFencedError for a
        coordinator epoch older than the last marker's (a deposed coordinator). A marker for a
        producer with no open transaction here is valid: Kafka writes it, and it is harmless.
        """
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(producer_id, entry.epoch, producer_epoch)
        if coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFencedError(producer_id, entry.coordinator_epoch, coordinator_epoch)

    # -------------------------------------------------------------- updates

    def update(self, header: BatchHeader) -> None:
        """Record an appended data batch (offsets assigned); batches without a producer id and
        control batches (see ``complete_transaction``) are ignored."""
        producer_id = header.producer_id
        if producer_id == NO_PRODUCER_ID or header.is_control:
            return
        entry = self._entry_at_epoch(producer_id, header.producer_epoch)
        entry.batches.append(BatchMetadata(header.base_sequence, header.last_sequence, header.base_offset, header.last_offset, header.max_timestamp))
        if header.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = header.base_offset
            self._ongoing[producer_id] = header.base_offset

    def complete_transaction(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, marker_offset: int, *, commit: bool) -> CompletedTransaction:
        """Record an appended marker: the producer's open transaction (if any) ends at ``marker_offset``.

        Without an open transaction the completed one spans the marker alone, as in Kafka.
        """
        entry = self._entry_at_epoch(producer_id, producer_epoch)
        entry.coordinator_epoch = coordinator_epoch
        first_offset = entry.current_txn_first_offset if entry.current_txn_first_offset >= 0 else marker_offset
        entry.current_txn_first_offset = -1
        self._ongoing.pop(producer_id, None)
        return CompletedTransaction(producer_id, first_offset, marker_offset, aborted=not commit)

    def last_stable_offset_after(self, completed: CompletedTransaction) -> int:
        """The last stable offset right after ``completed`` ended (its ``.txnindex`` entry's field)."""
        others = [first for producer_id, first in self._ongoing.items() if producer_id != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def _entry_at_epoch(self, producer_id: int, epoch: int) -> ProducerEntry:
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerEntry(epoch)
        elif epoch != entry.epoch:
            # A new epoch starts with an empty history; a replayed older epoch (possible only
            # when replaying a log written before a fence) is treated the same way. The open
            # transaction and the coordinator epoch carry over: with KIP-890 the epoch is
            # bumped while a transaction ends, and its marker still has to close it.
            replacement = ProducerEntry(epoch, current_txn_first_offset=entry.current_txn_first_offset, coordinator_epoch=entry.coordinator_epoch)
            entry = self._producers[producer_id] = replacement
        return entry

    def clear(self) -> None:
        self._producers.clear()
        self._ongoing.clear()

    def truncate_fully(self) -> None:
        """Forget every producer and remove every snapshot: the log was emptied (Kafka's truncateFullyAndStartAt)."""
        self._producers.clear()
        self._ongoing.clear()
        for snapshot_offset in self.snapshot_offsets():
            self._remove_snapshot(snapshot_offset)

    # -------------------------------------------------------------- snapshots

    def snapshot_offsets(self) -> list[int]:
        """Offsets of the snapshot files present, ascending."""
        if self._snapshots is not None:
            return list(self._snapshots)
        return _snapshot_offsets_in(os.listdir(self.directory))

    def take_snapshot(self, offset: int) -> Path:
        """Write the current state as ``<offset>.snapshot`` and keep only the newest snapshots."""
        body = bytearray()
        for producer_id, entry in sorted(self._producers.items()):
            body += _PRODUCER.pack(producer_id, entry.epoch, entry.current_txn_first_offset, entry.coordinator_epoch, len(entry.batches))
            for batch in entry.batches:
                body += _BATCH.pack(batch.first_sequence, batch.last_sequence, batch.first_offset, batch.last_offset, batch.max_timestamp)
        data = _SNAPSHOT_HEADER.pack(SNAPSHOT_VERSION, crc32c.crc32c(bytes(body)), len(self._producers)) + bytes(body)
        path = self.directory / producer_snapshot_file_name(offset)
        write_atomically(path, data)
        if self._snapshots is not None and offset not in self._snapshots:
            bisect.insort(self._snapshots, offset)
        for old in self.snapshot_offsets()[:-SNAPSHOTS_KEPT]:
            self._remove_snapshot(old)
        return path

    def delete_snapshots_above(self, offset: int) -> None:
        for snapshot_offset in self.snapshot_offsets():
            if snapshot_offset > offset:
                self._remove_snapshot(snapshot_offset)

    def load_latest_snapshot(self, max_offset: int) -> int | None:
        """Replace the state with the newest readable snapshot at or below ``max_offset``.

        Returns its offset (replay the log from there), or None when there is none (replay
        from the log start). Unreadable snapshots are logged and removed.
        """
        self.clear()
        for offset in reversed(self.snapshot_offsets()):
            if offset > max_offset:
                continue
            path = self.directory / producer_snapshot_file_name(offset)
            try:
                self._producers = _parse_snapshot(path)
                self._ongoing = {
                    producer_id: entry.current_txn_first_offset for producer_id, entry in self._producers.items() if entry.current_txn_first_offset >= 0
                }
                return offset
            except CorruptCheckpointError as error:
                logger.warning("removing unreadable producer snapshot: %s", error)
                self._remove_snapshot(offset)
        return None

    def _remove_snapshot(self, offset: int) -> None:
        try:
            os.unlink(self.directory / producer_snapshot_file_name(offset))
        except FileNotFoundError:
            pass
        if self._snapshots is not None and offset in self._snapshots:
            self._snapshots.remove(offset)


def _snapshot_offsets_in(names: Iterable[str]) -> list[int]:
    """The offsets of the snapshot files among ``names``, ascending."""
    return sorted(offset for name in names if (offset := parse_producer_snapshot_file_name(name)) is not None)


def _parse_snapshot(path: Path) -> dict[int, ProducerEntry]:
    data = path.read_bytes()
    if len(data) < _SNAPSHOT_HEADER.size:
        raise CorruptCheckpointError(path, "shorter than the snapshot header")
    version, checksum, count = _SNAPSHOT_HEADER.unpack_from(data, 0)
    if version not in (SNAPSHOT_VERSION, _SNAPSHOT_VERSION_WITHOUT_TRANSACTIONS):
        raise CorruptCheckpointError(path, f"unsupported snapshot version {version}")
    body = data[_SNAPSHOT_HEADER.size :]
    if crc32c.crc32c(body) != checksum:
        raise CorruptCheckpointError(path, "checksum mismatch")
    producers: dict[int, ProducerEntry] = {}
    position = 0
    try:
        for _ in range(count):
            if version == _SNAPSHOT_VERSION_WITHOUT_TRANSACTIONS:
                producer_id, epoch, batch_count = _PRODUCER_V1.unpack_from(body, position)
                txn_first_offset, coordinator_epoch = -1, -1
                position += _PRODUCER_V1.size
            else:
                producer_id, epoch, txn_first_offset, coordinator_epoch, batch_count = _PRODUCER.unpack_from(body, position)
                position += _PRODUCER.size
            entry = ProducerEntry(epoch, current_txn_first_offset=txn_first_offset, coordinator_epoch=coordinator_epoch)
            for _ in range(batch_count):
                entry.batches.append(BatchMetadata(*_BATCH.unpack_from(body, position)))
                position += _BATCH.size
            producers[producer_id] = entry
    except struct.error:
        raise CorruptCheckpointError(path, "entries run past the end of the file") from None
    if position != len(body):
        raise CorruptCheckpointError(path, f"{len(body) - position} unexpected trailing bytes")
    return producers
