"""A consumer's membership in its group: the member's side of KIP-848's heartbeat protocol.

A :class:`GroupMembership` belongs to one subscribed :class:`~weir.consumer.Consumer` and
holds everything about the group that the consumer's confluent-kafka API needs: the
subscription, the application's rebalance callbacks, the member's state, and the commit of
revoked partitions. The consumer keeps fetching, decoding and committing; the membership asks
it to start and stop fetching partitions and to commit through a :class:`PartitionOwner`. Its
heartbeat thread sends ``ConsumerGroupHeartbeat`` to the group's coordinator (found with
FindCoordinator, :mod:`weir.coordinator`) every ``heartbeat_interval_ms`` the coordinator
names, carrying the subscription and the partitions the member owns; the answers carry the
member's id and epoch and, when it changed, the complete set of partitions the member may
own now (its assignment).

Reconciliation happens on the application's thread, inside poll() / consume() / close(),
because that is where confluent-kafka runs rebalance callbacks (:meth:`GroupMembership.serve`):
partitions owned but no longer assigned are revoked first (``on_revoke`` runs, their offsets
are committed with enable.auto.commit, and the consumer stops fetching them), then the member
reports them gone (``owned`` in the next heartbeat, sent at once); only then are new
partitions added (``on_assign``, then the consumer fetches them). The coordinator hands a
partition to its next owner only after its previous owner reported it revoked, so no
partition is ever owned by two members. Callbacks are called as ``callback(consumer,
partitions)``; partitions the application unassigns inside ``on_revoke`` are committed too.

Leaving the group and losing partitions:

- close() / unsubscribe(): owned partitions are revoked (``on_revoke``, commit), then a last
  heartbeat leaves: member epoch -1, or -2 for a static member (group.instance.id) whose
  partitions then wait for it for the session timeout;
- FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID (a zombie the coordinator removed): the
  partitions are lost (``on_lost``, no commit) and the member joins again with epoch 0;
- no poll() within max.poll.interval.ms (time spent waiting inside poll() counts as
  polling): the heartbeat thread leaves the group; the next poll() returns a
  ``_MAX_POLL_EXCEEDED`` error event, loses the partitions and rejoins;
- no heartbeat answered for session.timeout.ms (the coordinator has removed the member by
  then): the partitions are lost and the member rejoins;
- any other error (GROUP_AUTHORIZATION_FAILED, UNSUPPORTED_ASSIGNOR, UNRELEASED_INSTANCE_ID,
  GROUP_MAX_SIZE_REACHED, INVALID_REQUEST...) is fatal: the next poll() returns it as an
  error event, the partitions are lost, and heartbeats stop until subscribe() is called again.

Coordinator errors (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, a transport failure, a
deadline) make the member look the coordinator up again and retry after retry.backoff.ms
(doubling up to retry.backoff.max.ms) with its member id, epoch, subscription and owned
partitions: a new coordinator knows the member from the group's records.

Thread-safety: the state is guarded by one lock; :meth:`serve`, :meth:`release`,
:meth:`leave`, :meth:`subscribe`, :meth:`unsubscribe`, :meth:`shutdown`, :meth:`unassigned`
and :meth:`close` are for the application's thread; the other methods may be called from any
thread. Callbacks and the :class:`PartitionOwner` run without the lock held, so they may call
back into the consumer.
"""

from __future__ import annotations

import enum
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from grpc_protos.weir.v1 import broker_pb2
from weir.cluster import Cluster
from weir.config import ClientConfig, invalid_argument
from weir.coordinator import COORDINATOR_LOADING, COORDINATOR_MOVED, GroupCoordinators
from weir.errors import ErrorCode, KafkaError, KafkaException
from weir.message import TopicPartition

logger = logging.getLogger(__name__)

Partition = tuple[str, int]
# on_assign / on_revoke / on_lost: called as callback(consumer, partitions).
RebalanceCallback = Callable[[Any, list[TopicPartition]], Any]

