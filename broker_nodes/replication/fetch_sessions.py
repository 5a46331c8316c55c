"""Fetch sessions for followers' ReplicaFetch (KIP-227, as Kafka's followers use them).

A follower's first fetch of a session is *full*: it names every partition it follows from this
leader (session id 0, epoch 0), and the leader answers every partition with the id of a new
session. Each later fetch is *incremental*: it carries the session id and the next epoch, names
only the partitions whose fetch offset, leader epoch or log start offset changed (and those the
follower dropped, as *forgotten*), and the leader answers only the partitions with something
to say: records, a high watermark or log start offset the follower has not been told, or an
error. The epoch is one more on each fetch, so that a fetch that was lost or answered twice is
noticed: a session the leader no longer has is ``FETCH_SESSION_ID_NOT_FOUND``, a wrong epoch
``INVALID_FETCH_SESSION_EPOCH``; either way the follower starts a new session with a full fetch.
Epoch -1 asks for a fetch without a session (every partition named and answered).

The cache is bounded: one session per follower (a new full fetch from the same follower
replaces its older session), at most ``max_sessions`` sessions (the least recently used goes),
and sessions unused for ``idle_timeout_seconds`` (a follower that went away) are evicted.
Pure logic: the caller supplies the clock; :class:`FetchSessionCache` is thread-safe, a
:class:`FetchSession`'s partitions belong to the one fetch holding its current epoch.
"""

from __future__ import annotations

import itertools
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from weir.errors import ErrorCode

if TYPE_CHECKING:
    from broker_nodes.replication.isr import IsrTracker
    from broker_nodes.replication.manager import ReplicaFetchPartitionResult
    from broker_nodes.storage.log import PartitionLog

PartitionKey = tuple[str, int]

