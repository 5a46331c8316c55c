"""How the coordinator writes COMMIT/ABORT markers: the interface, and what one marker request carries.

The coordinator decides an outcome and hands the markers to a :class:`MarkerWriter`, one call
per transaction with every partition still missing its marker; the writer answers per
partition (None = the marker is in the partition's log on every in-sync replica). Partition
leaders may be this broker or others: the broker's writer appends locally through the
partition log's ``append_marker`` and sends the rest to their leaders (Kafka's
WriteTxnMarkers). The coordinator retries what failed with a retriable error and drops a
partition that no longer exists (Kafka does the same: a deleted topic needs no marker).

A marker written to a ``__consumer_offsets`` partition also ends the transaction's offset
commits there: the leader of that partition tells its group coordinator through a
:class:`TransactionCompletionListener` (TxnOffsetCommit offsets become visible on COMMIT).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class MarkerRequest:
    """The markers of one transaction: every partition gets a control batch of this producer id and epoch."""

    transactional_id: str
    producer_id: int
    producer_epoch: int  # the bumped epoch (KIP-890): above every batch of the transaction
    commit: bool
    coordinator_epoch: int  # the leader epoch of the coordinator's __transaction_state partition
    partitions: Sequence[TopicPartition]
    # The epoch is above every batch of the transaction (transactions version 2): a partition whose
    # producer holds this epoch or a later one already has the marker, or only later transactions'
    # batches, and takes none (a marker written again after a coordinator moved must not end them).
    above_batches: bool = False


class MarkerWriter(Protocol):
    """Writes a transaction's markers; answers each partition's outcome (None = written and replicated)."""

    def write_markers(self, request: MarkerRequest) -> Mapping[TopicPartition, Exception | None]: ...


class TransactionCompletionListener(Protocol):
    """Told when a marker lands on a ``__consumer_offsets`` partition this broker leads."""

    def transaction_completed(self, offsets_partition: int, producer_id: int, producer_epoch: int, *, commit: bool) -> None: ...
