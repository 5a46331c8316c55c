"""One consumer group's state machine (KIP-848): members, epochs, target assignment, timeouts.

Pure logic: time comes in as arguments (``now_ms``), topics through a lookup function, new
member ids from an injected generator; nothing here writes or locks. The coordinator works
on a :meth:`ConsumerGroup.copy`, writes the records of the difference and only then keeps
the copy, so a failed write leaves the group as it was.

- The **group epoch** grows whenever the membership, a member's subscription or assignor,
  or the subscribed topics' partitions change.
- When the group epoch is ahead of the **assignment epoch**, the next heartbeat computes a
  new target assignment with the group's assignor (the one most members prefer, else the
  first of ``group.consumer.assignors``) and the assignment epoch catches up.
- Each member then reconciles towards its target on its own heartbeats (``member.reconcile``):
  revoke first, then get the partitions their previous owners released.
- **Fencing**: a heartbeat with an epoch the member does not have is refused
  (FENCED_MEMBER_EPOCH), except the epoch it had just before when it reports owning no more
  than it is assigned (its last answer was lost). A member rejoining with epoch 0 starts
  over with nothing owned.
- **Timeouts**: no heartbeat within the member's session timeout removes it; a member that
  has not revoked within its rebalance timeout (max.poll.interval.ms) is removed too. A
  static member (group.instance.id) leaving with epoch -2 keeps its partitions for the
  session timeout; rejoining with the same instance id within it takes them back.
- **States**: Empty (no members), Assigning (group epoch ahead of the assignment epoch),
  Reconciling (a member not yet at the assignment epoch or not stable), Stable.

Not thread-safe: the coordinator holds the group's lock around every call.
"""

from __future__ import annotations

import collections
import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from broker_nodes.coordinator.groups.assignors import AssignmentMember, UnknownAssignorError, assign, canonical_assignor_name
from broker_nodes.coordinator.groups.classic_errors import IllegalGenerationError
from broker_nodes.coordinator.groups.errors import (
    ActiveGroupError,
    FencedInstanceIdError,
    FencedMemberEpochError,
    GroupMaxSizeReachedError,
    InvalidGroupRequestError,
    InvalidSessionTimeoutError,
    PartitionNotAssignedError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)
from broker_nodes.coordinator.groups.member import JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH, Member, MemberState, TopicPartition, reconcile

MAX_MEMBER_ID_LENGTH = 255  # a longer member id is refused (Kafka's own are 22 characters)
NO_TIMESTAMP = -1


