"""The glue between data-plane requests and partition logs: produce, fetch, list offsets.

Standalone, this broker leads every partition it hosts with leader epoch 0 and is the only
replica, so an append is committed as soon as it is in the log: the high watermark moves to
the log end right after each append and the fetch purgatory is told. A partition the cluster
map gives followers is led through ``broker_nodes.replication``: the high watermark moves as
the in-sync replicas catch up, and acks=all waits for it (or fails with NOT_ENOUGH_REPLICAS
before appending when the ISR is smaller than min.insync.replicas). Work is per batch and
per partition, never per record: produce hands the received bytes to
``PartitionLog.append_as_leader`` and fetch returns the bytes ``PartitionLog.read`` gives.

Per-partition outcomes are returned as values (a result or the exception) so that one bad
partition never fails the others; only ``broker_nodes.server.errors`` turns exceptions into
Kafka error codes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker_nodes.clock import Clock
from broker_nodes.cluster_state import ClusterState
from broker_nodes.partition_waitlist import WakeSignal, wait_blocking
from broker_nodes.producer_ids import TransactionsUnsupportedError
from broker_nodes.replication import stage_trace
from broker_nodes.replication.errors import FencedLeaderEpochError, ReplicationWaitersFullError, UnknownLeaderEpochError
from broker_nodes.replication.purgatory import AcksTarget, AcksWait
from broker_nodes.server.fetch_purgatory import FetchPurgatory, LongPoll
from broker_nodes.storage.errors import LogDirectoryError, OffsetOutOfRangeError
from broker_nodes.storage.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_OFFSET
from broker_nodes.storage.log import AppendInfo, PartitionLog
from broker_nodes.storage.log_manager import LogManager
from broker_nodes.storage.transaction_index import AbortedTransaction
from broker_nodes.topic_registry import InvalidTopicError, TopicRegistry, UnknownTopicOrPartitionError, is_internal_topic_name
from log_formats.usage_records import USAGE_TOPIC

if TYPE_CHECKING:
    from broker_nodes.replication.manager import ReplicationManager

LEADER_EPOCH = 0  # standalone (and internal topics): this broker has led every partition since it was created
VALID_ACKS = (0, 1, -1)  # -1 (all) equals 1 for partitions with a single replica
ACKS_ALL = -1
DEFAULT_REQUEST_TIMEOUT_MS = 30_000  # acks=all wait when a request sets no timeout_ms (Kafka's request.timeout.ms)
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
# Internal topics that trusted callers (the internal token) may produce to: the brokers' usage
# rows. __consumer_offsets is written by the coordinator only, never through Produce.
TRUSTED_PRODUCE_TOPICS = frozenset({USAGE_TOPIC})

# Called after each partition's append (before any acks=all wait): qualified topic, partition, result.
AppendObserver = Callable[[str, int, AppendInfo], None]
# KIP-890 part 1: (qualified transactional id, entries) -> the entries (by index) that must not be
# appended, with why (set by the broker: coordinator.transactions.verification).
TransactionVerifierFunction = Callable[[str, Sequence[tuple[str, int, bytes]]], dict[int, Exception]]


class ReplicaManagerError(Exception):
    retriable = False


class InvalidRequiredAcksError(ReplicaManagerError):
    def __init__(self, acks: int) -> None:
        super().__init__(f"acks must be 0, 1 or -1 (all), not {acks}")
        self.acks = acks


class ProduceRequestTooLargeError(ReplicaManagerError):
    """The record bytes of a Produce request exceed max.request.size (MESSAGE_TOO_LARGE)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"the produce request carries {size} bytes of records, more than max.request.size {limit}")
        self.size = size
        self.limit = limit


class EmptyRecordsError(ReplicaManagerError):
    """Produce data for a partition without any record batch (INVALID_RECORD)."""

    def __init__(self, topic: str, partition: int) -> None:
        super().__init__(f"the produce data for partition {partition} of topic {topic!r} holds no record batch")
        self.topic = topic
        self.partition = partition