# Member epochs of KIP-848's heartbeat: join, leave, and a static member's temporary leave.
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
# Longest the heartbeat thread sleeps when nothing is due, so that it notices a stopped poll loop.
_IDLE_WAIT = 1.0
# A reconciliation follows newer assignments that arrive while it runs at most this many times
# in one poll(); the rest waits for the next poll().
_MAX_RECONCILE_ROUNDS = 10


class Phase(enum.Enum):
    """Where the member stands.

    JOINING: heartbeats with epoch 0 until the coordinator answers; MEMBER: in the group;
    LOST: its partitions must be given up on the application's thread, then it joins again;
    FATAL: stopped by a non-retriable error; LEAVING: a leave is being sent; LEFT: not in the group.
    """

    JOINING = "joining"
    MEMBER = "member"
    LOST = "lost"
    FATAL = "fatal"
    LEAVING = "leaving"
    LEFT = "left"


class PartitionOwner(Protocol):
    """The consumer's side of a rebalance: its fetching and its commits; called on the application's thread."""

    def start_fetching(self, partitions: list[TopicPartition]) -> None:
        """Fetch those of ``partitions`` not fetched yet (an on_assign callback may have assigned some with offsets)."""

    def stop_fetching(self, partitions: list[TopicPartition]) -> dict[Partition, int]:
        """Stop fetching ``partitions`` and drop what was prefetched; the stored offsets of those that had one."""

    def commit_offsets(self, offsets: list[TopicPartition]) -> None:
        """Commit ``offsets`` synchronously as this member; KafkaException when the request fails, ``error`` set on failed partitions."""


@dataclass(frozen=True)
class Subscription:
    """What subscribe() was given, checked: topic names, one regular expression (or ""), and the rebalance callbacks."""

    topic_names: tuple[str, ...]
    topic_regex: str
    on_assign: RebalanceCallback | None = None
    on_revoke: RebalanceCallback | None = None
    on_lost: RebalanceCallback | None = None


def parse_subscription(
    topics: Sequence[str],
    on_assign: RebalanceCallback | None = None,
    on_revoke: RebalanceCallback | None = None,
    on_lost: RebalanceCallback | None = None,
) -> Subscription:
    """confluent-kafka's subscribe() arguments, checked: TypeError for a topic list that is not a
    list or a callback that is not callable, KafkaException _INVALID_ARG for a bad topic list."""
    if not isinstance(topics, (list, tuple)):
        raise TypeError("subscribe() expects a list of topic names")
    for name, callback in (("on_assign", on_assign), ("on_revoke", on_revoke), ("on_lost", on_lost)):
        if callback is not None and not callable(callback):
            raise TypeError(f"subscribe(): {name} must be callable")
    names, regex = split_subscription(topics)
    return Subscription(tuple(names), regex, on_assign, on_revoke, on_lost)


def split_subscription(topics: Iterable[str]) -> tuple[list[str], str]:
    """confluent-kafka's subscribe() list -> (topic names, one regular expression or "").

    A name starting with ``^`` is a regular expression (librdkafka's rule); several are
    joined into one alternative, since the protocol carries one. Raises KafkaException
    ``_INVALID_ARG`` for an empty list, a name that is not a non-empty string, or a regular
    expression that does not compile.
    """
    names: list[str] = []
    patterns: list[str] = []
    for topic in topics:
        if not topic or not isinstance(topic, str):
            raise invalid_argument(f"subscribe(): topics must be non-empty strings, got {topic!r}")
        if topic.startswith("^"):
            try:
                re.compile(topic)
            except re.error as error:
                raise invalid_argument(f"subscribe(): {topic!r} is not a valid regular expression: {error}") from None
            patterns.append(topic)
        elif topic not in names:
            names.append(topic)
    if not names and not patterns:
        raise invalid_argument("subscribe(): the list of topics is empty")
    regex = patterns[0] if len(patterns) == 1 else "|".join(f"(?:{pattern})" for pattern in dict.fromkeys(patterns))
    return names, regex


