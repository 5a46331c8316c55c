"""Replication of one broker's partitions: leader-side state, follower fetchers, acks=all.

The cluster map (``ApplyPartitions``) says, for every partition, its replicas, its leader and
the leader epoch. For each partition with more than one replica that this broker hosts:

- as leader, an :class:`IsrTracker` per leader epoch follows the followers' fetches, the
  high watermark moves to what every in-sync replica holds, and acks=all produces wait in the
  :class:`AcksPurgatory` until it covers their batch;
- as follower, the partition is handed to the :class:`ReplicaFetcher` of its leader.

Becoming leader records the new epoch in the leader-epoch cache at the log end (so that
followers asking ``OffsetForLeaderEpoch`` for an older epoch learn where it ended here), and
the partition's fetcher lets go of it first. A snapshot whose leader epoch is older than the
latest epoch in the partition's log is ignored for that partition. Partitions with a single
replica (and standalone brokers) are left alone: their high watermark follows the log end.

Thread-safety: the maps are swapped under one lock; request threads read them without it
(a dictionary read is atomic); trackers and the purgatory have their own locks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from broker_nodes.clock import Clock
from broker_nodes.cluster_state import ClusterSnapshot, NotLeaderOrFollowerError, PartitionAssignment
from broker_nodes.partition_waitlist import wait_blocking
from broker_nodes.replication import stage_trace
from broker_nodes.replication.errors import (
    FencedLeaderEpochError,
    LowWatermarkTimedOutError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    ReplicationTimedOutError,
    ReplicationWaitersFullError,
    UnknownLeaderEpochError,
)
from broker_nodes.replication.fetch_sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    NO_SESSION,
    FetchSession,
    FetchSessionCache,
    PartitionState,
    SessionPartition,
)
from broker_nodes.replication.follower import FetcherSettings, ReplicaFetcher
from broker_nodes.replication.follower_wakes import FollowerFetchWake, high_watermark_moves
from broker_nodes.replication.high_watermark import advance_high_watermark
from broker_nodes.replication.isr import IsrChangeCallback, IsrChangeCounts, IsrTracker
from broker_nodes.replication.low_watermark_purgatory import LowWatermarkPurgatory
from broker_nodes.replication.purgatory import AcksPurgatory, AcksTarget
from broker_nodes.server.fetch_purgatory import FetchPurgatory
from broker_nodes.storage.errors import OffsetOutOfRangeError
from broker_nodes.storage.log import PartitionLog
from broker_nodes.storage.log_manager import LogManager

logger = logging.getLogger(__name__)

PartitionKey = tuple[str, int]
NO_RECORDS = b""
# Fetch sessions kept per leader broker (one per follower: a cluster's brokers fit many times),
# and how long a session outlives its follower's last fetch.
MAX_FETCH_SESSIONS = 1000
FETCH_SESSION_IDLE_TIMEOUT_SECONDS = 120.0


# How long a follower's incremental fetch with nothing to tell but a high watermark move waits for
# more before it answers: records appended meanwhile and other partitions' moves go in the same
# answer. An answer the follower is fetching again after cannot carry the next records until that
# new fetch arrives, so answering a move alone puts a round trip in front of the next
# acknowledgement whenever the next append comes in that window. Sequential acks=all writers (a
# transactional producer's AddPartitionsToTxn, produce, EndTxn and markers) append to a partition
# every 5-20 ms: the linger is longer, so their moves ride with their next records; a quiet
# partition's followers still learn its high watermark within it (Kafka's wait for the next
# records or the long poll's end).
HIGH_WATERMARK_LINGER_MS = 50
# A partition a follower's fetch does not name and that has nothing new for it is not read; its
# caught-up time is still recorded, at most this often (far below any replica.lag.time.max.ms),
# so that a read of a session's many quiet partitions costs little more than looking at them.
UNCHANGED_RECORD_INTERVAL_MS = 100


@dataclass(frozen=True, slots=True)
class ReplicationSettings:
    replica_lag_time_max_ms: int  # replica.lag.time.max.ms
    fetcher: FetcherSettings
    high_watermark_linger_ms: int = HIGH_WATERMARK_LINGER_MS


@dataclass(frozen=True, slots=True)
class ReplicaFetchPartitionRequest:
    topic: str
    partition: int
    fetch_offset: int
    current_leader_epoch: int
    log_start_offset: int = -1  # the follower's; -1: not reported


@dataclass(frozen=True, slots=True)
class ReplicaFetchPartitionResult:
    topic: str
    partition: int
    records: bytes = NO_RECORDS
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    error: Exception | None = None


@dataclass(frozen=True, slots=True)
class SessionRead:
    """One read of a session's partitions: the answers, and whether any is more than a high watermark move."""

    partitions: list[ReplicaFetchPartitionResult]
    urgent: bool  # records, an error or a log start offset to tell (or a newer fetch took over): answer now
    high_watermark_moved: bool  # some partition's only news is its high watermark