class GroupState(enum.Enum):
    """Kafka's names of a consumer group's states (new protocol)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """What the group records about a subscribed topic: a recreated topic (new id) changes the group epoch too."""

    topic_id: str
    partitions: int


TopicLookup = Callable[[str], "TopicInfo | None"]  # qualified topic name -> its id and partition count, None when it does not exist
# (topic names, regex) -> the topics the member subscribes to (qualified); raises when the caller may not read a named topic
SubscriptionResolver = Callable[[tuple[str, ...], str], frozenset[str]]


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """The broker's group.consumer.* settings."""

    session_timeout_ms: int = 45_000
    min_session_timeout_ms: int = 1_000
    max_session_timeout_ms: int = 60_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = ("sticky", "range", "roundrobin")  # canonical names; the first is the default
    rebalance_timeout_ms: int = 300_000  # for a joining member that sends none (max.poll.interval.ms's default)

    def heartbeat_interval_for(self, session_timeout_ms: int) -> int:
        """The interval a member is told: the configured one, but at most a third of its session timeout."""
        return max(1, min(self.heartbeat_interval_ms, session_timeout_ms // 3))


@dataclass(frozen=True, slots=True)
class Subscription:
    topic_names: tuple[str, ...]  # plain names as the member sent them
    topic_regex: str


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """One ConsumerGroupHeartbeat, parsed. Zero / empty / None fields mean "unchanged"."""

    member_id: str
    member_epoch: int
    instance_id: str = ""
    rack_id: str = ""
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 0
    session_timeout_ms: int = 0
    subscription: Subscription | None = None
    server_assignor: str = ""
    owned: frozenset[TopicPartition] | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatAnswer:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: frozenset[TopicPartition] | None  # None: unchanged


@dataclass(frozen=True, slots=True)
class Removal:
    member_id: str
    reason: str


class ConsumerGroup:
    """One group's state; see the module docstring. Timers (deadlines) are in memory only, never in records."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.subscription_metadata: dict[str, TopicInfo] = {}
        self.members: dict[str, Member] = {}
        self.target: dict[str, frozenset[TopicPartition]] = {}
        self.empty_since_ms = NO_TIMESTAMP  # when the last member left; offsets of an empty group expire counted from then
        self.session_deadlines: dict[str, int] = {}  # member id -> ms
        self.rebalance_deadlines: dict[str, tuple[int, int]] = {}  # member id -> (epoch it must revoke in, ms)

    def copy(self) -> ConsumerGroup:
        """A copy to change (members and assignments are immutable, so the dicts are all that is copied)."""
        other = ConsumerGroup(self.group_id)
        other.group_epoch = self.group_epoch
        other.assignment_epoch = self.assignment_epoch
        other.subscription_metadata = dict(self.subscription_metadata)
        other.members = dict(self.members)
        other.target = dict(self.target)
        other.empty_since_ms = self.empty_since_ms
        other.session_deadlines = dict(self.session_deadlines)
        other.rebalance_deadlines = dict(self.rebalance_deadlines)
        return other

    # ------------------------------------------------------------------ views

    @property
    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        if any(member.member_epoch != self.assignment_epoch or member.state != MemberState.STABLE for member in self.members.values()):
            return GroupState.RECONCILING
        return GroupState.STABLE

    def assignor_name(self, settings: GroupSettings) -> str:
        """The assignor most members ask for (ties: the broker's order), else the broker's default."""
        wanted = collections.Counter(member.server_assignor for member in self.members.values() if member.server_assignor)
        if not wanted:
            return settings.assignors[0]
        return max(wanted, key=lambda name: (wanted[name], -settings.assignors.index(name) if name in settings.assignors else -len(settings.assignors)))

    def static_member(self, instance_id: str) -> Member | None:
        return next((member for member in self.members.values() if member.instance_id == instance_id), None)

    def next_deadline(self) -> int | None:
        """The earliest session or rebalance deadline (ms), None when no timer runs."""
        deadlines = list(self.session_deadlines.values()) + [deadline for _, deadline in self.rebalance_deadlines.values()]
        return min(deadlines) if deadlines else None

    def offsets_expire_from(self) -> int | None:
        """Offsets of a group with members never expire (None); an empty group's count from when it emptied (-1: unknown)."""
        return None if self.members else self.empty_since_ms

    # ------------------------------------------------------------------ heartbeat

    def heartbeat(
        self,
        request: Heartbeat,
        now_ms: int,
        settings: GroupSettings,
        resolve: SubscriptionResolver,
        topics: TopicLookup,
        new_member_id: Callable[[], str],
    ) -> HeartbeatAnswer:
        """Apply one heartbeat (join, steady, or leave); raises the group errors without a partial change to rely on.

        The caller works on a copy and drops it when this raises. The steps are KIP-848's:
        validate the member and its epoch, update its subscription (bumping the group epoch
        when that changes the group), compute a new target assignment when the group epoch
        is ahead of it, and reconcile the member towards its target.
        """
        if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(request, now_ms, settings, topics)
        joining = self._validate(request, settings)
        member, replaced = self._member_for(request, joining, settings, new_member_id)
        known = self.members.get(member.member_id)
        new_member = known is None and not replaced
        updated = self._update_subscription(request, member, settings, resolve, keep_timeouts=not new_member)
        self._update_group_epoch(updated, member, new_member, topics)
        if self.group_epoch > self.assignment_epoch:
            self._compute_target(settings)
        reconciled = self._reconcile(updated, request, now_ms)
        changed = reconciled.assigned != (known.assigned if known is not None else frozenset())
        send_assignment = joining or request.owned is not None or changed
        return HeartbeatAnswer(
            reconciled.member_id,
            reconciled.member_epoch,
            settings.heartbeat_interval_for(reconciled.session_timeout_ms),
            reconciled.assigned if send_assignment else None,
        )

    def _validate(self, request: Heartbeat, settings: GroupSettings) -> bool:
        """Step 1a: refuse a malformed heartbeat; True when it joins (member epoch 0)."""
        if request.member_epoch < JOIN_EPOCH:
            raise InvalidGroupRequestError(
                f"member epoch {request.member_epoch} is invalid: use 0 to join, -1 to leave, -2 to leave as a static member, else the epoch last given"
            )
        joining = request.member_epoch == JOIN_EPOCH
        self._check_request(request, joining, settings)
        return joining

    def _update_subscription(
        self, request: Heartbeat, member: Member, settings: GroupSettings, resolve: SubscriptionResolver, *, keep_timeouts: bool
    ) -> Member:
        """Step 2: the member with what the heartbeat sent; a field left out keeps its value.

        Timeouts not sent keep the member's own (``keep_timeouts``: a known or replaced
        member) or take the broker's defaults (a new member).
        """
        subscription = request.subscription or Subscription(member.subscribed_topic_names, member.subscribed_topic_regex)
        return replace(
            member,
            instance_id=request.instance_id or member.instance_id,
            rack_id=request.rack_id or member.rack_id,
            client_id=request.client_id or member.client_id,
            client_host=request.client_host or member.client_host,
            subscribed_topic_names=tuple(sorted(set(subscription.topic_names))),
            subscribed_topic_regex=subscription.topic_regex,
            server_assignor=canonical_assignor_name(request.server_assignor) if request.server_assignor else member.server_assignor,
            rebalance_timeout_ms=request.rebalance_timeout_ms or (member.rebalance_timeout_ms if keep_timeouts else settings.rebalance_timeout_ms),
            session_timeout_ms=request.session_timeout_ms or (member.session_timeout_ms if keep_timeouts else settings.session_timeout_ms),
            subscribed_topics=resolve(subscription.topic_names, subscription.topic_regex),
        )

    def _update_group_epoch(self, updated: Member, before: Member, new_member: bool, topics: TopicLookup) -> None:
        """Step 2b: store the member; a new member, a changed subscription or assignor, or changed partitions bump the group epoch."""
        bump = new_member or updated.subscribed_topics != before.subscribed_topics or updated.server_assignor != before.server_assignor
        self.members[updated.member_id] = updated
        self.empty_since_ms = NO_TIMESTAMP
        metadata = self._subscription_metadata(topics)
        if metadata != self.subscription_metadata:
            self.subscription_metadata = metadata
            bump = True
        if bump:
            self.group_epoch += 1

    def _reconcile(self, member: Member, request: Heartbeat, now_ms: int) -> Member:
        """Step 4: move the member towards its target (revoke first), store it and restart its timers."""
        reconciled = reconcile(
            member,
            self.assignment_epoch,
            self.target.get(member.member_id, frozenset()),
            request.owned,
            self._owned_by_others(member.member_id),
        )
        self.members[reconciled.member_id] = reconciled
        self._schedule(reconciled, now_ms)
        return reconciled

    def _check_request(self, request: Heartbeat, joining: bool, settings: GroupSettings) -> None:
        if len(request.member_id) > MAX_MEMBER_ID_LENGTH:
            raise InvalidGroupRequestError(f"member id of {len(request.member_id)} characters is longer than {MAX_MEMBER_ID_LENGTH}")
        if not joining and not request.member_id:
            raise InvalidGroupRequestError(f"member epoch {request.member_epoch} needs the member id the coordinator gave on joining")
        if joining and request.subscription is None:
            raise InvalidGroupRequestError("a member joining the group (member epoch 0) must send its subscription")
        if request.rebalance_timeout_ms < 0:
            raise InvalidGroupRequestError(f"rebalance timeout {request.rebalance_timeout_ms} ms is negative")
        if request.session_timeout_ms and not settings.min_session_timeout_ms <= request.session_timeout_ms <= settings.max_session_timeout_ms:
            raise InvalidSessionTimeoutError(request.session_timeout_ms, settings.min_session_timeout_ms, settings.max_session_timeout_ms)
        if request.server_assignor:
            try:
                name = canonical_assignor_name(request.server_assignor)
            except UnknownAssignorError:
                raise UnsupportedAssignorError(request.server_assignor, settings.assignors) from None
            if name not in settings.assignors:
                raise UnsupportedAssignorError(request.server_assignor, settings.assignors)

    def _member_for(self, request: Heartbeat, joining: bool, settings: GroupSettings, new_member_id: Callable[[], str]) -> tuple[Member, bool]:
        """Step 1b: the member the heartbeat is from (new, rejoining, replacing a static member, or known); True when it replaces one."""
        if request.instance_id:
            return self._static_member_for(request, joining, settings, new_member_id)
        if joining:
            return self._joining_member(request.member_id, settings, new_member_id), False
        member = self.members.get(request.member_id)
        if member is None:
            raise UnknownMemberIdError(self.group_id, request.member_id)
        self._check_epoch(member, request)
        return member, False

    def _static_member_for(self, request: Heartbeat, joining: bool, settings: GroupSettings, new_member_id: Callable[[], str]) -> tuple[Member, bool]:
        """_member_for() of a member with a group.instance.id: the instance id, not the member id, names it."""
        holder = self.static_member(request.instance_id)
        if not joining:
            if holder is None:
                raise UnknownMemberIdError(self.group_id, request.member_id)
            if holder.member_id != request.member_id:
                raise FencedInstanceIdError(self.group_id, request.instance_id, request.member_id, holder.member_id)
            self._check_epoch(holder, request)
            return holder, False
        if holder is None:
            return self._joining_member(request.member_id, settings, new_member_id), False
        if holder.member_id == request.member_id:
            return self._restarted(holder), False
        return self._replace_static_member(holder, request, new_member_id), True

    def _replace_static_member(self, holder: Member, request: Heartbeat, new_member_id: Callable[[], str]) -> Member:
        """A new incarnation of a static member that left with epoch -2: it takes over what the old one owned and its target, with no rebalance."""
        if holder.member_epoch != STATIC_LEAVE_EPOCH:
            raise UnreleasedInstanceIdError(self.group_id, request.instance_id, holder.member_id)
        member_id = request.member_id or new_member_id()
        if member_id in self.members:
            raise InvalidGroupRequestError(f"member id {member_id!r} is another member's; join with an empty member id")
        replacement = replace(holder, member_id=member_id, member_epoch=JOIN_EPOCH, previous_member_epoch=JOIN_EPOCH)
        self._forget(holder.member_id)
        self.target[member_id] = self.target.pop(holder.member_id, frozenset())
        return replacement

    def _joining_member(self, member_id: str, settings: GroupSettings, new_member_id: Callable[[], str]) -> Member:
        """A member joining with epoch 0: a known member id starts over, any other is a new member."""
        existing = self.members.get(member_id) if member_id else None
        if existing is not None:
            return self._restarted(existing)
        if len(self.members) >= settings.max_size:
            raise GroupMaxSizeReachedError(self.group_id, settings.max_size)
        return Member(member_id or new_member_id())

    @staticmethod
    def _restarted(member: Member) -> Member:
        """A known member joining again (after being fenced): it owns nothing now, as it said by joining."""
        return replace(
            member, member_epoch=JOIN_EPOCH, previous_member_epoch=JOIN_EPOCH, state=MemberState.STABLE, assigned=frozenset(), pending_revocation=frozenset()
        )

    def _check_epoch(self, member: Member, request: Heartbeat) -> None:
        received = request.member_epoch
        if received == member.member_epoch:
            return
        lost_answer = received == member.previous_member_epoch and request.owned is not None and request.owned <= member.assigned
        if received > member.member_epoch or not lost_answer:
            raise FencedMemberEpochError(self.group_id, member.member_id, received, member.member_epoch)

    def _owned_by_others(self, member_id: str) -> Callable[[TopicPartition], bool]:
        owned = {topic_partition for other_id, other in self.members.items() if other_id != member_id for topic_partition in other.owned}
        return owned.__contains__

    def _subscription_metadata(self, topics: TopicLookup) -> dict[str, TopicInfo]:
        wanted = sorted({topic for member in self.members.values() for topic in member.subscribed_topics})
        metadata = {}
        for topic in wanted:
            info = topics(topic)
            if info is not None and info.partitions > 0:
                metadata[topic] = info
        return metadata

    def _compute_target(self, settings: GroupSettings) -> None:
        specs = [
            AssignmentMember(member_id, member.subscribed_topics, member.instance_id, self.target.get(member_id, frozenset()))
            for member_id, member in self.members.items()
        ]
        partitions = {topic: info.partitions for topic, info in self.subscription_metadata.items()}
        self.target = dict(assign(self.assignor_name(settings), specs, partitions))
        self.assignment_epoch = self.group_epoch

    def _schedule(self, member: Member, now_ms: int) -> None:
        self.session_deadlines[member.member_id] = now_ms + member.session_timeout_ms
        if member.state == MemberState.UNREVOKED_PARTITIONS:
            running = self.rebalance_deadlines.get(member.member_id)
            if running is None or running[0] != member.member_epoch:
                self.rebalance_deadlines[member.member_id] = (member.member_epoch, now_ms + member.rebalance_timeout_ms)
        else:
            self.rebalance_deadlines.pop(member.member_id, None)

    # ------------------------------------------------------------------ leaving and timeouts

    def _leave(self, request: Heartbeat, now_ms: int, settings: GroupSettings, topics: TopicLookup) -> HeartbeatAnswer:
        member = self.members.get(request.member_id)
        if member is None:
            raise UnknownMemberIdError(self.group_id, request.member_id)
        interval = settings.heartbeat_interval_for(member.session_timeout_ms)
        if request.member_epoch == LEAVE_EPOCH:
            self.remove_member(member.member_id, now_ms, topics)
            return HeartbeatAnswer(member.member_id, LEAVE_EPOCH, interval, None)
        if not member.instance_id:
            raise InvalidGroupRequestError(f"member {member.member_id!r} has no group.instance.id: member epoch -2 is for static members, leave with -1")
        # It processes nothing until it rejoins: what it was revoking may go on to its new
        # owners, what it is assigned waits for it for the session timeout.
        self.members[member.member_id] = replace(member, member_epoch=STATIC_LEAVE_EPOCH, state=MemberState.STABLE, pending_revocation=frozenset())
        self.session_deadlines[member.member_id] = now_ms + member.session_timeout_ms
        self.rebalance_deadlines.pop(member.member_id, None)
        return HeartbeatAnswer(member.member_id, STATIC_LEAVE_EPOCH, interval, None)

    def remove_member(self, member_id: str, now_ms: int, topics: TopicLookup) -> None:
        """Remove a member (it left, timed out or was fenced); its partitions are free for the next target."""
        self._forget(member_id)
        self.target.pop(member_id, None)
        self.group_epoch += 1
        self.subscription_metadata = self._subscription_metadata(topics)
        if not self.members:
            self.empty_since_ms = now_ms

    def _forget(self, member_id: str) -> None:
        self.members.pop(member_id, None)
        self.session_deadlines.pop(member_id, None)
        self.rebalance_deadlines.pop(member_id, None)

    def expire(self, now_ms: int, topics: TopicLookup) -> list[Removal]:
        """Remove members whose session or rebalance timeout has passed; what was removed and why."""
        removed = []
        for member_id, deadline in sorted(self.session_deadlines.items()):
            if deadline <= now_ms and member_id in self.members:
                timeout = self.members[member_id].session_timeout_ms
                self.remove_member(member_id, now_ms, topics)
                removed.append(Removal(member_id, f"no heartbeat within its session timeout of {timeout} ms"))
        for member_id, (epoch, deadline) in sorted(self.rebalance_deadlines.items()):
            member = self.members.get(member_id)
            if deadline <= now_ms and member is not None and member.member_epoch == epoch and member.state == MemberState.UNREVOKED_PARTITIONS:
                self.remove_member(member_id, now_ms, topics)
                removed.append(
                    Removal(
                        member_id,
                        f"did not revoke {len(member.pending_revocation)} partitions within its rebalance timeout of {member.rebalance_timeout_ms} ms",
                    )
                )
        return removed

    def start_timers(self, now_ms: int) -> None:
        """After loading from the log: every member gets a full session (and, if revoking, rebalance) timeout from now."""
        self.session_deadlines = {member_id: now_ms + member.session_timeout_ms for member_id, member in self.members.items()}
        self.rebalance_deadlines = {
            member_id: (member.member_epoch, now_ms + member.rebalance_timeout_ms)
            for member_id, member in self.members.items()
            if member.state == MemberState.UNREVOKED_PARTITIONS
        }

    # ------------------------------------------------------------------ offset commits

    def check_commit(self, member_id: str, member_epoch: int, topic_partitions: Iterable[TopicPartition]) -> list[Exception | None]:
        """Whether a commit may be written, per partition (None: yes); raises for the whole commit.

        Without a member id (admin or assign()-style commits) only while the group has no
        members. A member commits with its current epoch, and only partitions it owns
        (assigned or still being revoked).
        """
        wanted = list(topic_partitions)
        if not member_id:
            if self.members:
                raise ActiveGroupError(self.group_id, len(self.members))
            return [None] * len(wanted)
        member = self.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(self.group_id, member_id)
        if member_epoch < member.member_epoch:
            raise StaleMemberEpochError(self.group_id, member_id, member_epoch, member.member_epoch)
        if member_epoch > member.member_epoch:
            raise FencedMemberEpochError(self.group_id, member_id, member_epoch, member.member_epoch)
        owned = member.owned
        return [None if topic_partition in owned else PartitionNotAssignedError(self.group_id, member_id, *topic_partition) for topic_partition in wanted]

    def check_transactional_commit(self, member_id: str, member_epoch: int) -> None:
        """Whether a transactional producer may commit offsets for this member (raises why not), as Kafka checks TxnOffsetCommit.

        A producer that names no member (and epoch -1) commits whatever the group's members:
        its producer epoch fences it. A named member must be one of the group and send its
        current epoch; TxnOffsetCommit has no STALE_MEMBER_EPOCH, so any other epoch is
        ILLEGAL_GENERATION, as Kafka answers. Ownership of the partitions is not checked (Kafka
        does not either: the offsets follow what the application consumed).
        """
        if not member_id and member_epoch < 0:
            return
        member = self.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(self.group_id, member_id)
        if member_epoch != member.member_epoch:
            raise IllegalGenerationError(self.group_id, member_id, member_epoch, member.member_epoch)


def check_commit_without_group(group_id: str, member_id: str, count: int) -> list[Exception | None]:
    """A commit to a group with no state: fine without a member id, UNKNOWN_MEMBER_ID with one."""
    if member_id:
        raise UnknownMemberIdError(group_id, member_id)
    return [None] * count


def owners(members: Mapping[str, Member]) -> dict[TopicPartition, list[str]]:
    """Partition -> the members owning it (assigned or pending revocation); more than one would break the protocol."""
    owned: dict[TopicPartition, list[str]] = {}
    for member_id, member in members.items():
        for topic_partition in member.owned:
            owned.setdefault(topic_partition, []).append(member_id)
    return owned
