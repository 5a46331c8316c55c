"""The leader's view of its followers: how far each has fetched, and which are in sync.

Kafka's rule (``Partition.maybeShrinkIsr`` / ``maybeExpandIsr``): a follower is caught up at
the time of a fetch whose offset reaches the leader's log end offset, or reaches the log end
offset the leader had at the follower's previous fetch (it has read everything that existed
then). A follower in the ISR that has not been caught up for ``replica.lag.time.max.ms``
leaves it; a follower outside the ISR joins once its fetch offset reaches the high watermark
and the start of the current leader epoch (it holds everything committed).

With a controller (``confirm_changes``), an ISR change is only *proposed* here and becomes
the ISR once the controller has stored it (``AlterPartition``, KIP-497), one change in flight
at a time. Until then the tracker is conservative both ways, as Kafka's ``PendingShrinkIsr``
and ``PendingExpandIsr`` are: the high watermark waits for the *maximal* ISR (the committed
one plus a replica being added, and still including a replica being removed), while
``min.insync.replicas`` is checked against the committed ISR. So a record is never
acknowledged as committed to a set of replicas the controller does not know as the ISR,
and the controller never elects a replica that lacks an acknowledged record. Without a
controller (a broker driven by pushed maps only) changes apply at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# (topic, partition, ISR, leader epoch): an ISR change made (no controller) or proposed (with a
# controller: the callback sends it as AlterPartition and reports the answer back).
IsrChangeCallback = Callable[[str, int, tuple[int, ...], int], None]


class IsrChangeCounts:
    """How often the committed ISRs of the partitions a broker leads shrank and expanded.

    Kafka's ``IsrShrinksPerSec`` and ``IsrExpandsPerSec``: a change counts when it becomes the
    ISR (at once without a controller, when the controller stored it with one), so a proposal
    the controller refused is not counted. A change that both removes and adds replicas
    counts as one of each. Totals only grow; the metrics endpoint reads them. Thread-safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._shrinks = 0
        self._expands = 0

    def record(self, before: Sequence[int], after: Sequence[int]) -> None:
        """Count the change of a committed ISR from ``before`` to ``after`` (nothing when equal)."""
        removed = bool(set(before) - set(after))
        added = bool(set(after) - set(before))
        if removed or added:
            with self._lock:
                self._shrinks += removed
                self._expands += added

    @property
    def shrinks(self) -> int:
        return self._shrinks

    @property
    def expands(self) -> int:
        return self._expands


@dataclass(slots=True)
class FollowerProgress:
    """What the leader knows of one follower. Changed only under the owning tracker's lock."""

    log_end_offset: int = 0
    log_start_offset: int = -1  # -1: not reported yet in this leader epoch (holds DeleteRecords back)
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    leader_log_end_at_last_fetch: int = 0