@dataclass(frozen=True, slots=True)
class ReplicaFetchAnswer:
    """A session fetch's answer: the session's id (NO_SESSION: none) and the partitions with something to say."""

    session_id: int
    partitions: list[ReplicaFetchPartitionResult]


def _check_leader_epoch(request_epoch: int, current_epoch: int) -> None:
    if request_epoch < current_epoch:
        raise FencedLeaderEpochError(request_epoch, current_epoch)
    if request_epoch > current_epoch:
        raise UnknownLeaderEpochError(request_epoch, current_epoch)


def _default_isr_change(topic: str, partition: int, isr: tuple[int, ...], leader_epoch: int) -> None:
    logger.info("partition %d of %s: ISR is now %s (leader epoch %d)", partition, topic, list(isr), leader_epoch)


class ReplicationManager:
    """See the module docstring. Construct, :meth:`apply` each cluster map, :meth:`shutdown` at the end."""

    def __init__(
        self,
        node_id: int,
        *,
        log_manager: LogManager,
        fetch_purgatory: FetchPurgatory,
        clock: Clock,
        internal_token: str,
        settings: ReplicationSettings,
        min_insync_replicas: Callable[[str], int],
        on_isr_change: IsrChangeCallback = _default_isr_change,
        confirm_isr_changes: bool = False,
        max_waiters: int = 0,
    ) -> None:
        """``confirm_isr_changes``: ISR changes are proposals that ``on_isr_change`` sends to the
        controller and :meth:`isr_change_answered` completes (see ``isr``); False: they apply at once."""
        self.node_id = node_id
        self._log_manager = log_manager
        self._fetch_purgatory = fetch_purgatory
        self._clock = clock
        self._internal_token = internal_token
        self._settings = settings
        self._min_insync_replicas = min_insync_replicas
        self._on_isr_change = on_isr_change
        self._confirm_isr_changes = confirm_isr_changes
        # acks=all waits hold request threads; at most this many at once (0: no limit), so that
        # threads stay free for the followers' fetches they wait for (see wait_slot).
        self.max_waiters = max_waiters
        self._wait_slots = threading.BoundedSemaphore(max_waiters) if max_waiters > 0 else None
        self.acks = AcksPurgatory()
        self.deletions = LowWatermarkPurgatory()  # DeleteRecords waiting for the ISR's log start offsets
        self._lock = threading.Lock()
        self._leaders: dict[PartitionKey, IsrTracker] = {}
        self.isr_changes = IsrChangeCounts()  # shrinks and expansions of every ISR led here (metrics)
        self._followed: dict[PartitionKey, tuple[int, str]] = {}  # -> (leader id, address) of its fetcher
        self._fetchers: dict[tuple[int, str], ReplicaFetcher] = {}
        self.fetch_sessions = FetchSessionCache(
            max_sessions=MAX_FETCH_SESSIONS, idle_timeout_seconds=FETCH_SESSION_IDLE_TIMEOUT_SECONDS, monotonic=clock.monotonic
        )

    # ------------------------------------------------------------------ the cluster map

    def apply(self, snapshot: ClusterSnapshot) -> None:
        """Lead, follow or let go of every replicated partition as ``snapshot`` says."""
        addresses = {broker.node_id: f"{broker.host}:{broker.port}" for broker in snapshot.brokers}
        lead, follow, single_replica = self._roles(snapshot, addresses)
        with self._lock:
            self._stop_following_locked(follow, addresses)
            self._stop_leading_locked(lead)
            for key, assignment in lead.items():
                self._become_leader(key, assignment)
            changed: dict[int, ReplicaFetcher] = {}
            for key, assignment in follow.items():
                fetcher = self._become_follower(key, assignment, addresses[assignment.leader_id])
                if fetcher is not None:
                    changed[id(fetcher)] = fetcher
            # One interruption per fetcher and map (it reopens the fetcher's channel), not one per partition.
            for fetcher in changed.values():
                fetcher.interrupt()
            self._stop_idle_fetchers_locked()
        self._advance_single_replicas(single_replica)

    def _roles(
        self, snapshot: ClusterSnapshot, addresses: Mapping[int, str]
    ) -> tuple[dict[PartitionKey, PartitionAssignment], dict[PartitionKey, PartitionAssignment], list[PartitionKey]]:
        """This broker's replicas in ``snapshot``: (led, followed from a leader with a known address, single-replica)."""
        lead: dict[PartitionKey, PartitionAssignment] = {}
        follow: dict[PartitionKey, PartitionAssignment] = {}
        single_replica: list[PartitionKey] = []
        for qualified, topic in snapshot.topics.items():
            for assignment in topic.partitions:
                key = (qualified, assignment.partition)
                if self.node_id not in assignment.replicas:
                    continue
                if len(assignment.replicas) < 2:
                    single_replica.append(key)
                elif assignment.leader_id == self.node_id:
                    lead[key] = assignment
                elif assignment.leader_id in addresses:
                    follow[key] = assignment
        return lead, follow, single_replica

    def _stop_following_locked(self, follow: Mapping[PartitionKey, PartitionAssignment], addresses: Mapping[int, str]) -> None:
        """Take each followed partition off its fetcher unless ``follow`` keeps it on the same leader at the same address."""
        for key, (leader_id, address) in list(self._followed.items()):
            wanted = follow.get(key)
            if wanted is None or wanted.leader_id != leader_id or addresses[wanted.leader_id] != address:
                # Returns only once the fetcher's last write to this log is done.
                self._fetchers[(leader_id, address)].remove_partition(*key)
                del self._followed[key]

    def _stop_leading_locked(self, lead: Mapping[PartitionKey, PartitionAssignment]) -> None:
        """Give up the leadership of partitions ``lead`` no longer names; their acks=all waiters wake to answer."""
        for key in [key for key in self._leaders if key not in lead]:
            del self._leaders[key]
            self.acks.wake_partition(*key)
            self.deletions.wake_partition(*key)

    def _stop_idle_fetchers_locked(self) -> None:
        for fetcher_key, fetcher in list(self._fetchers.items()):
            if not fetcher.partition_keys:
                fetcher.stop()
                del self._fetchers[fetcher_key]

    def _advance_single_replicas(self, keys: list[PartitionKey]) -> None:
        """A partition with one replica has no follower to wait for: its high watermark follows its log end."""
        for key in keys:
            log = self._log(*key)
            if log is not None and not log.auto_advance_high_watermark:
                log.auto_advance_high_watermark = True
                log.update_high_watermark(log.log_end_offset)

    def _become_leader(self, key: PartitionKey, assignment: PartitionAssignment) -> None:
        current = self._leaders.get(key)
        if current is not None and current.leader_epoch == assignment.leader_epoch:
            return  # the same leadership: the ISR kept here is newer than the map's
        log = self._log(*key)
        if log is None or self._is_stale(key, log, assignment):
            return
        log.auto_advance_high_watermark = False
        log.leader_epoch_cache.assign(assignment.leader_epoch, log.log_end_offset)
        tracker = IsrTracker(
            key[0],
            key[1],
            leader_id=self.node_id,
            leader_epoch=assignment.leader_epoch,
            leader_epoch_start_offset=log.log_end_offset,
            replicas=assignment.replicas,
            isr=assignment.isr,
            now_ms=self._clock.milliseconds(),
            confirm_changes=self._confirm_isr_changes,
            change_counts=self.isr_changes,
        )
        self._leaders[key] = tracker
        logger.info("partition %d of %s: leader with epoch %d, ISR %s", key[1], key[0], assignment.leader_epoch, list(tracker.isr))
        self._advance(key, tracker, log)

    def _become_follower(self, key: PartitionKey, assignment: PartitionAssignment, address: str) -> ReplicaFetcher | None:
        """Hand the partition to its leader's fetcher; that fetcher when this changed what it follows (to be interrupted)."""
        log = self._log(*key)
        if log is None or self._is_stale(key, log, assignment):
            return None
        log.auto_advance_high_watermark = False
        fetcher_key = (assignment.leader_id, address)
        fetcher = self._fetchers.get(fetcher_key)
        if fetcher is None:
            fetcher = ReplicaFetcher(
                self.node_id, assignment.leader_id, address, internal_token=self._internal_token, logs=self._log, settings=self._settings.fetcher
            )
            fetcher.start()
            self._fetchers[fetcher_key] = fetcher
        self._followed[key] = fetcher_key
        return fetcher if fetcher.add_partition(key[0], key[1], assignment.leader_epoch, interrupt=False) else None

    @staticmethod
    def _is_stale(key: PartitionKey, log: PartitionLog, assignment: PartitionAssignment) -> bool:
        latest = log.leader_epoch_cache.latest_epoch
        if assignment.leader_epoch < latest:
            logger.warning("partition %d of %s: ignoring leader epoch %d, older than epoch %d in the log", key[1], key[0], assignment.leader_epoch, latest)
            return True
        return False

    def _log(self, topic: str, partition: int) -> PartitionLog | None:
        return self._log_manager.get_log(topic, partition)

    # ------------------------------------------------------------------ queries

    def is_replicated_leader(self, topic: str, partition: int) -> bool:
        return (topic, partition) in self._leaders

    def isr(self, topic: str, partition: int) -> tuple[int, ...] | None:
        """The ISR this broker keeps as leader of the partition; None when it does not lead it replicated."""
        tracker = self._leaders.get((topic, partition))
        return tracker.isr if tracker is not None else None

    def leader_trackers(self) -> list[IsrTracker]:
        """The ISR trackers of every replicated partition led here, at this moment (for metrics)."""
        return list(self._leaders.values())

    def min_insync_replicas(self, topic: str) -> int:
        """The topic's effective ``min.insync.replicas``."""
        return self._min_insync_replicas(topic)

    def fetcher_count(self) -> int:
        return len(self._fetchers)

    # ------------------------------------------------------------------ produce (leader)

    def check_enough_replicas(self, topic: str, partition: int) -> None:
        """acks=all: NotEnoughReplicasError when the ISR is smaller than min.insync.replicas (before appending)."""
        tracker = self._leaders.get((topic, partition))
        if tracker is None:
            return
        required = self._min_insync_replicas(topic)
        if len(tracker.isr) < required:
            raise NotEnoughReplicasError(topic, partition, len(tracker.isr), required)

    def after_leader_append(self, topic: str, partition: int, log: PartitionLog) -> None:
        """A leader append: with no follower in the ISR the high watermark moves at once."""
        tracker = self._leaders.get((topic, partition))
        if tracker is not None:
            self._advance((topic, partition), tracker, log)

    @contextmanager
    def wait_slot(self) -> Iterator[None]:
        """Hold one of the ``max_waiters`` slots for an append followed by an acks=all wait.

        Taken before appending, without blocking: ReplicationWaitersFullError (nothing appended)
        when every slot is taken.
        """
        slots = self._wait_slots
        if slots is None:
            yield
            return
        if not slots.acquire(blocking=False):
            raise ReplicationWaitersFullError(self.max_waiters)
        try:
            yield
        finally:
            slots.release()

    def wait_for_replication(self, topic: str, partition: int, required_offset: int, deadline: float, timeout_ms: int) -> None:
        """Block this request's thread until the high watermark reaches ``required_offset``.

        ``deadline`` is on the injected clock's monotonic scale. Raises what :meth:`acks_target`
        names: ReplicationTimedOutError at the deadline, NotLeaderOrFollowerError when leadership
        moved away meanwhile, NotEnoughReplicasAfterAppendError when the ISR is below min.insync.replicas.
        """
        wait = self.acks.wait([self.acks_target(topic, partition, required_offset, timeout_ms)], deadline, self._clock.monotonic)
        wait_blocking(wait)
        if wait.errors[0] is not None:
            raise wait.errors[0]

    def acks_target(self, topic: str, partition: int, required_offset: int, timeout_ms: int) -> AcksTarget:
        """What an acks=all produce waits for on one partition: the high watermark at ``required_offset``.

        Its check raises NotLeaderOrFollowerError when this broker no longer leads the partition
        replicated (or the purgatory closed) and NotEnoughReplicasAfterAppendError when the ISR
        that has the batch is below min.insync.replicas; at the deadline ReplicationTimedOutError.
        """
        key = (topic, partition)
        log = self._log(topic, partition)

        def check() -> bool:
            tracker = self._leaders.get(key)
            if log is None or tracker is None or self.acks.closed:
                raise NotLeaderOrFollowerError(topic, partition, -1)
            if log.high_watermark < required_offset:
                return False
            required = self._min_insync_replicas(topic)
            if len(tracker.isr) < required:
                raise NotEnoughReplicasAfterAppendError(topic, partition, len(tracker.isr), required)
            if stage_trace.ENABLED:
                stage_trace.stamp(stage_trace.ACKS_DONE, topic, partition, required_offset)
            return True

        def timed_out() -> Exception:
            return ReplicationTimedOutError(topic, partition, required_offset, log.high_watermark if log is not None else -1, timeout_ms)

        return AcksTarget(key, required_offset, check, timed_out)

    # ------------------------------------------------------------------ DeleteRecords (leader)

    def low_watermark(self, topic: str, partition: int) -> int:
        """The smallest log start offset of the in-sync replicas; NotLeaderOrFollowerError unless led here replicated."""
        tracker = self._leaders.get((topic, partition))
        log = self._log(topic, partition)
        if tracker is None or log is None:
            raise NotLeaderOrFollowerError(topic, partition, -1)
        return tracker.low_watermark(log.log_start_offset)

    def wait_for_low_watermark(self, topic: str, partition: int, required_offset: int, deadline: float, timeout_ms: int) -> int:
        """Block this request's thread until every in-sync replica's log start reached ``required_offset``; the low watermark then.

        Kafka's DelayedDeleteRecords. ``deadline`` is on the injected clock's monotonic scale.
        Raises LowWatermarkTimedOutError at the deadline and NotLeaderOrFollowerError when
        leadership moved away meanwhile (or the broker is shutting down).
        """
        key = (topic, partition)
        waiter = self.deletions.park(key, required_offset)
        try:
            while True:
                waiter.rearm()
                if self.deletions.closed:
                    raise NotLeaderOrFollowerError(topic, partition, -1)
                low_watermark = self.low_watermark(topic, partition)
                if low_watermark >= required_offset:
                    return low_watermark
                remaining = deadline - self._clock.monotonic()
                if remaining <= 0:
                    raise LowWatermarkTimedOutError(topic, partition, required_offset, low_watermark, timeout_ms)
                waiter.wait(remaining)
        finally:
            self.deletions.release(waiter)

    # ------------------------------------------------------------------ replica fetch (leader)

    def replica_fetch(
        self, replica_id: int, requests: Sequence[ReplicaFetchPartitionRequest], *, max_wait_ms: int, min_bytes: int, max_bytes: int
    ) -> list[ReplicaFetchPartitionResult]:
        """Answer a follower's fetch: a long poll like a consumer's, reading up to the log end.

        Each read records the follower's fetch offset (its log end), which may add it to the
        ISR and move the high watermark.
        """
        return self._fetch_purgatory.long_poll(
            ((request.topic, request.partition) for request in requests),
            lambda: self._read_for_follower(replica_id, requests, max_bytes),
            min_bytes=min_bytes,
            max_wait_ms=max_wait_ms,
            monotonic=self._clock.monotonic,
        )

    def replica_fetch_in_session(
        self,
        replica_id: int,
        requests: Sequence[ReplicaFetchPartitionRequest],
        *,
        session_id: int,
        session_epoch: int,
        forgotten: Sequence[PartitionKey] = (),
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
    ) -> ReplicaFetchAnswer:
        """A follower's fetch within a fetch session (see ``fetch_sessions``).

        Raises FetchSessionIdNotFoundError / InvalidFetchSessionEpochError for an incremental
        fetch the cache refuses. The long poll parks on every partition of the session; an
        incremental fetch ends as soon as any of them has records, a log start offset the
        follower was not told or an error. A high watermark move alone (the follower's own fetch
        moved it, or another follower's) ends it after at most ``high_watermark_linger_ms``, so
        that the records that usually follow and other partitions' moves go in the same answer
        (see HIGH_WATERMARK_LINGER_MS). A full fetch waits for records like a fetch without a
        session. What the follower was told is recorded for the answer actually sent.
        """
        named = [(request.topic, request.partition) for request in requests]
        if stage_trace.ENABLED:
            for request in requests:
                stage_trace.stamp(stage_trace.FETCH_ARRIVED, request.topic, request.partition, request.fetch_offset, replica_id)
        states = [PartitionState(request.fetch_offset, request.current_leader_epoch, request.log_start_offset) for request in requests]
        if session_epoch == FINAL_EPOCH:
            if session_id != NO_SESSION:
                self.fetch_sessions.close(replica_id, session_id)
            return ReplicaFetchAnswer(NO_SESSION, self.replica_fetch(replica_id, requests, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes))
        full = session_id == NO_SESSION or session_epoch == INITIAL_EPOCH
        if full:
            session, generation = self.fetch_sessions.open(replica_id), 1
        else:
            session, generation = self.fetch_sessions.resume(replica_id, session_id, session_epoch)
        session.update(zip(named, states, strict=True), forgotten)
        read = self._session_long_poll(replica_id, session, generation, full=full, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes)
        if session.is_current(generation):
            for result in read.partitions:
                sent = session.partitions.get((result.topic, result.partition))
                if sent is not None and result.error is None:
                    sent.sent_high_watermark = result.high_watermark
                    sent.sent_log_start_offset = result.log_start_offset
                    if stage_trace.ENABLED and result.records:
                        stage_trace.stamp(stage_trace.ANSWER_RETURNED, result.topic, result.partition, sent.fetch_offset, replica_id)
        return ReplicaFetchAnswer(session.session_id, read.partitions)

    def _session_long_poll(
        self, replica_id: int, session: FetchSession, generation: int, *, full: bool, max_wait_ms: int, min_bytes: int, max_bytes: int
    ) -> SessionRead:
        """One session fetch's long poll, the high watermark linger included (see :meth:`replica_fetch_in_session`).

        One waiter for the whole fetch: when a read finds only high watermark moves, the fetch
        keeps its waiter parked and waits at most the linger more, instead of starting a new
        long poll (which would read every partition again before parking and once after).
        """
        deadline = self._clock.monotonic() + max(max_wait_ms, 0) / 1000.0
        linger_ms = self._settings.high_watermark_linger_ms
        # A full fetch answers no move alone; an incremental one stops at the first move, then
        # lingers (unless the linger is 0: the move is answered at once).
        lingering = full

        def read() -> tuple[SessionRead, int, bool]:
            return self._read_session(replica_id, session, generation, max_bytes, full, stop_at_high_watermark_move=not lingering)

        poll = self._fetch_purgatory.start_long_poll(
            tuple(session.partitions), read, min_bytes=min_bytes, max_wait_ms=max_wait_ms, monotonic=self._clock.monotonic, holds_thread=True
        )
        # Woken at once by records and errors, by a high watermark move only once it waited out the linger (see follower_wakes).
        wake = FollowerFetchWake(linger_ms / 1000.0, lingering=lingering)
        answer_moves = False  # the move waited out its linger while parked: answer it without lingering again
        try:
            done = poll.advance()
            while True:
                if done:
                    result = poll.results
                    assert result is not None
                    if lingering or answer_moves or result.urgent or not result.high_watermark_moved or linger_ms <= 0:
                        return result
                    # Only high watermark moves so far: linger for records and further moves, within the deadline.
                    lingering = wake.lingering = True
                    remaining_ms = max(int((deadline - self._clock.monotonic()) * 1000.0), 0)
                    if poll.wait_longer(min(linger_ms, remaining_ms)):
                        continue
                answer_moves = wake.wait(poll.signal, poll.remaining_seconds)
                if stage_trace.ENABLED:
                    stage_trace.stamp(stage_trace.FETCH_WOKE, "", -1, -1, replica_id)
                done = poll.advance()
        finally:
            poll.release()

    def _read_session(
        self, replica_id: int, session: FetchSession, generation: int, max_bytes: int, full: bool, stop_at_high_watermark_move: bool
    ) -> tuple[SessionRead, int, bool]:
        """One read of a session's partitions: (what to answer, its record bytes, whether to answer now).

        Changes nothing the follower was told (the caller records that for the answer it sends),
        so a read that is not answered is simply read again.
        """
        if not session.is_current(generation):
            return SessionRead([], urgent=True, high_watermark_moved=False), 0, True  # a newer fetch of this session took over: answer empty
        results = []
        total = 0
        urgent = False
        moved = False
        now_ms = self._clock.milliseconds()
        for key, state in list(session.partitions.items()):
            if not full and not state.changed:
                if self._unchanged_for_follower(replica_id, key, state, now_ms):
                    continue
                if self._unchanged_since_last_read(key, state, generation, now_ms):
                    answer = state.last_answer
                    if answer is not None:  # what that read found to say (records or a move) still stands
                        urgent = urgent or bool(answer.records) or answer.log_start_offset != state.sent_log_start_offset
                        moved = moved or answer.high_watermark != state.told_high_watermark
                        total += len(answer.records)
                        results.append(answer)
                    continue
            state.changed = False
            topic, partition = key
            request = ReplicaFetchPartitionRequest(topic, partition, state.fetch_offset, state.current_leader_epoch, state.log_start_offset)
            try:
                result = self._read_one_for_follower(replica_id, request, max_bytes)
            except Exception as error:  # this partition's answer, mapped by server.errors
                state.leadership = None
                results.append(ReplicaFetchPartitionResult(topic, partition, error=error))
                urgent = True
                continue
            state.leadership = self._leadership_for(replica_id, key, state.current_leader_epoch)
            state.recorded_ms = now_ms  # the read recorded the follower's fetch
            state.read_generation = generation
            state.last_answer = None
            if result.records or result.log_start_offset != state.sent_log_start_offset:
                urgent = True
                if stage_trace.ENABLED and result.records:
                    stage_trace.stamp(stage_trace.ANSWER_BUILT, topic, partition, state.fetch_offset, replica_id)
            elif result.high_watermark != state.told_high_watermark:
                moved = True
            elif not full:
                continue
            state.last_answer = result
            total += len(result.records)
            results.append(result)
        read = SessionRead(results, urgent, moved)
        if full:
            # A full fetch answers every partition, once there are records (as a fetch without a
            # session does: a follower that knows no sessions fetches in full every time and must
            # not spin) or an error.
            return read, total, any(result.error is not None for result in results)
        return read, total, urgent or (moved and stop_at_high_watermark_move)

    def _leadership_for(self, replica_id: int, key: PartitionKey, leader_epoch: int) -> tuple[IsrTracker, PartitionLog] | None:
        """The partition's (tracker, log) when this broker leads it at ``leader_epoch`` with ``replica_id`` as a follower, else None."""
        tracker = self._leaders.get(key)
        log = self._log(*key)
        if tracker is None or log is None or tracker.leader_epoch != leader_epoch or not tracker.is_follower(replica_id):
            return None
        return tracker, log

    def _unchanged_for_follower(self, replica_id: int, key: PartitionKey, state: SessionPartition, now_ms: int) -> bool:
        """True when a partition the fetch did not name has nothing new for the follower (no read needed).

        The follower is at the leader's log end and was told the current high watermark and log
        start offset; its caught-up time is refreshed as a read would (so the ISR keeps it), at
        most every UNCHANGED_RECORD_INTERVAL_MS. This runs for every partition of the session at
        each read of it, so in between it looks only at the leadership and log of the last read:
        while the partition is led by the same tracker (a tracker is one leader epoch, its
        followers fixed), that read's checks of epoch and follower still hold; the log is looked
        up again at each refresh.
        """
        leadership = state.leadership
        if leadership is None or self._leaders.get(key) is not leadership[0]:
            return False
        tracker, log = leadership
        log_end = log.log_end_offset
        high_watermark = log.high_watermark
        if state.fetch_offset != log_end or high_watermark != state.told_high_watermark or log.log_start_offset != state.sent_log_start_offset:
            return False
        if 0 <= now_ms - state.recorded_ms < UNCHANGED_RECORD_INTERVAL_MS:
            return True
        if self._log(*key) is not log:
            state.leadership = None
            return False
        state.recorded_ms = now_ms
        expanded = tracker.record_fetch(
            replica_id,
            state.fetch_offset,
            leader_log_end_offset=log_end,
            high_watermark=high_watermark,
            now_ms=now_ms,
            log_start_offset=state.log_start_offset,
        )
        if expanded is not None:
            self._on_isr_change(key[0], key[1], expanded, tracker.leader_epoch)
            self._advance(key, tracker, log)
        return True

    def _unchanged_since_last_read(self, key: PartitionKey, state: SessionPartition, generation: int, now_ms: int) -> bool:
        """True when this fetch already read the partition and a read now would answer the same (no read needed).

        A fetch reads its session again after every wake-up (an append or a high watermark move on
        any of its partitions, a linger ending): the partitions that did not change since its last
        read give that read's answer again. Same leadership (tracker), and the log end, high
        watermark and log start offset of that answer; the follower's fetch offset is the fetch's
        own. Its caught-up time was recorded by that read; after UNCHANGED_RECORD_INTERVAL_MS the
        partition is read again, which records it anew.
        """
        leadership = state.leadership
        if state.read_generation != generation or leadership is None or self._leaders.get(key) is not leadership[0]:
            return False
        if not 0 <= now_ms - state.recorded_ms < UNCHANGED_RECORD_INTERVAL_MS:
            return False
        answer = state.last_answer
        if answer is None:  # that read had nothing to say: _unchanged_for_follower looks at such a partition
            return False
        log = leadership[1]
        return log.log_end_offset == answer.log_end_offset and log.high_watermark == answer.high_watermark and log.log_start_offset == answer.log_start_offset

    def _read_for_follower(
        self, replica_id: int, requests: Sequence[ReplicaFetchPartitionRequest], max_bytes: int
    ) -> tuple[list[ReplicaFetchPartitionResult], int, bool]:
        results = []
        total = 0
        failed = False
        for request in requests:
            try:
                result = self._read_one_for_follower(replica_id, request, max_bytes)
            except Exception as error:  # this partition's answer, mapped by server.errors
                result = ReplicaFetchPartitionResult(request.topic, request.partition, error=error)
                failed = True
            total += len(result.records)
            results.append(result)
        return results, total, failed

    def _read_one_for_follower(self, replica_id: int, request: ReplicaFetchPartitionRequest, max_bytes: int) -> ReplicaFetchPartitionResult:
        key = (request.topic, request.partition)
        tracker = self._leaders.get(key)
        if tracker is None or not tracker.is_follower(replica_id):
            raise NotLeaderOrFollowerError(request.topic, request.partition, -1)
        _check_leader_epoch(request.current_leader_epoch, tracker.leader_epoch)
        log = self._log(*key)
        if log is None:
            raise NotLeaderOrFollowerError(request.topic, request.partition, -1)
        log_end = log.log_end_offset
        if request.fetch_offset > log_end or request.fetch_offset < log.log_start_offset:
            raise OffsetOutOfRangeError(request.fetch_offset, log.log_start_offset, log_end)
        expanded = tracker.record_fetch(
            replica_id,
            request.fetch_offset,
            leader_log_end_offset=log_end,
            high_watermark=log.high_watermark,
            now_ms=self._clock.milliseconds(),
            log_start_offset=request.log_start_offset,
        )
        if expanded is not None:
            self._on_isr_change(request.topic, request.partition, expanded, tracker.leader_epoch)
        self._advance(key, tracker, log)
        if self.deletions.has_waiters(request.topic, request.partition):  # a DeleteRecords parked later checks for itself
            self.deletions.on_low_watermark(request.topic, request.partition, tracker.low_watermark(log.log_start_offset))
        info = log.read(request.fetch_offset, max_bytes, max_offset=log_end, min_one_batch=True)
        return ReplicaFetchPartitionResult(request.topic, request.partition, bytes(info.records), log.high_watermark, info.log_start_offset, log_end)

    def offset_for_leader_epoch(self, topic: str, partition: int, current_leader_epoch: int, leader_epoch: int) -> tuple[int, int]:
        """(largest epoch <= ``leader_epoch`` in this leader's log, the offset where it ended)."""
        tracker = self._leaders.get((topic, partition))
        if tracker is None:
            raise NotLeaderOrFollowerError(topic, partition, -1)
        _check_leader_epoch(current_leader_epoch, tracker.leader_epoch)
        log = self._log(topic, partition)
        if log is None:
            raise NotLeaderOrFollowerError(topic, partition, -1)
        return log.leader_epoch_cache.end_offset_for(leader_epoch, log.log_end_offset)

    # ------------------------------------------------------------------ ISR and high watermark

    def shrink_isrs(self) -> None:
        """Drop followers behind for longer than replica.lag.time.max.ms (run periodically)."""
        now_ms = self._clock.milliseconds()
        for key, tracker in list(self._leaders.items()):
            dropped, shrunk = tracker.shrink(now_ms, self._settings.replica_lag_time_max_ms)
            if not dropped:
                continue
            logger.warning(
                "partition %d of %s: replicas %s fell behind for more than %d ms", key[1], key[0], list(dropped), self._settings.replica_lag_time_max_ms
            )
            self._on_isr_change(key[0], key[1], shrunk, tracker.leader_epoch)
            log = self._log(*key)
            if log is not None:
                self._advance(key, tracker, log)
            self.acks.wake_partition(*key)
            self.deletions.wake_partition(*key)  # a lagging replica left: the low watermark may have risen

    def isr_change_answered(self, topic: str, partition: int, leader_epoch: int, proposed: tuple[int, ...], stored: Sequence[int] | None) -> None:
        """The controller's answer to a proposed ISR: ``stored`` is the ISR it keeps, None when it
        refused the change (a newer leader epoch exists; the next cluster map brings it)."""
        key = (topic, partition)
        tracker = self._leaders.get(key)
        if tracker is None or tracker.leader_epoch != leader_epoch:
            return
        if stored is None:
            tracker.abandon(proposed)
            return
        if not tracker.confirm(proposed, stored):
            return
        logger.info("partition %d of %s: ISR is now %s (leader epoch %d)", partition, topic, list(tracker.isr), leader_epoch)
        log = self._log(*key)
        if log is not None:
            self._advance(key, tracker, log)
        # acks=all produces waiting on this partition re-check the ISR against min.insync.replicas;
        # deletions re-check the low watermark over the new ISR.
        self.acks.wake_partition(*key)
        self.deletions.wake_partition(*key)

    def pending_isr_change(self, topic: str, partition: int, leader_epoch: int) -> tuple[int, ...] | None:
        """The proposal still waiting for the controller at ``leader_epoch``; None when there is none."""
        tracker = self._leaders.get((topic, partition))
        if tracker is None or tracker.leader_epoch != leader_epoch:
            return None
        return tracker.pending_isr

    def _advance(self, key: PartitionKey, tracker: IsrTracker, log: PartitionLog) -> None:
        if advance_high_watermark(log, tracker.in_sync_follower_log_end_offsets()):
            if stage_trace.ENABLED:
                stage_trace.stamp(stage_trace.HIGH_WATERMARK, key[0], key[1], log.high_watermark)
            # The acks=all produces first: their answers are the round trip a producer waits for,
            # and each thread woken before them (parked fetches re-read their partitions) holds
            # the interpreter lock they need. Then consumers (they read below the high watermark);
            # the followers' parked fetches pass the move on after the linger, not woken for it now.
            self.acks.on_high_watermark(key[0], key[1], log.high_watermark)
            with high_watermark_moves():  # followers' parked fetches hear of it after the linger (follower_wakes)
                self._fetch_purgatory.wake_partition(*key)

    def shutdown(self) -> None:
        """Stop every fetcher and wake every parked acks=all produce and DeleteRecords."""
        self.acks.close()
        self.deletions.close()
        with self._lock:
            fetchers = list(self._fetchers.values())
            self._fetchers.clear()
            self._followed.clear()
        for fetcher in fetchers:
            fetcher.stop()
