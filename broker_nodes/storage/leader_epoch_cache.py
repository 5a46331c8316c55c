"""Leader epoch -> first offset written in that epoch, for one partition."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Collection
from pathlib import Path

from broker_nodes.storage.checkpoints import LeaderEpochCheckpointFile
from broker_nodes.storage.file_names import LEADER_EPOCH_CHECKPOINT

# Kafka's "no epoch" answer to an end-offset query.
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class LeaderEpochCache:
    """The partition's epoch history, persisted to ``leader-epoch-checkpoint`` on every change.

    Invariants: epochs and start offsets both strictly increase along the list. Replication
    uses ``end_offset_for`` to find where a follower's log diverges from the leader's.
    Thread-safe (one lock). Every change is written through to the checkpoint at once.

    Durability, as Kafka's since KAFKA-15046: a new epoch (:meth:`assign`) is written without
    fsync, because it happens on the append path (the first append of every partition after an
    election: with thousands of partitions, thousands of fsyncs on the request threads) and its
    start offset is in a batch of the log anyway. The file survives a process crash (kill -9)
    as it is; before the log's recovery point moves past such an entry, :meth:`flush` fsyncs
    it (``PartitionLog.flush``), and after a power loss the recovery re-assigns the epochs of
    the batches it scans from the recovery point (``PartitionLog.open``). Truncations, rare
    and not recoverable from the log, are fsynced at once.
    """

    def __init__(self, partition_directory: Path, *, file_names: Collection[str] | None = None) -> None:
        """Load the checkpoint; ``file_names`` (the directory's listing, when the caller has it) spares opening a missing one."""
        self._file = LeaderEpochCheckpointFile(partition_directory / LEADER_EPOCH_CHECKPOINT)
        self._lock = threading.Lock()
        present = file_names is None or LEADER_EPOCH_CHECKPOINT in file_names
        self._entries: list[tuple[int, int]] = self._file.read() if present else []
        self._unflushed = False  # an assign wrote the file without fsync since the last durable write

    @property
    def entries(self) -> list[tuple[int, int]]:
        with self._lock:
            return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        with self._lock:
            return self._entries[-1][0] if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` began at ``start_offset``; older or repeated epochs are ignored."""
        if epoch < 0:
            return
        with self._lock:
            if self._entries and epoch <= self._entries[-1][0]:
                return
            # A new epoch that starts at or below an earlier epoch's start supersedes it: the
            # earlier epoch wrote nothing that survived.
            while self._entries and self._entries[-1][1] >= start_offset:
                self._entries.pop()
            self._entries.append((epoch, start_offset))
            self._file.write(self._entries, durable=False)
            self._unflushed = True

    def flush(self) -> None:
        """fsync the checkpoint if an :meth:`assign` wrote it without; a no-op otherwise."""
        with self._lock:
            if self._unflushed:
                self._write_durably()

    def _write_durably(self) -> None:
        self._file.write(self._entries)
        self._unflushed = False

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest epoch <= ``epoch``, the offset where it ended), as Kafka's OffsetsForLeaderEpoch answers."""
        with self._lock:
            epochs = [entry[0] for entry in self._entries]
            index = bisect.bisect_right(epochs, epoch)
            if index == 0:
                return UNDEFINED_EPOCH, UNDEFINED_OFFSET
            if index == len(self._entries):
                return self._entries[-1][0], log_end_offset
            return self._entries[index - 1][0], self._entries[index][1]

    def divergence(self, last_fetched_epoch: int, fetch_offset: int, log_end_offset: int) -> tuple[int, int] | None:
        """Where a fetcher's log stops agreeing with this one (Kafka's diverging epoch, KIP-320 / KIP-595).

        The fetcher read up to ``fetch_offset`` and its last batch had ``last_fetched_epoch``
        (>= 0). It diverged when this log's largest epoch <= ``last_fetched_epoch`` is smaller
        (this log never had that epoch) or ended before ``fetch_offset``: the answer is that
        (epoch, end offset), where the fetcher truncates. None: the logs agree up to
        ``fetch_offset``. (UNDEFINED_EPOCH, UNDEFINED_OFFSET) when this log knows no epoch at or
        below it, which Kafka answers with OFFSET_OUT_OF_RANGE. Both front doors' Fetch take
        their verdict from here; Weir's followers still truncate before fetching, from
        OffsetForLeaderEpoch answers (``replication.follower``), which this rule agrees with.
        """
        epoch, end_offset = self.end_offset_for(last_fetched_epoch, log_end_offset)
        if epoch == UNDEFINED_EPOCH or end_offset == UNDEFINED_OFFSET:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if epoch < last_fetched_epoch or end_offset < fetch_offset:
            return epoch, end_offset
        return None

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs that started at or after ``end_offset`` (the log was truncated there)."""
        with self._lock:
            kept = [entry for entry in self._entries if entry[1] < end_offset]
            if kept != self._entries:
                self._entries = kept
                self._write_durably()

    def clear(self) -> None:
        """Forget every epoch: the log was emptied and restarts at another offset (Kafka's clearAndFlush)."""
        with self._lock:
            self._entries = []
            self._write_durably()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop epochs wholly below ``start_offset``; the one spanning it now starts there."""
        with self._lock:
            below = [entry for entry in self._entries if entry[1] < start_offset]
            if not below:
                return
            kept = [(below[-1][0], start_offset)] + [entry for entry in self._entries if entry[1] >= start_offset]
            if kept and len(kept) > 1 and kept[1][1] == start_offset:
                kept = kept[1:]
            if kept != self._entries:
                self._entries = kept
                self._write_durably()