class InvalidListOffsetsTimestampError(ReplicaManagerError):
    """A ListOffsets timestamp below -3 (INVALID_REQUEST)."""

    def __init__(self, timestamp: int) -> None:
        super().__init__(f"timestamp {timestamp} is neither a time in ms nor -1 (latest), -2 (earliest) or -3 (max timestamp)")
        self.timestamp = timestamp


# Fetch and ListOffsets isolation levels, as Kafka numbers them: read_committed stops at the
# last stable offset and carries the aborted transactions of the range read.
READ_UNCOMMITTED = 0
READ_COMMITTED = 1


@dataclass(frozen=True, slots=True)
class FetchPartitionRequest:
    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1  # -1: not checked
    last_fetched_epoch: int = -1  # the epoch of the fetcher's last batch (Fetch v12+); -1: divergence not checked
    isolation_level: int = READ_UNCOMMITTED


@dataclass(frozen=True, slots=True)
class FetchPartitionResult:
    """What one partition answers a fetch: records (possibly empty) or an error, with the log bounds."""

    records: bytes
    high_watermark: int
    log_start_offset: int
    error: Exception | None = None
    # (epoch, end offset) where the fetcher's log diverged from this one (KIP-320): no records then.
    diverging_epoch: tuple[int, int] | None = None
    last_stable_offset: int = -1  # -1 when the partition could not be read
    # read_committed only: the aborted transactions overlapping the records returned.
    aborted_transactions: tuple[AbortedTransaction, ...] | None = None


@dataclass(frozen=True, slots=True)
class ListOffsetsResult:
    offset: int  # -1 when no record has a timestamp at or after the one asked for
    timestamp: int  # -1 unless the lookup was by timestamp
    leader_epoch: int = LEADER_EPOCH


_NO_RECORDS = b""


class AppendInProgress:
    """An append whose batches are in the logs, with what is left of its acks=all wait (a ``partition_waitlist.Pending``).

    :attr:`results` has one AppendInfo or exception per entry; once :meth:`advance` returned
    True it is the answer (a failed or timed-out wait replaces that entry's AppendInfo). Without
    an acks=all wait the first :meth:`advance` returns True. Always :meth:`release` it: that
    unregisters its waiters and gives back its acks=all wait slot.
    """

    def __init__(self, results: list[AppendInfo | Exception], wait: AcksWait | None = None, waited: Sequence[int] = (), slot: ExitStack | None = None) -> None:
        self.results = results
        self._wait = wait
        self._waited = list(waited)
        self._slot = slot
        # Made when first asked for: an append without an acks=all wait is done at its first advance() and
        # nobody waits on it, and a WakeSignal (an Event: a Condition and its lock) was 7 % of an acks=1 produce.
        self._signal = wait.signal if wait is not None else None

    @property
    def signal(self) -> WakeSignal:
        if self._signal is None:
            self._signal = WakeSignal()
        return self._signal

    def advance(self) -> bool:
        if self._wait is None:
            return True
        if not self._wait.advance():
            return False
        for index, error in zip(self._waited, self._wait.errors):
            if error is not None:
                self.results[index] = error
        return True

    def remaining_seconds(self) -> float:
        return self._wait.remaining_seconds() if self._wait is not None else 0.0

    def release(self) -> None:
        if self._wait is not None:
            self._wait.release()
        if self._slot is not None:
            self._slot.close()
            self._slot = None


def _raise_unknown_if_deleted(log: PartitionLog) -> None:
    """A log closed under a request was deleted with its topic: answer as for an unknown partition."""
    if log.closed:
        raise UnknownTopicOrPartitionError(log.topic, log.partition) from None