def _partitions_message(partitions: Iterable[Partition]) -> broker_pb2.OwnedPartitions:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return broker_pb2.OwnedPartitions(topics=[broker_pb2.TopicPartitions(topic=topic, partitions=numbers) for topic, numbers in by_topic.items()])


def _partition_set(message: broker_pb2.OwnedPartitions) -> frozenset[Partition]:
    return frozenset((item.topic, partition) for item in message.topics for partition in item.partitions)


def _topic_partitions(partitions: Iterable[Partition]) -> list[TopicPartition]:
    return [TopicPartition(topic, partition) for topic, partition in sorted(partitions)]


class GroupMembership:
    """One consumer's membership (see the module docstring)."""

    def __init__(
        self,
        cluster: Cluster,
        coordinators: GroupCoordinators,
        config: ClientConfig,
        *,
        owner: PartitionOwner,
        application: object,
        wake_application: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``application`` is what the rebalance callbacks get as their first argument (the Consumer)."""
        self._cluster = cluster
        self._coordinators = coordinators
        self._owner = owner
        self._application = application
        # Revoked partitions are committed first (enable.auto.commit), reported like other commits.
        self._auto_commit: bool = config["enable.auto.commit"]
        self._commit_callback: Callable[..., Any] | None = config["on_commit"]
        self._error_callback: Callable[[KafkaError], Any] | None = config["error_cb"]
        self._subscription = Subscription((), "")
        # Set while a rebalance callback runs; stored offsets of the partitions it unassigned.
        self._in_callback = False
        self._unassigned_in_callback: dict[Partition, int] = {}
        self._group_id: str = config["group.id"]
        self._instance_id: str = config["group.instance.id"] or ""
        self._client_id: str = config["client.id"]
        self._assignor: str = config["partition.assignment.strategy"] or ""
        self._rebalance_timeout_ms: int = config["max.poll.interval.ms"]
        self._max_poll_interval = config["max.poll.interval.ms"] / 1000.0
        # Sent only when the application chose it; otherwise the coordinator's default applies.
        self._session_timeout_ms: int = config["session.timeout.ms"] if config.is_set("session.timeout.ms") else 0
        self._local_session_timeout = config["session.timeout.ms"] / 1000.0
        self._request_timeout = config["request.timeout.ms"] / 1000.0
        self._wake_application = wake_application
        self._clock = clock

        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._phase = Phase.LEFT
        self._member_id = ""
        self._member_epoch = JOIN_EPOCH
        self._owned: frozenset[Partition] = frozenset()
        self._target: frozenset[Partition] | None = None
        self._errors: list[KafkaError] = []
        # Whether the next heartbeat carries the subscription / the owned partitions / both
        # (after a join or an error), and whether it goes now rather than at the interval.
        self._send_subscription = False
        self._send_owned = False
        self._send_full = False
        self._send_now = False
        # (member id, epoch) of a leave to send before anything else.
        self._pending_leave: tuple[str, int] | None = None
        # Join again without the member id (the coordinator no longer knows it).
        self._rejoin_fresh = False
        self._in_flight = False
        self._heartbeat_interval = config["heartbeat.interval.ms"] / 1000.0
        self._next_heartbeat = 0.0
        self._failures = 0
        self._last_poll = clock()
        self._last_acknowledged_send = clock()
        # Set by the application's thread while it is inside poll() / consume(): a long poll
        # waiting for records counts as polling for max.poll.interval.ms.
        self.polling = False
        # Read without the lock by the application's thread on every poll(); set with it.
        self.needs_service = False
        # The heartbeat thread wakes a poll() that waits for data when it set needs_service.
        self._wake_pending = False
        self._stopping = False
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ observers

    @property
    def member_id(self) -> str:
        return self._member_id

    @property
    def phase(self) -> Phase:
        return self._phase

    @property
    def active(self) -> bool:
        """Whether the consumer is subscribed (joining, in the group, or about to rejoin)."""
        return self._phase in (Phase.JOINING, Phase.MEMBER, Phase.LOST)

    def commit_identity(self) -> tuple[str, int]:
        """(member id, member epoch) for OffsetCommit: ("", -1) while not in the group."""
        with self._lock:
            if self._phase == Phase.MEMBER and self._member_epoch > 0:
                return self._member_id, self._member_epoch
            return "", -1

    def wait_for_new_epoch(self, epoch: int, timeout: float) -> int:
        """Heartbeat now and wait up to ``timeout`` s for an epoch other than ``epoch``; the epoch then.

        For a commit answered STALE_MEMBER_EPOCH: the coordinator moved the member to a newer
        epoch that this member has not heard of yet.
        """
        deadline = self._clock() + timeout
        with self._lock:
            self._send_now = True
            self._changed.notify_all()
            while self._member_epoch == epoch and self._phase == Phase.MEMBER:
                remaining = deadline - self._clock()
                if remaining <= 0:
                    break
                self._changed.wait(remaining)
            return self._member_epoch

    # ------------------------------------------------------------------ application thread

    def subscribe(self, subscription: Subscription) -> None:
        """Join with this subscription, or change the subscription (and the callbacks) of the member."""
        with self._lock:
            self._subscription = subscription
            self._send_subscription = True
            self._send_now = True
            if self._phase in (Phase.LEFT, Phase.FATAL, Phase.LEAVING):
                self._start_join_locked(fresh=True)
            self._changed.notify_all()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="weir-consumer-heartbeat", daemon=True)
                self._thread.start()

    def serve(self) -> list[KafkaError]:
        """Called by every poll(): note the poll, then give up lost partitions and reconcile.

        Returns the errors to hand to the application as error events. Callbacks may raise; the
        member's state stays consistent (what a callback was called for counts as done).
        """
        now = self._clock()
        self._last_poll = now
        if self._phase == Phase.MEMBER and now - self._last_acknowledged_send > self._local_session_timeout:
            with self._lock:
                self._expire_session_locked(now)
        if not self.needs_service:
            return []
        with self._lock:
            self.needs_service = False
            errors, self._errors = self._errors, []
            if self._owned and self._phase == Phase.LOST and any(error.code() == KafkaError._MAX_POLL_EXCEEDED for error in errors):
                # As librdkafka: this poll() returns _MAX_POLL_EXCEEDED, the next one gives the
                # partitions up (on_lost, else on_revoke).
                self._need_service_locked()
                return errors
            lost = self._owned if self._phase in (Phase.LOST, Phase.FATAL) else frozenset()
            if lost:
                self._owned = frozenset()
                self._target = None
        try:
            if lost:
                self._lose(_topic_partitions(lost))
        finally:
            with self._lock:
                if self._phase == Phase.LOST:
                    self._start_join_locked(fresh=self._rejoin_fresh)
                    self._changed.notify_all()
        self._reconcile()
        return errors

    def _reconcile(self) -> None:
        for _ in range(_MAX_RECONCILE_ROUNDS):
            with self._lock:
                target, self._target = self._target, None
                if target is None or self._phase != Phase.MEMBER:
                    return
                revoked = self._owned - target
            if revoked:
                try:
                    self._revoke(_topic_partitions(revoked))
                finally:
                    self._set_owned(removed=revoked)
            with self._lock:
                if self._target is not None:
                    continue  # a newer assignment came meanwhile: reconcile that one instead
                if self._phase != Phase.MEMBER:
                    return
                added = target - self._owned
            if added:
                try:
                    self._assign(_topic_partitions(added))
                finally:
                    self._set_owned(added=added)
        with self._lock:
            if self._target is not None:
                self._need_service_locked()

    def _set_owned(self, *, added: frozenset[Partition] = frozenset(), removed: frozenset[Partition] = frozenset()) -> None:
        with self._lock:
            self._owned = (self._owned - removed) | added
            self._send_owned = True
            self._send_now = True
            self._changed.notify_all()

    def release(self) -> None:
        """Revoke every owned partition (before leaving): on_revoke and commit, or on_lost when they are lost already."""
        with self._lock:
            owned = self._owned
            lost = self._phase in (Phase.LOST, Phase.FATAL)
            self._target = None
        if not owned:
            return
        try:
            if lost:
                self._lose(_topic_partitions(owned))
            else:
                self._revoke(_topic_partitions(owned))
        finally:
            self._set_owned(removed=owned)

    def leave(self, timeout: float) -> None:
        """Leave the group (epoch -1, or -2 for a static member), waiting up to ``timeout`` s for the answer.

        Call :meth:`release` first. Heartbeats stop until :meth:`subscribe`.
        """
        deadline = self._clock() + timeout
        with self._lock:
            self._target = None
            if self._phase in (Phase.LEFT, Phase.FATAL) or not self._member_id and not self._in_flight:
                # Never joined, or already out: there is nothing to leave.
                self._phase = Phase.LEFT
                return
            # A join in flight is answered first; the leave then names the member it created.
            self._phase = Phase.LEAVING
            self._changed.notify_all()
            while self._phase == Phase.LEAVING:
                remaining = deadline - self._clock()
                if remaining <= 0:
                    logger.warning("group %s: the leave of member %s was not answered within %.1fs", self._group_id, self._member_id, timeout)
                    self._phase = Phase.LEFT
                    break
                self._changed.wait(remaining)

    def unsubscribe(self, leave_timeout: float) -> None:
        """Revoke every partition (on_revoke, commit with enable.auto.commit) and leave the group; nothing when not subscribed."""
        if not self.active:
            return
        try:
            self.release()
        finally:
            self.leave(leave_timeout)

    def shutdown(self, leave_timeout: float, thread_timeout: float) -> None:
        """For the consumer's close(): revoke and leave when subscribed, then stop the heartbeat thread."""
        try:
            if self.active:
                self.release()
        finally:
            self.leave(leave_timeout)
            self.close(timeout=thread_timeout)

    def unassigned(self, stored: dict[Partition, int]) -> None:
        """The application unassigned partitions (incremental_unassign) with these stored offsets.

        Inside on_revoke they are given up by the callback itself: their offsets are still
        committed before the member reports them revoked.
        """
        if self._in_callback:
            self._unassigned_in_callback.update(stored)

    def close(self, timeout: float) -> None:
        """Stop the heartbeat thread (after :meth:`leave`)."""
        with self._lock:
            self._stopping = True
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=timeout)

    # ------------------------------------------------------------------ rebalance callbacks (application thread, no lock)

    def _revoke(self, partitions: list[TopicPartition]) -> None:
        """on_revoke, then stop fetching; with enable.auto.commit the offsets are committed before the member reports them gone."""
        self._unassigned_in_callback = {}
        try:
            self._run_callback(self._subscription.on_revoke, partitions)
        finally:
            stored = {**self._unassigned_in_callback, **self._owner.stop_fetching(partitions)}
            self._unassigned_in_callback = {}
            if self._auto_commit and stored:
                self._commit_revoked(stored)

    def _lose(self, partitions: list[TopicPartition]) -> None:
        """on_lost (on_revoke when unset), then stop fetching: no commit, other members may own them already."""
        try:
            self._run_callback(self._subscription.on_lost if self._subscription.on_lost is not None else self._subscription.on_revoke, partitions)
        finally:
            self._owner.stop_fetching(partitions)

    @property
    def in_assign_callback(self) -> bool:
        """Whether on_assign / on_revoke / on_lost is running now (in the application's poll())."""
        return self._in_callback

    @property
    def subscribed_names(self) -> tuple[str, ...]:
        """The literal topic names of the subscription (regular expressions left out)."""
        return self._subscription.topic_names

    def _assign(self, partitions: list[TopicPartition]) -> None:
        """on_assign, then fetch the partitions it did not assign itself."""
        try:
            self._run_callback(self._subscription.on_assign, partitions)
        finally:
            self._owner.start_fetching(partitions)

    def _run_callback(self, callback: RebalanceCallback | None, partitions: list[TopicPartition]) -> None:
        if callback is None:
            return
        self._in_callback = True
        try:
            # Fresh objects: the application may keep or change them.
            callback(self._application, [TopicPartition(tp.topic, tp.partition) for tp in partitions])
        finally:
            self._in_callback = False

    def _commit_revoked(self, stored: dict[Partition, int]) -> None:
        """The automatic commit of revoked partitions; reported like the periodic ones (on_commit, else error_cb)."""
        offsets = [TopicPartition(topic, partition, offset) for (topic, partition), offset in sorted(stored.items())]
        error: KafkaError | None = None
        try:
            self._owner.commit_offsets(offsets)
        except KafkaException as failure:
            error = failure.error
        if self._commit_callback is not None:
            self._commit_callback(error, offsets)
        elif self._error_callback is not None:
            for failed in [error] if error is not None else [tp.error for tp in offsets if tp.error is not None]:
                self._error_callback(failed)

    # ------------------------------------------------------------------ state changes (lock held)

    def _start_join_locked(self, *, fresh: bool) -> None:
        self._phase = Phase.JOINING
        self._member_epoch = JOIN_EPOCH
        if fresh:
            self._member_id = ""
        self._rejoin_fresh = False
        self._target = None
        self._send_full = True
        self._send_now = True
        self._failures = 0
        self._last_acknowledged_send = self._clock()

    def _need_service_locked(self) -> None:
        self.needs_service = True
        self._wake_pending = True

    def _lose_locked(self, *, rejoin_fresh: bool, error: KafkaError | None = None) -> None:
        """The member is out of the group: the application gives its partitions up on next poll()."""
        self._phase = Phase.LOST
        self._rejoin_fresh = rejoin_fresh
        self._target = None
        if error is not None:
            self._errors.append(error)
        self._need_service_locked()

    def _expire_session_locked(self, now: float) -> None:
        if self._phase != Phase.MEMBER or now - self._last_acknowledged_send <= self._local_session_timeout:
            return
        logger.warning(
            "group %s: member %s heard nothing from its coordinator for %.1fs (session.timeout.ms): its partitions are lost; joining again",
            self._group_id,
            self._member_id,
            now - self._last_acknowledged_send,
        )
        self._lose_locked(rejoin_fresh=True)

    def polled(self) -> None:
        """The application returns from poll(): the poll interval counts from now."""
        self._last_poll = self._clock()
        self.polling = False

    def _check_poll_interval_locked(self, now: float) -> None:
        if self.polling:
            self._last_poll = now
        if self._phase not in (Phase.JOINING, Phase.MEMBER) or now - self._last_poll <= self._max_poll_interval:
            return
        error = KafkaError(
            KafkaError._MAX_POLL_EXCEEDED,
            f"Application maximum poll interval ({self._rebalance_timeout_ms}ms) exceeded by {int((now - self._last_poll - self._max_poll_interval) * 1000)}ms: "
            f"member {self._member_id or '(not joined yet)'} leaves group {self._group_id} and its partitions are lost",
        )
        logger.warning("%s", error.str())
        if self._member_id and self._phase == Phase.MEMBER:
            self._pending_leave = (self._member_id, self._leave_epoch())
        self._lose_locked(rejoin_fresh=True, error=error)

    def _leave_epoch(self) -> int:
        return STATIC_LEAVE_EPOCH if self._instance_id else LEAVE_EPOCH

    # ------------------------------------------------------------------ heartbeat thread

    def _run(self) -> None:
        while True:  # until close(): one heartbeat (or one wait) per round
            with self._lock:
                if self._stopping:
                    return
                now = self._clock()
                self._check_poll_interval_locked(now)
                self._expire_session_locked(now)
                request, wait = self._next_request_locked(now)
                wake, self._wake_pending = self._wake_pending, False
                if request is None and not wake:
                    self._changed.wait(wait)
                    continue
                self._in_flight = request is not None
            if wake:
                self._wake_application()
            if request is None:
                continue
            try:
                self._send(request)
            except Exception as error:  # the heartbeat must outlive any bug in one round
                logger.exception("group %s: heartbeat round failed", self._group_id)
                with self._lock:
                    self._retry_later_locked(KafkaError(KafkaError._FAIL, f"heartbeat: {error!r}"), forget=None)
            finally:
                with self._lock:
                    self._in_flight = False
                    self._changed.notify_all()

    def _next_request_locked(self, now: float) -> tuple[broker_pb2.ConsumerGroupHeartbeatRequest | None, float]:
        """The heartbeat to send now, or (None, seconds until one may be due)."""
        backing_off = self._failures > 0 and now < self._next_heartbeat
        if self._pending_leave is not None or self._phase == Phase.LEAVING:
            if backing_off:
                return None, min(self._next_heartbeat - now, _IDLE_WAIT)
            if self._pending_leave is not None:
                member_id, epoch = self._pending_leave
                return self._request(member_id, epoch, full=False), 0.0
            if not self._member_id:
                self._phase = Phase.LEFT  # the join it waited for failed: nothing to leave
                self._changed.notify_all()
                return None, _IDLE_WAIT
            return self._request(self._member_id, self._leave_epoch(), full=False), 0.0
        if self._phase not in (Phase.JOINING, Phase.MEMBER):
            return None, _IDLE_WAIT
        due = now if self._send_now and self._failures == 0 else self._next_heartbeat
        if now < due:
            return None, min(due - now, _IDLE_WAIT, max(self._last_poll + self._max_poll_interval - now, 0.001))
        full = self._send_full or self._member_epoch == JOIN_EPOCH
        request = self._request(self._member_id, self._member_epoch, full=full)
        if full or self._send_subscription:
            request.subscription.topic_names.extend(self._subscription.topic_names)
            request.subscription.topic_regex = self._subscription.topic_regex
            request.subscription.SetInParent()
        if full or self._send_owned:
            request.owned.CopyFrom(_partitions_message(self._owned))
            request.owned.SetInParent()
        self._send_full = self._send_subscription = self._send_owned = self._send_now = False
        return request, 0.0

    def _request(self, member_id: str, epoch: int, *, full: bool) -> broker_pb2.ConsumerGroupHeartbeatRequest:
        return broker_pb2.ConsumerGroupHeartbeatRequest(
            group_id=self._group_id,
            member_id=member_id,
            member_epoch=epoch,
            instance_id=self._instance_id,
            rebalance_timeout_ms=self._rebalance_timeout_ms,
            server_assignor=self._assignor,
            session_timeout_ms=self._session_timeout_ms,
            client_id=self._client_id,
        )

    def _send(self, request: broker_pb2.ConsumerGroupHeartbeatRequest) -> None:
        sent_at = self._clock()
        address: str | None = None
        try:
            address = self._coordinators.address(self._group_id, timeout=self._request_timeout)
            response = self._cluster.call("ConsumerGroupHeartbeat", request, address=address, timeout=self._request_timeout)
        except KafkaException as exception:
            with self._lock:
                self._answered_with_error(request, exception.error, address)
            return
        with self._lock:
            if response.error_code:
                self._answered_with_error(request, KafkaError(response.error_code, response.error_message or None), address)
            else:
                self._answered(request, response, sent_at)

    def _answered(self, request: broker_pb2.ConsumerGroupHeartbeatRequest, response: broker_pb2.ConsumerGroupHeartbeatResponse, sent_at: float) -> None:
        """A heartbeat was answered without error (lock held)."""
        self._failures = 0
        if request.member_epoch < 0:
            self._left(request)
            return
        if self._phase == Phase.LEAVING and (request.member_id, request.member_epoch) == (self._member_id, self._member_epoch):
            # Answered while leave() waits: the leave must name the member this created.
            self._member_id = response.member_id or self._member_id
            self._member_epoch = response.member_epoch
            return
        if self._phase not in (Phase.JOINING, Phase.MEMBER) or (request.member_epoch != self._member_epoch or request.member_id != self._member_id):
            return  # answers a member this one no longer is (it left, lost or rejoined meanwhile)
        if response.heartbeat_interval_ms > 0:
            self._heartbeat_interval = response.heartbeat_interval_ms / 1000.0
        self._next_heartbeat = self._clock() + self._heartbeat_interval
        self._last_acknowledged_send = sent_at
        self._member_id = response.member_id or self._member_id
        epoch_changed = response.member_epoch != self._member_epoch
        self._member_epoch = response.member_epoch
        self._phase = Phase.MEMBER
        if response.HasField("assignment"):
            self._target = _partition_set(response.assignment)
            self._need_service_locked()
        if epoch_changed:
            self._changed.notify_all()

    def _left(self, request: broker_pb2.ConsumerGroupHeartbeatRequest) -> None:
        """A leave was answered, or given up (lock held)."""
        if self._pending_leave == (request.member_id, request.member_epoch):
            self._pending_leave = None
        elif self._phase == Phase.LEAVING:
            self._phase = Phase.LEFT
        self._changed.notify_all()

    def _answered_with_error(self, request: broker_pb2.ConsumerGroupHeartbeatRequest, error: KafkaError, address: str | None) -> None:
        """A heartbeat failed (lock held): retry, rejoin, or stop, per the module docstring."""
        code = error.code()
        if request.member_epoch < 0:
            retriable = code in COORDINATOR_MOVED or code in COORDINATOR_LOADING or error.retriable()
            if retriable and self._phase == Phase.LEAVING and self._pending_leave != (request.member_id, request.member_epoch):
                # close() / unsubscribe(): retried until leave()'s timeout.
                self._retry_later_locked(error, forget=address if code not in COORDINATOR_LOADING else None)
                return
            # Any other answer (UNKNOWN_MEMBER_ID...) means the member is gone anyway; the leave
            # after max.poll.interval.ms is sent once: the session timeout removes it otherwise.
            self._left(request)
            return
        if self._phase not in (Phase.JOINING, Phase.MEMBER) or (request.member_epoch != self._member_epoch or request.member_id != self._member_id):
            return
        if code in COORDINATOR_LOADING:
            self._retry_later_locked(error, forget=None)
        elif code in COORDINATOR_MOVED or error.retriable():
            self._retry_later_locked(error, forget=address)
        elif code == ErrorCode.FENCED_MEMBER_EPOCH:
            logger.warning("group %s: member %s was fenced (%s): its partitions are lost; joining again", self._group_id, self._member_id, error.str())
            self._lose_locked(rejoin_fresh=False)
        elif code == ErrorCode.UNKNOWN_MEMBER_ID:
            logger.warning(
                "group %s: the coordinator does not know member %s (%s): its partitions are lost; joining again", self._group_id, self._member_id, error.str()
            )
            self._lose_locked(rejoin_fresh=True)
        else:
            logger.error("group %s: member %s stops: %s", self._group_id, self._member_id or "(joining)", error)
            self._phase = Phase.FATAL
            self._target = None
            self._errors.append(KafkaError(code, f"group {self._group_id}: {error.str()}"))
            self._need_service_locked()
            self._changed.notify_all()

    def _retry_later_locked(self, error: KafkaError, *, forget: str | None) -> None:
        if forget is not None:
            self._coordinators.forget(self._group_id, forget)
        logger.info("group %s: heartbeat failed, retrying: %s", self._group_id, error.str())
        self._send_full = True
        self._next_heartbeat = self._clock() + self._cluster.backoff(self._failures)
        self._failures += 1