NO_SESSION = 0
INITIAL_EPOCH = 0  # with session id 0: open a new session with a full fetch
FINAL_EPOCH = -1  # a fetch without a session
MAX_EPOCH = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``; it wraps to 1 (0 and -1 have their own meanings)."""
    return 1 if epoch >= MAX_EPOCH else epoch + 1


class FetchSessionError(Exception):
    """A ReplicaFetch the session cache refuses; the follower answers with a full fetch."""

    retriable = True
    code = ErrorCode.UNKNOWN_SERVER_ERROR


class FetchSessionIdNotFoundError(FetchSessionError):
    code = ErrorCode.FETCH_SESSION_ID_NOT_FOUND

    def __init__(self, replica_id: int, session_id: int) -> None:
        super().__init__(f"fetch session {session_id} of replica {replica_id} is not known here (evicted, replaced or the leader restarted)")


class InvalidFetchSessionEpochError(FetchSessionError):
    code = ErrorCode.INVALID_FETCH_SESSION_EPOCH

    def __init__(self, session_id: int, request_epoch: int, expected_epoch: int) -> None:
        super().__init__(f"fetch session {session_id}: epoch {request_epoch} in the request, {expected_epoch} expected")


@dataclass(slots=True)
class SessionPartition:
    """One partition of a session: what the follower last said, and what it was last told."""

    fetch_offset: int
    current_leader_epoch: int
    log_start_offset: int
    sent_high_watermark: int = -1
    sent_log_start_offset: int = -1
    changed: bool = True  # named by the current fetch: the leader records the follower's progress
    recorded_ms: int = -1  # when the leader last recorded the follower's progress here without reading (-1: never)
    # The leadership (ISR tracker) and log the leader last read this partition under for this
    # follower, checked as valid for it (epoch, replica). While the partition is still led by
    # that very tracker, a look at whether it has news needs no log lookup (see
    # ReplicationManager._unchanged_for_follower). None: not read yet, or the last read failed.
    leadership: tuple[IsrTracker, PartitionLog] | None = None
    # The last read of this partition by the fetch of session generation ``read_generation``, and
    # the answer it gave (None: nothing to say). While the leader's log end, high watermark and
    # log start offset are still those of that answer, a read of the same fetch would give it
    # again, so it is reused (see ReplicationManager._unchanged_since_last_read).
    read_generation: int = 0
    last_answer: ReplicaFetchPartitionResult | None = None

    @property
    def told_high_watermark(self) -> int:
        """The high watermark the follower holds as far as the leader knows (-1: not known).

        A follower caps the high watermark it is told at its log end after appending the answer's
        records, which is the fetch offset it names next: so what it holds is what it was last
        told, capped at its latest fetch offset. The leader answers a partition whose high
        watermark differs from it, and no other: a follower that took records and fetched again
        at the log end is not answered at once with the high watermark it already has.
        """
        return min(self.sent_high_watermark, self.fetch_offset)


@dataclass(frozen=True, slots=True)
class PartitionState:
    """A partition as a follower names it in a fetch."""

    fetch_offset: int
    current_leader_epoch: int
    log_start_offset: int


class FetchSession:
    """The leader's side of one follower's session."""

    __slots__ = ("session_id", "replica_id", "expected_epoch", "partitions", "last_used", "generation")

    def __init__(self, session_id: int, replica_id: int, last_used: float) -> None:
        self.session_id = session_id
        self.replica_id = replica_id
        self.expected_epoch = 1
        self.partitions: dict[PartitionKey, SessionPartition] = {}
        self.last_used = last_used
        # Bumped by every fetch accepted on this session: a fetch still long-polling when a
        # newer one arrived stops touching the partitions (see is_current).
        self.generation = 0

    def update(self, named: Iterable[tuple[PartitionKey, PartitionState]], forgotten: Iterable[PartitionKey]) -> None:
        """Take the partitions a fetch named (added or changed) and drop the forgotten ones."""
        for key in forgotten:
            self.partitions.pop(key, None)
        for key, state in named:
            current = self.partitions.get(key)
            if current is None:
                self.partitions[key] = SessionPartition(state.fetch_offset, state.current_leader_epoch, state.log_start_offset)
                continue
            if current.current_leader_epoch != state.current_leader_epoch:
                # A new leader epoch: tell the follower everything again.
                current.sent_high_watermark = current.sent_log_start_offset = -1
                current.leadership = None
            current.fetch_offset = state.fetch_offset
            current.current_leader_epoch = state.current_leader_epoch
            current.log_start_offset = state.log_start_offset
            current.changed = True

    def is_current(self, generation: int) -> bool:
        return self.generation == generation


class FetchSessionCache:
    """The sessions of one leader's followers. Thread-safe."""

    def __init__(self, *, max_sessions: int, idle_timeout_seconds: float, monotonic: Callable[[], float]) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, not {max_sessions}")
        self._max_sessions = max_sessions
        self._idle_timeout = idle_timeout_seconds
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()  # least recently used first
        self._by_replica: dict[int, int] = {}
        # Random first id: a follower's id from before a restart of this leader is unlikely to name a new session.
        self._ids = itertools.count(1 + secrets.randbelow(MAX_EPOCH - 1))
        self.evictions = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def open(self, replica_id: int) -> FetchSession:
        """A new session for ``replica_id`` (replacing its older one), for a full fetch."""
        now = self._monotonic()
        with self._lock:
            self._evict_idle_locked(now)
            previous = self._by_replica.pop(replica_id, None)
            if previous is not None:
                self._sessions.pop(previous, None)
            while len(self._sessions) >= self._max_sessions:
                self._drop_locked(next(iter(self._sessions)))
            session_id = self._new_id_locked()
            session = FetchSession(session_id, replica_id, now)
            session.generation = 1
            self._sessions[session_id] = session
            self._by_replica[replica_id] = session_id
            return session

    def resume(self, replica_id: int, session_id: int, epoch: int) -> tuple[FetchSession, int]:
        """The session of an incremental fetch, its epoch taken; (session, the fetch's generation).

        Raises FetchSessionIdNotFoundError (unknown, evicted, another follower's) or
        InvalidFetchSessionEpochError (not the epoch that follows the last fetch's).
        """
        now = self._monotonic()
        with self._lock:
            self._evict_idle_locked(now)
            session = self._sessions.get(session_id)
            if session is None or session.replica_id != replica_id:
                raise FetchSessionIdNotFoundError(replica_id, session_id)
            if epoch != session.expected_epoch:
                raise InvalidFetchSessionEpochError(session_id, epoch, session.expected_epoch)
            session.expected_epoch = next_epoch(epoch)
            session.last_used = now
            session.generation += 1
            self._sessions.move_to_end(session_id)
            return session, session.generation

    def close(self, replica_id: int, session_id: int) -> None:
        """Forget a follower's session (a fetch with the final epoch); unknown ids are ignored."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None and session.replica_id == replica_id:
                self._drop_locked(session_id)

    def evict_idle(self) -> int:
        """Drop the sessions unused for longer than the idle timeout; how many went."""
        with self._lock:
            return self._evict_idle_locked(self._monotonic())

    def _evict_idle_locked(self, now: float) -> int:
        dropped = 0
        while self._sessions:
            session_id, session = next(iter(self._sessions.items()))
            if now - session.last_used <= self._idle_timeout:
                break
            self._drop_locked(session_id)
            dropped += 1
        return dropped

    def _drop_locked(self, session_id: int) -> None:
        session = self._sessions.pop(session_id)
        if self._by_replica.get(session.replica_id) == session_id:
            del self._by_replica[session.replica_id]
        self.evictions += 1

    def _new_id_locked(self) -> int:
        while True:
            session_id = next(self._ids) % MAX_EPOCH
            if session_id != NO_SESSION and session_id not in self._sessions:
                return session_id


class FollowerSession:
    """The follower's side of its session with one leader: what the leader was told, and the next epoch.

    :meth:`next_fetch` says what the next fetch names; :meth:`answered` takes the leader's
    answer to it, :meth:`reset` forgets the session (a refused or lost fetch: the next is full).
    Not thread-safe: the fetcher's thread owns it.
    """

    def __init__(self) -> None:
        self.session_id = NO_SESSION
        self.epoch = INITIAL_EPOCH
        self._sent: dict[PartitionKey, PartitionState] = {}

    def reset(self) -> None:
        self.session_id = NO_SESSION
        self.epoch = INITIAL_EPOCH
        self._sent = {}

    def state_of(self, key: PartitionKey, fetch_offset: int, current_leader_epoch: int, log_start_offset: int) -> PartitionState:
        """The partition as the next fetch names it: the state the leader holds when nothing changed (no new object)."""
        sent = self._sent.get(key)
        if (
            sent is not None
            and sent.fetch_offset == fetch_offset
            and sent.current_leader_epoch == current_leader_epoch
            and sent.log_start_offset == log_start_offset
        ):
            return sent
        return PartitionState(fetch_offset, current_leader_epoch, log_start_offset)

    def next_fetch(self, wanted: dict[PartitionKey, PartitionState]) -> tuple[list[tuple[PartitionKey, PartitionState]], list[PartitionKey]]:
        """(partitions to name, partitions to forget): all of them for a full fetch, else the changes.

        A state :meth:`state_of` handed out unchanged is the one sent: it is told apart by identity
        before equality, so that a fetch's cost grows with the partitions that changed, not with all.
        """
        if self.session_id == NO_SESSION:
            return list(wanted.items()), []
        sent = self._sent
        named = [(key, state) for key, state in wanted.items() if (previous := sent.get(key)) is not state and previous != state]
        forgotten = [key for key in sent if key not in wanted]
        return named, forgotten

    def answered(self, session_id: int, named: list[tuple[PartitionKey, PartitionState]], forgotten: list[PartitionKey]) -> None:
        """The leader answered the fetch built by :meth:`next_fetch` within ``session_id`` (NO_SESSION: it keeps none)."""
        if session_id == NO_SESSION:
            self.reset()
        elif self.session_id == NO_SESSION:
            self.session_id = session_id
            self.epoch = next_epoch(INITIAL_EPOCH)
            self._sent = dict(named)
        elif session_id != self.session_id:
            self.reset()  # not the session asked for: start over
        else:
            self.epoch = next_epoch(self.epoch)
            for key in forgotten:
                self._sent.pop(key, None)
            self._sent.update(named)
