"""The transactions of one ``__transaction_state`` partition, as its leader keeps them in memory.

A broker coordinates the transactional ids of the partitions it leads. For each it holds one
:class:`TransactionsPartition` per leadership (topic id and leader epoch): it starts loading,
is filled from the partition's log in log order (:meth:`replay`), and then serves the
coordinator's operations until the leadership ends and the coordinator drops it. A new
leadership always starts from the log again. The leader epoch is the *coordinator epoch*
every marker of this leadership carries, so a partition leader can refuse markers of a
coordinator that has been replaced.

An id is *pending* while a state change of it is being written (Kafka's pending state): no
other change of it is accepted meanwhile (CONCURRENT_TRANSACTIONS), so the in-memory state
always equals the last record written for the id. An id is *completing* while its markers
are being written; one completion runs per id. :attr:`settled` (a condition over :attr:`lock`)
is notified whenever an id stops being pending or completing, so that a request that must wait
for either (the next transaction's AddPartitionsToTxn while the previous one completes) is
woken at once instead of being answered CONCURRENT_TRANSACTIONS and retried after a backoff.
Once every marker of a decided transaction is durable (:attr:`markers_written`) the transaction
is complete in memory: that request need not wait for CompleteCommit / CompleteAbort to be
stored, its own record supersedes it (the coordinator stores the completion record only for the
ids no later change superseded). With transactions version 2 it need not even wait for the
markers: its record names them (``unwritten_markers``) while :attr:`completing` still writes
them, and :attr:`durable_markers` tells when they are durable.

Thread-safety: every field is read and changed under :attr:`lock`, except :attr:`active`
(a bool, read without it).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from broker_nodes.coordinator.transactions.state import TransactionMarkers, TransactionMetadata
from log_formats.transaction_log_records import TransactionLogValue


@dataclass(frozen=True, slots=True, eq=False)
class MarkerJob:
    """One completion: the markers being written, and the PrepareCommit / PrepareAbort they end (None: named by a later record)."""

    markers: TransactionMarkers
    prepared: TransactionMetadata | None


class TransactionsPartition:
    """One leadership of one ``__transaction_state`` partition: loading, then active."""

    def __init__(self, partition: int, leader_epoch: int, topic_id: str) -> None:
        self.partition = partition
        self.leader_epoch = leader_epoch  # the coordinator epoch of this leadership
        self.topic_id = topic_id  # a recreated topic is a new leadership too
        self.lock = threading.Lock()
        self._active = False
        self.transactions: dict[str, TransactionMetadata] = {}  # qualified transactional id -> state
        self.pending: set[str] = set()  # ids with a state change being written
        self.completing: dict[str, MarkerJob] = {}  # ids whose markers are being written, with that completion
        # the markers (the very object of a MarkerJob) last made durable per id: a record's
        # ``unwritten_markers`` are durable when they are this object
        self.durable_markers: dict[str, TransactionMarkers] = {}
        # ids whose decided transaction (the value, the very object in ``transactions``) has every
        # marker durable while its CompleteCommit / CompleteAbort is not stored: complete in memory
        # until a later record of the id is stored
        self.markers_written: dict[str, TransactionMetadata] = {}
        self.settled = threading.Condition(self.lock)  # notified when an id leaves ``pending`` or ``completing``, or its markers are written
        self.waiting = 0  # requests waiting on :attr:`settled` now (tests and metrics)

    @property
    def active(self) -> bool:
        """Loaded: the coordinator serves this partition's ids."""
        return self._active

    def activate(self) -> None:
        """The log is loaded. The caller holds :attr:`lock` and checked the leadership is current."""
        self._active = True

    def replay(self, transactional_id: str, value: TransactionLogValue | None) -> None:
        """Apply one record read from the log (None: a tombstone); records come in log order."""
        with self.lock:
            if value is None:
                self.transactions.pop(transactional_id, None)
            else:
                self.transactions[transactional_id] = TransactionMetadata.from_log_value(transactional_id, value)