class IsrTracker:
    """The ISR and follower progress of one partition this broker leads with one leader epoch.

    Invariants: the leader is always in the ISR; the ISR only names replicas of the partition.
    Thread-safe (one lock); a new tracker is made for every new leader epoch.
    """

    def __init__(
        self,
        topic: str,
        partition: int,
        *,
        leader_id: int,
        leader_epoch: int,
        leader_epoch_start_offset: int,
        replicas: Sequence[int],
        isr: Sequence[int],
        now_ms: int,
        confirm_changes: bool = False,
        change_counts: IsrChangeCounts | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self._leader_epoch_start_offset = leader_epoch_start_offset
        self._lock = threading.Lock()
        self._replicas = tuple(replicas)
        # The leader may be missing from the ISR the controller sent (it is being elected
        # from it); it holds its own log, so it is in sync by definition.
        self._isr = tuple(sorted({leader_id, *(replica for replica in isr if replica in self._replicas)}))
        self._confirm_changes = confirm_changes
        self._pending: tuple[int, ...] | None = None  # an ISR proposed to the controller, not yet stored
        self._change_counts = change_counts if change_counts is not None else IsrChangeCounts()
        # Followers in the ISR start as caught up now: they get replica.lag.time.max.ms to
        # show up before they are dropped, as in Kafka after an election.
        self._followers = {
            replica: FollowerProgress(last_caught_up_ms=now_ms if replica in self._isr else 0, last_fetch_ms=now_ms)
            for replica in self._replicas
            if replica != leader_id
        }

    @property
    def isr(self) -> tuple[int, ...]:
        """The committed ISR: what the controller has stored (min.insync.replicas counts these)."""
        return self._isr

    @property
    def pending_isr(self) -> tuple[int, ...] | None:
        """The ISR proposed to the controller and not answered yet; None when nothing is in flight."""
        return self._pending

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The committed ISR with the replicas of a pending change: the high watermark waits for all of them."""
        pending = self._pending
        if pending is None:
            return self._isr
        return tuple(sorted({*self._isr, *pending}))

    @property
    def replicas(self) -> tuple[int, ...]:
        return self._replicas

    def in_sync_follower_log_end_offsets(self) -> list[int]:
        """Log end offsets of the followers in the ISR (the high watermark is their minimum with the leader's)."""
        with self._lock:
            return [self._followers[replica].log_end_offset for replica in self.maximal_isr if replica != self.leader_id]

    def record_fetch(
        self, replica_id: int, fetch_offset: int, *, leader_log_end_offset: int, high_watermark: int, now_ms: int, log_start_offset: int = -1
    ) -> tuple[int, ...] | None:
        """Note a follower's fetch at ``fetch_offset`` (with its ``log_start_offset``); the new ISR (made or proposed) when it may join, else None.

        Precondition: ``replica_id`` is a follower of this partition (see :meth:`is_follower`).
        """
        with self._lock:
            progress = self._followers[replica_id]
            progress.log_end_offset = fetch_offset
            progress.log_start_offset = log_start_offset
            if fetch_offset >= leader_log_end_offset:
                progress.last_caught_up_ms = now_ms
            elif fetch_offset >= progress.leader_log_end_at_last_fetch:
                progress.last_caught_up_ms = max(progress.last_caught_up_ms, progress.last_fetch_ms)
            progress.leader_log_end_at_last_fetch = leader_log_end_offset
            progress.last_fetch_ms = now_ms
            if self._pending is not None or replica_id in self._isr or fetch_offset < max(high_watermark, self._leader_epoch_start_offset):
                return None
            return self._change(tuple(sorted((*self._isr, replica_id))))

    def low_watermark(self, leader_log_start_offset: int) -> int:
        """The smallest log start offset of the in-sync replicas (the maximal ISR, as the high watermark
        counts them): DeleteRecords is done when it reaches the requested offset (Kafka's lowWatermarkIfLeader)."""
        with self._lock:
            starts = [self._followers[replica].log_start_offset for replica in self.maximal_isr if replica != self.leader_id]
        return min([leader_log_start_offset, *starts])

    def is_follower(self, replica_id: int) -> bool:
        return replica_id in self._followers

    def shrink(self, now_ms: int, max_lag_ms: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Drop (or propose to drop) followers not caught up for more than ``max_lag_ms``.

        Returns (the replicas dropped, the new ISR); both empty when nothing changes or a change
        is already in flight.
        """
        with self._lock:
            if self._pending is not None:
                return (), ()
            lagging = tuple(replica for replica in self._isr if replica != self.leader_id and now_ms - self._followers[replica].last_caught_up_ms > max_lag_ms)
            if not lagging:
                return (), ()
            return lagging, self._change(tuple(replica for replica in self._isr if replica not in lagging))

    def _change(self, isr: tuple[int, ...]) -> tuple[int, ...]:
        """Apply ``isr`` (no controller) or hold it as the pending proposal; the caller holds the lock."""
        if self._confirm_changes:
            self._pending = isr
        else:
            self._change_counts.record(self._isr, isr)
            self._isr = isr
        return isr

    def confirm(self, proposed: tuple[int, ...], stored: Sequence[int]) -> bool:
        """The controller answered the proposal ``proposed`` by storing ``stored``; True when taken.

        A stale answer (``proposed`` is no longer the pending change) is ignored. ``stored`` keeps
        only replicas of the partition and always the leader.
        """
        with self._lock:
            if self._pending != tuple(proposed):
                return False
            committed = tuple(sorted({self.leader_id, *(replica for replica in stored if replica in self._replicas)}))
            self._change_counts.record(self._isr, committed)
            self._isr = committed
            self._pending = None
            return True

    def abandon(self, proposed: tuple[int, ...]) -> None:
        """Forget the proposal (the controller refused it); the committed ISR stays, a later check may propose again."""
        with self._lock:
            if self._pending == tuple(proposed):
                self._pending = None
