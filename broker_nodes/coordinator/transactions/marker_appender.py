"""Appending COMMIT/ABORT markers to the partitions this broker leads (the receiving end of Kafka's WriteTxnMarkers).

Each marker is one control batch appended through the partition log's ``append_marker``
(which fences older producer epochs and older coordinator epochs) with the leader epoch this
broker leads the partition with, then waits, like an acks=all produce, until every in-sync
replica has it (bounded by request.timeout.ms): the coordinator stores CompleteCommit /
CompleteAbort only after every marker is durable, so a marker can never be lost with a
leader. A partition led elsewhere answers NOT_LEADER_OR_FOLLOWER and the coordinator retries
it after the next cluster map.

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
        """Append the request's marker to each of its partitions; None for a durable marker, else the error."""
        outcomes: dict[TopicPartition, Exception | None] = {}
        for topic, partition in request.partitions:
            try:
                self._write(topic, partition, request)
                outcomes[(topic, partition)] = None
            except Exception as error:  # this partition's answer
                outcomes[(topic, partition)] = error
        return outcomes

    def _write(self, topic: str, partition: int, request: MarkerRequest) -> None:
        leader_epoch = self._replica_manager.leader_epoch(topic, partition)  # NotLeaderOrFollowerError when led elsewhere
        log = self._replica_manager.partition_log(topic, partition)
        replication = self._replica_manager.replication
        replicated = replication is not None and replication.is_replicated_leader(topic, partition)
        with self._wait_slot():
            if replicated:
                assert replication is not None
                replication.check_enough_replicas(topic, partition)
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
            if replicated:
                assert replication is not None
                replication.after_leader_append(topic, partition, log)
                deadline = self._clock.monotonic() + self._timeout_ms / 1000.0
                replication.wait_for_replication(topic, partition, info.last_offset + 1, deadline, self._timeout_ms)
        if topic == OFFSETS_TOPIC and self._listener is not None:
            self._listener.transaction_completed(partition, request.producer_id, request.producer_epoch, commit=request.commit)

    def _wait_slot(self) -> AbstractContextManager[None]:
        replication = self._replica_manager.replication
        return replication.wait_slot() if replication is not None else nullcontext()