class ReplicaManager:
    """Produce, fetch and offset lookups over the logs of hosted partitions.

    Thread-safe. Appends to one partition are serialized by a per-partition lock held across
    the append and the high-watermark update, so the high watermark never moves backwards;
    reads take no lock (the storage engine reads a snapshot of each segment's size).
    """

    def __init__(
        self,
        registry: TopicRegistry,
        log_manager: LogManager,
        purgatory: FetchPurgatory,
        clock: Clock,
        *,
        max_request_size: int,
        cluster_state: ClusterState | None = None,
    ) -> None:
        # In managed mode the cluster map says which partitions this broker leads and with
        # which epoch; without one (or for topics outside it) the broker leads with LEADER_EPOCH.
        self._cluster_state = cluster_state
        self._registry = registry
        self._log_manager = log_manager
        self._purgatory = purgatory
        self._clock = clock
        self._max_request_size = max_request_size
        self._append_locks: dict[tuple[str, int], threading.Lock] = {}
        self._append_locks_guard = threading.Lock()
        # Set by the broker once replication is wired in; None: every partition has one replica.
        self.replication: ReplicationManager | None = None
        self.default_request_timeout_ms = DEFAULT_REQUEST_TIMEOUT_MS
        # Without a verifier a transactional produce is refused (TransactionsUnsupportedError).
        self.transaction_verifier: TransactionVerifierFunction | None = None

    # ------------------------------------------------------------------ lookups

    def partition_log(self, topic: str, partition: int) -> PartitionLog:
        """The log of a hosted partition; UnknownTopicOrPartitionError otherwise."""
        metadata = self._registry.get(topic)
        if metadata is None or not 0 <= partition < metadata.partitions:
            raise UnknownTopicOrPartitionError(topic, partition)
        log = self._log_manager.get_log(topic, partition)
        if log is None:
            raise UnknownTopicOrPartitionError(topic, partition)
        return log

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The epoch this broker leads the partition with; NotLeaderOrFollowerError when another broker leads it."""
        if self._cluster_state is None:
            return LEADER_EPOCH
        return self._cluster_state.leader_epoch(topic, partition, LEADER_EPOCH)

    # ------------------------------------------------------------------ produce

    def append_records(
        self,
        acks: int,
        entries: Sequence[tuple[str, int, bytes]],
        *,
        transactional_id: str = "",
        timeout_ms: int = 0,
        trusted: bool = False,
        on_append: AppendObserver | None = None,
    ) -> list[AppendInfo | Exception]:
        """Append each ``(topic, partition, record batches)``; one result or exception per entry.

        Blocks this thread through the acks=all wait; see :meth:`start_append_records`.
        """
        append = self.start_append_records(acks, entries, transactional_id=transactional_id, timeout_ms=timeout_ms, trusted=trusted, on_append=on_append)
        wait_blocking(append)
        return append.results

    def start_append_records(
        self,
        acks: int,
        entries: Sequence[tuple[str, int, bytes]],
        *,
        transactional_id: str = "",
        timeout_ms: int = 0,
        trusted: bool = False,
        on_append: AppendObserver | None = None,
        waits_on_thread: bool = True,
    ) -> AppendInProgress:
        """Append each ``(topic, partition, record batches)`` now; the acks=all wait is left to the caller.

        Request-wide problems (invalid acks, more bytes than max.request.size, a transactional
        request without a :attr:`transaction_verifier`) fail every entry and append nothing. A
        transactional request's (``transactional_id`` qualified) entries are first verified
        with their coordinator (KIP-890): a partition not in the producer's ongoing
        transaction gets the verifier's error and nothing appended. With acks=all, replicated partitions are
        answered once their in-sync replicas have the batch, or with REQUEST_TIMED_OUT after
        ``timeout_ms`` (0 or less: the broker's request.timeout.ms); all partitions are
        appended first and then waited for together, by driving the returned
        :class:`AppendInProgress` (a ``Pending``). Internal topics are refused, except
        :data:`TRUSTED_PRODUCE_TOPICS` for a ``trusted`` caller. ``on_append`` sees every
        append that succeeded (duplicates included), even when the acks=all wait then fails.
        An acks=all request whose wait will hold a request thread (``waits_on_thread``, a gRPC
        call) first takes one of the replication's wait slots, which keep request threads free
        for the followers' fetches; one whose wait holds no thread (the Kafka listener parks it
        on its loop, bounded by its connections and their in-flight requests) takes none.
        """
        request_error: Exception | None = None
        if transactional_id and self.transaction_verifier is None:
            request_error = TransactionsUnsupportedError(transactional_id)
        elif acks not in VALID_ACKS:
            request_error = InvalidRequiredAcksError(acks)
        else:
            size = sum(len(records) for _, _, records in entries)
            if size > self._max_request_size:
                request_error = ProduceRequestTooLargeError(size, self._max_request_size)
        if request_error is not None:
            return AppendInProgress([request_error] * len(entries))
        refused = self.transaction_verifier(transactional_id, entries) if transactional_id and self.transaction_verifier is not None else {}
        replication = self.replication
        slot = ExitStack()  # an acks=all wait slot, held until the wait ends (released with the AppendInProgress)
        if acks == ACKS_ALL and replication is not None and waits_on_thread:
            try:
                slot.enter_context(replication.wait_slot())
            except ReplicationWaitersFullError as error:  # no wait slot: nothing was appended
                return AppendInProgress([error] * len(entries))
        try:
            return self._append_entries(acks, entries, timeout_ms, trusted, on_append, slot, refused)
        except BaseException:
            slot.close()
            raise

    def _append_entries(
        self,
        acks: int,
        entries: Sequence[tuple[str, int, bytes]],
        timeout_ms: int,
        trusted: bool,
        on_append: AppendObserver | None,
        slot: ExitStack,
        refused: dict[int, Exception],
    ) -> AppendInProgress:
        results: list[AppendInfo | Exception] = []
        replication = self.replication
        # Whether each partition was led replicated when its batch was appended, taken before the
        # append: a leadership that moves away between the append and the wait must fail the wait
        # (NOT_LEADER_OR_FOLLOWER, retried at the new leader), never skip it and answer success
        # for a batch no follower may have.
        replicated_when_appended: list[bool] = []
        for index, (topic, partition, records) in enumerate(entries):
            replicated_when_appended.append(replication is not None and replication.is_replicated_leader(topic, partition))
            if index in refused:  # a transactional batch its coordinator did not verify
                results.append(refused[index])
                continue
            try:
                if is_internal_topic_name(topic) and not (trusted and topic in TRUSTED_PRODUCE_TOPICS):
                    # Internal topics hold the brokers' own records (committed offsets); a
                    # client's bytes there could corrupt what the broker reloads at startup.
                    raise InvalidTopicError(topic, "internal topics are written only by the broker")
                info = self.append_to_partition(topic, partition, records, acks=acks)
            except Exception as error:  # every failure is this partition's answer, mapped by server.errors
                results.append(error)
                continue
            results.append(info)
            if on_append is not None:
                on_append(topic, partition, info)
        if acks != ACKS_ALL or replication is None:
            return AppendInProgress(results, slot=slot)
        wait_ms = timeout_ms if timeout_ms > 0 else self.default_request_timeout_ms
        waited: list[int] = []
        targets: list[AcksTarget] = []
        for index, ((topic, partition, _), result) in enumerate(zip(entries, results)):
            if isinstance(result, AppendInfo) and (replicated_when_appended[index] or replication.is_replicated_leader(topic, partition)):
                waited.append(index)
                targets.append(replication.acks_target(topic, partition, result.last_offset + 1, wait_ms))
        if not targets:
            return AppendInProgress(results, slot=slot)
        wait = replication.acks.wait(targets, self._clock.monotonic() + wait_ms / 1000.0, self._clock.monotonic)
        return AppendInProgress(results, wait, waited, slot)

    def append_to_partition(self, topic: str, partition: int, records: bytes, *, acks: int = 1) -> AppendInfo:
        """Append record batches as leader, advance the high watermark and wake waiting fetches.

        For a replicated partition the high watermark moves only as the in-sync replicas
        catch up, and acks=all is refused (NotEnoughReplicasError, nothing appended) while the
        ISR is smaller than min.insync.replicas.
        """
        if not records:
            raise EmptyRecordsError(topic, partition)
        leader_epoch = self.leader_epoch(topic, partition)
        log = self.partition_log(topic, partition)
        replication = self.replication
        replicated = replication is not None and replication.is_replicated_leader(topic, partition)
        with self._append_lock(topic, partition):
            if replicated and acks == ACKS_ALL:
                assert replication is not None
                replication.check_enough_replicas(topic, partition)
            try:
                info = log.append_as_leader(records, leader_epoch)
            except LogDirectoryError:
                _raise_unknown_if_deleted(log)
                raise
            if info.duplicate:
                return info
            if not replicated:
                log.update_high_watermark(log.log_end_offset)
        if stage_trace.ENABLED:
            stage_trace.stamp(stage_trace.APPEND, topic, partition, info.first_offset)
        # Wakes followers' long polls; consumers parked here re-read and see only what is below the high watermark.
        self._purgatory.notify_append(topic, partition, info.size_bytes)
        if replicated:
            assert replication is not None
            replication.after_leader_append(topic, partition, log)
        return info

    def _append_lock(self, topic: str, partition: int) -> threading.Lock:
        key = (topic, partition)
        lock = self._append_locks.get(key)
        if lock is None:
            with self._append_locks_guard:
                lock = self._append_locks.setdefault(key, threading.Lock())
        return lock

    def forget_partition(self, topic: str, partition: int) -> None:
        """Drop per-partition state of a deleted partition and wake fetches waiting on it."""
        with self._append_locks_guard:
            self._append_locks.pop((topic, partition), None)
        self._purgatory.wake_partition(topic, partition)

    # ------------------------------------------------------------------ fetch

    def fetch(self, requests: Sequence[FetchPartitionRequest], *, max_wait_ms: int, min_bytes: int, max_bytes: int) -> list[FetchPartitionResult]:
        """Read every partition; wait up to ``max_wait_ms`` until ``min_bytes`` are available, blocking this thread.

        Returns at once when enough bytes are there, when any partition has an error, or when
        ``max_wait_ms`` is 0. Otherwise parks in the fetch purgatory (appends wake it) and
        reads again after each wake-up, until enough bytes arrived or the deadline passed.
        """
        poll = self.start_fetch(requests, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes, holds_thread=True)
        wait_blocking(poll)
        assert poll.results is not None
        return poll.results

    def start_fetch(
        self, requests: Sequence[FetchPartitionRequest], *, max_wait_ms: int, min_bytes: int, max_bytes: int, holds_thread: bool
    ) -> LongPoll[list[FetchPartitionResult]]:
        """The long poll :meth:`fetch` runs, not yet started: its owner drives it (see ``fetch_purgatory.LongPoll``).

        ``holds_thread``: whether the owner blocks a thread while it waits (the fetch purgatory caps those apart).
        """
        return self._purgatory.start_long_poll(
            ((request.topic, request.partition) for request in requests),
            lambda: self._read_partitions(requests, max_bytes),
            min_bytes=min_bytes,
            max_wait_ms=max_wait_ms,
            monotonic=self._clock.monotonic,
            holds_thread=holds_thread,
        )

    def _read_partitions(self, requests: Sequence[FetchPartitionRequest], max_bytes: int) -> tuple[list[FetchPartitionResult], int, bool]:
        results: list[FetchPartitionResult] = []
        total = 0
        failed = False
        for request in requests:
            result = self._read_partition(request, max_bytes - total, first_data=total == 0)
            if result.error is not None or result.diverging_epoch is not None:
                failed = True  # answered at once: the fetcher must truncate before anything arrives (Kafka's DelayedFetch case H)
            total += len(result.records)
            results.append(result)
        return results, total, failed

    def _read_partition(self, request: FetchPartitionRequest, remaining_bytes: int, *, first_data: bool) -> FetchPartitionResult:
        log: PartitionLog | None = None
        try:
            leader_epoch = self.leader_epoch(request.topic, request.partition)
            log = self.partition_log(request.topic, request.partition)
            self._check_leader_epoch(request.current_leader_epoch, leader_epoch)
            if request.last_fetched_epoch >= 0:
                diverging = self._diverging_epoch(log, request.fetch_offset, request.last_fetched_epoch)
                if diverging is not None:
                    return FetchPartitionResult(_NO_RECORDS, log.high_watermark, log.log_start_offset, diverging_epoch=diverging)
            limit = min(request.max_bytes, remaining_bytes)
            if limit <= 0 and not first_data:
                # The response is full; the partition is still answered, with its bounds, as Kafka does.
                return FetchPartitionResult(_NO_RECORDS, log.high_watermark, log.log_start_offset, last_stable_offset=log.last_stable_offset)
            # KIP-74: the first batch of the response comes whole even if larger than the limits,
            # so a consumer can always make progress.
            try:
                info = log.read(request.fetch_offset, max(limit, 0), min_one_batch=first_data, read_committed=request.isolation_level == READ_COMMITTED)
            except LogDirectoryError:
                _raise_unknown_if_deleted(log)
                raise
            return FetchPartitionResult(
                info.records,
                info.high_watermark,
                info.log_start_offset,
                last_stable_offset=info.last_stable_offset,
                aborted_transactions=info.aborted_transactions,
            )
        except OffsetOutOfRangeError as error:
            assert log is not None
            return FetchPartitionResult(_NO_RECORDS, log.high_watermark, log.log_start_offset, error, last_stable_offset=log.last_stable_offset)
        except Exception as error:  # this partition's answer, mapped by server.errors
            return FetchPartitionResult(_NO_RECORDS, -1, -1, error)

    @staticmethod
    def _diverging_epoch(log: PartitionLog, fetch_offset: int, last_fetched_epoch: int) -> tuple[int, int] | None:
        """Kafka's check of a fetch that names its last fetched epoch (Partition.readRecords).

        OffsetOutOfRangeError when this log knows no epoch at or below it, or when the fetch
        offset is below the log start (whether or not the logs diverge).
        """
        log_start, log_end = log.log_start_offset, log.log_end_offset
        diverging = log.leader_epoch_cache.divergence(last_fetched_epoch, fetch_offset, log_end)
        if diverging == (UNDEFINED_EPOCH, UNDEFINED_OFFSET) or fetch_offset < log_start:
            raise OffsetOutOfRangeError(fetch_offset, log_start, log_end)
        return diverging

    @staticmethod
    def _check_leader_epoch(request_epoch: int, current_epoch: int) -> None:
        if request_epoch < 0:
            return
        if request_epoch < current_epoch:
            raise FencedLeaderEpochError(request_epoch, current_epoch)
        if request_epoch > current_epoch:
            raise UnknownLeaderEpochError(request_epoch, current_epoch)

    # ------------------------------------------------------------------ leader epochs

    def offset_for_leader_epoch(self, topic: str, partition: int, current_leader_epoch: int, leader_epoch: int) -> tuple[int, int]:
        """(largest epoch <= ``leader_epoch`` in this leader's log, the offset where it ended): a consumer's KIP-320 check.

        ``current_leader_epoch`` (-1: not checked) is fenced or unknown exactly as in Fetch.
        """
        current = self.leader_epoch(topic, partition)
        log = self.partition_log(topic, partition)
        self._check_leader_epoch(current_leader_epoch, current)
        return log.leader_epoch_cache.end_offset_for(leader_epoch, log.log_end_offset)

    # ------------------------------------------------------------------ list offsets

    def list_offset(
        self, topic: str, partition: int, timestamp: int, current_leader_epoch: int = -1, isolation_level: int = READ_UNCOMMITTED
    ) -> ListOffsetsResult:
        """The offset for a ListOffsets timestamp: -2 earliest, -1 latest (the high watermark, or
        the last stable offset at read_committed), -3 the record with the largest timestamp, else
        the first offset with a timestamp >= it.

        ``current_leader_epoch`` (-1: not checked) is fenced or unknown exactly as in Fetch (KIP-320).
        """
        leader_epoch = self.leader_epoch(topic, partition)
        log = self.partition_log(topic, partition)
        self._check_leader_epoch(current_leader_epoch, leader_epoch)
        if timestamp == LATEST_TIMESTAMP:
            latest = log.last_stable_offset if isolation_level == READ_COMMITTED else log.high_watermark
            return ListOffsetsResult(latest, -1, leader_epoch)
        if timestamp == EARLIEST_TIMESTAMP:
            return ListOffsetsResult(log.log_start_offset, -1, leader_epoch)
        if timestamp < MAX_TIMESTAMP:
            raise InvalidListOffsetsTimestampError(timestamp)
        found = log.offset_for_timestamp(timestamp)
        if found is None:
            return ListOffsetsResult(-1, -1, leader_epoch)
        offset, found_timestamp = found
        return ListOffsetsResult(offset, found_timestamp, leader_epoch)
