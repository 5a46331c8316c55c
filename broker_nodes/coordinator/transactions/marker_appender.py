"""Appending COMMIT/ABORT markers to the partitions this broker leads (the receiving end of Kafka's WriteTxnMarkers).

Each marker is one control batch appended through the partition log's ``append_marker``
(which fences older producer epochs and older coordinator epochs) with the leader epoch this
broker leads the partition with; once every marker of a request is appended, each is waited
for, like an acks=all produce, until every in-sync replica has it (bounded by
request.timeout.ms), so the replication of the markers of a transaction over several
partitions runs at once instead of one partition after another. The coordinator stores CompleteCommit /
CompleteAbort only after every marker is durable, so a marker can never be lost with a
leader. A partition led elsewhere answers NOT_LEADER_OR_FOLLOWER and the coordinator retries
it after the next cluster map.

A marker whose epoch is above its transaction's batches (``above_batches``, transactions
version 2) is not appended where the producer already holds that epoch or a later one: that
partition has the marker already, or the next transaction's batches and none of this one (a
coordinator that took over writes the markers of a transaction again without knowing which
landed, and such a marker must not end the next transaction). It is answered once the log up
to its end is on the in-sync replicas, as the marker it stands for.

A marker on a ``__consumer_offsets`` partition ends the transaction's offset commits there:
the :class:`TransactionCompletionListener` (the group coordinator's side) is told once it is
durable.

Thread-safe: appends of one partition are serialised by its log; nothing here keeps state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from broker_nodes.clock import Clock
from broker_nodes.coordinator.offset_store import OFFSETS_TOPIC
from broker_nodes.coordinator.transactions.markers import MarkerRequest, TopicPartition, TransactionCompletionListener
from broker_nodes.replica_manager import ReplicaManager

logger = logging.getLogger(__name__)


class MarkerAppender:
    """Writes markers to partitions led here. See the module docstring."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        clock: Clock,
        *,
        notify_append: Callable[[str, int, int], None],
        timeout_ms: int,
        listener: TransactionCompletionListener | None = None,
    ) -> None:
        self._replica_manager = replica_manager
        self._clock = clock
        self._notify_append = notify_append  # wakes fetches parked on the partition (the fetch purgatory's notify_append)
        self._timeout_ms = timeout_ms
        self._listener = listener

    def write_markers(self, request: MarkerRequest) -> dict[TopicPartition, Exception | None]:
        """Append the request's marker to each of its partitions; None for a durable marker, else the error.

        Every marker is appended before any is waited for, so a transaction over several
        partitions led here waits for its markers' replication once (the slowest partition),
        not once per partition. One acks=all wait slot covers the request: one thread waits.
        """
        outcomes: dict[TopicPartition, Exception | None] = {}
        try:
            with self._wait_slot():
                appended = []
                for topic, partition in request.partitions:
                    try:
                        appended.append((topic, partition, *self._append(topic, partition, request)))
                    except Exception as error:  # this partition's answer
                        outcomes[(topic, partition)] = error
                for topic, partition, next_offset, superseded in appended:
                    try:
                        self._await_replicas(topic, partition, next_offset)
                        outcomes[(topic, partition)] = None
                    except Exception as error:  # this partition's answer
                        outcomes[(topic, partition)] = error
                        continue
                    if topic == OFFSETS_TOPIC and self._listener is not None and not superseded:
                        self._listener.transaction_completed(partition, request.producer_id, request.producer_epoch, commit=request.commit)
        except Exception as error:  # no wait slot free: every partition is retried
            return dict.fromkeys(request.partitions, error)
        return outcomes

    def _append(self, topic: str, partition: int, request: MarkerRequest) -> tuple[int | None, bool]:
        """Append the marker as leader: the offset followers must reach (None: durable already), and whether it was superseded."""
        leader_epoch = self._replica_manager.leader_epoch(topic, partition)  # NotLeaderOrFollowerError when led elsewhere
        log = self._replica_manager.partition_log(topic, partition)
        replication = self._replica_manager.replication
        replicated = replication is not None and replication.is_replicated_leader(topic, partition)
        if replicated:
            assert replication is not None
            replication.check_enough_replicas(topic, partition)
        if request.above_batches:
            entry = log.producer_state(request.producer_id)
            if entry is not None and entry.epoch >= request.producer_epoch:
                # What holds that epoch (the marker itself or a later batch) is durable once the log's end is.
                return (log.log_end_offset if replicated else None), True
        info = log.append_marker(
            request.producer_id,
            request.producer_epoch,
            commit=request.commit,
            coordinator_epoch=request.coordinator_epoch,
            leader_epoch=leader_epoch,
            now_ms=self._clock.milliseconds(),
        )
        if not replicated:
            log.update_high_watermark(log.log_end_offset)
        self._notify_append(topic, partition, info.size_bytes)
        if not replicated:
            return None, False
        assert replication is not None
        replication.after_leader_append(topic, partition, log)
        return info.last_offset + 1, False

    def _await_replicas(self, topic: str, partition: int, next_offset: int | None) -> None:
        """acks=all for one appended marker (bounded by request.timeout.ms); nothing to wait for when ``next_offset`` is None."""
        replication = self._replica_manager.replication
        if next_offset is None or replication is None:
            return
        deadline = self._clock.monotonic() + self._timeout_ms / 1000.0
        replication.wait_for_replication(topic, partition, next_offset, deadline, self._timeout_ms)

    def _wait_slot(self) -> AbstractContextManager[None]:
        replication = self._replica_manager.replication
        return replication.wait_slot() if replication is not None else nullcontext()
