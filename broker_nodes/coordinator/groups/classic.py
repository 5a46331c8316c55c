"""One classic consumer group (JoinGroup / SyncGroup / Heartbeat / LeaveGroup) with client-side assignors.

The protocol stock Kafka clients use by default (librdkafka, kafka-python, aiokafka, KafkaJS,
the Java client before ``group.protocol=consumer``). The broker never reads the members'
protocol metadata or assignments: it picks the protocol every member supports, makes one
member the leader, hands the leader everyone's metadata in the JoinGroup answer, and hands
each member the bytes the leader assigned it in the SyncGroup answer.

States (Kafka's names): **Empty** (no members) -> **PreparingRebalance** (waiting for every
member to (re)join, at most the largest rebalance timeout; members that did not rejoin by
then are removed) -> **CompletingRebalance** (the generation is bumped and the join answered;
waiting for the leader's SyncGroup, at most the rebalance timeout, after which members that
did not sync are removed and the group rebalances again) -> **Stable**. A member joining,
leaving, timing out or changing its protocols moves the group back to PreparingRebalance.
A group whose last member leaves ends that generation and is Empty again, keeping its protocol
type and generation (Kafka's ``initNextGeneration``), so its next rebalance continues the
numbering. **Dead** is only reported for a group that does not exist.

Member ids: a first JoinGroup of v4+ without a member id is answered MEMBER_ID_REQUIRED with a
new id, which the member must join with within its session timeout (KIP-394). Static members
(``group.instance.id``, KIP-345) keep their place across restarts: a join with a known
instance id replaces the previous member id (which is fenced) instead of adding a member; a
follower back in a Stable group with the same protocols keeps its assignment without a rebalance.

Waiting: a JoinGroup or SyncGroup that cannot be answered yet gets a :class:`Completion`,
completed later (by another member's request or a timer) under the group's lock; the handler
waits on it with a timeout outside the lock (a gRPC thread blocks, the Kafka listener parks
the request on its event loop), so no request holds the group.

Timers (``now_ms`` passed in, from the coordinator's injected clock): session deadlines
(members awaiting a join or sync answer are kept alive, as Kafka does), the join deadline, the
sync deadline and the deadlines of pending (MEMBER_ID_REQUIRED) members; :meth:`expire`
applies them.

Each completed generation is written to ``__consumer_offsets`` as Kafka's GroupMetadata record
(``classic_records``, written by ``classic_groups``): after a coordinator failover the members
find the new coordinator, which loaded the group Stable in that generation, and carry on with
their member ids, generation and assignments.

Not thread-safe: the coordinator holds the group's lock around every call.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from broker_nodes.coordinator.groups.classic_errors import (
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    MemberIdRequiredError,
    RebalanceInProgressError,
)
from broker_nodes.coordinator.groups.errors import FencedInstanceIdError, GroupMaxSizeReachedError, InvalidSessionTimeoutError, UnknownMemberIdError
from broker_nodes.partition_waitlist import WakeSignal

NO_GENERATION = -1  # a commit or request from outside any generation


class ClassicState(enum.Enum):
    """Kafka's names of a classic group's states."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ClassicSettings:
    """The broker's group.* settings of classic groups (Kafka's defaults)."""

    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    max_size: int = 2**31 - 1
    initial_rebalance_delay_ms: int = 3_000  # group.initial.rebalance.delay.ms: how long a group leaving Empty waits for more members


class Completion:
    """A result delivered once to a waiting handler; thread-safe.

    ``wait_ms`` is how long the phase it waits for may last (the group's join or sync deadline
    from now), so the handler knows how long to wait at most; 0 for a result already there.
    Completing it sets :attr:`signal`, which a blocked thread waits on or an event loop
    subscribes to (``partition_waitlist.WakeSignal``), so a waiting JoinGroup or SyncGroup
    need not hold a thread.
    """

    def __init__(self, wait_ms: int = 0) -> None:
        self.signal = WakeSignal()
        self._lock = threading.Lock()
        self._completed = False  # under the lock: the first result wins, later ones are ignored
        self._result: object = None
        self.wait_ms = wait_ms

    def complete(self, result: object) -> None:
        with self._lock:
            if self._completed:
                return
            self._completed = True
            self._result = result
        self.signal.set()

    @property
    def done(self) -> bool:
        return self.signal.is_set()

    @property
    def result(self) -> object | None:
        """The result once :attr:`done`, else None."""
        return self._result if self.signal.is_set() else None

    def wait(self, timeout_s: float) -> object | None:
        """The result, or None when it did not come within ``timeout_s``."""
        return self._result if self.signal.wait(timeout_s) else None


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """One JoinGroup, parsed. ``member_id`` "" for a new member."""

    member_id: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]  # (name, metadata) in the member's order of preference
    session_timeout_ms: int
    rebalance_timeout_ms: int  # v0 has none: the session timeout
    instance_id: str = ""
    client_id: str = ""
    client_host: str = ""
    require_known_member_id: bool = False  # v4+: a new member first gets MEMBER_ID_REQUIRED


@dataclass(frozen=True, slots=True)
class JoinedMember:
    member_id: str
    instance_id: str
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinAnswer:
    """A successful JoinGroup: ``members`` only for the leader."""

    generation: int
    protocol_type: str
    protocol_name: str
    leader: str
    member_id: str
    members: tuple[JoinedMember, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncAnswer:
    protocol_type: str
    protocol_name: str
    assignment: bytes


@dataclass(slots=True)
class ClassicMember:
    member_id: str
    instance_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    session_deadline_ms: int = 0
    awaiting_join: Completion | None = None  # set while the member has joined this rebalance and waits for its answer
    awaiting_sync: Completion | None = None
    synced: bool = False  # sent SyncGroup in the current CompletingRebalance

    def metadata(self, protocol: str) -> bytes:
        return next((metadata for name, metadata in self.protocols if name == protocol), b"")


@dataclass(frozen=True, slots=True)
class ClassicMemberDescription:
    member_id: str
    instance_id: str
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class ClassicDescription:
    """A classic group as DescribeGroups shows it (metadata and assignments only while Stable, as Kafka)."""

    group_id: str
    state: ClassicState
    protocol_type: str
    protocol_name: str
    generation: int
    leader: str
    members: tuple[ClassicMemberDescription, ...] = ()


@dataclass(frozen=True, slots=True)
class ClassicRemoval:
    member_id: str
    reason: str


def _immediate(result: object) -> Completion:
    completion = Completion()
    completion.complete(result)
    return completion


@dataclass
class ClassicGroup:
    """See the module docstring. ``home`` is the coordinator's token of the leadership the group lives under."""

    group_id: str
    home: object = None
    state: ClassicState = ClassicState.EMPTY
    generation: int = 0
    protocol_type: str = ""
    protocol_name: str = ""
    leader: str = ""
    members: dict[str, ClassicMember] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)  # member id given by MEMBER_ID_REQUIRED -> deadline (ms)
    join_deadline_ms: int | None = None
    earliest_join_ms: int = 0  # a group leaving Empty waits group.initial.rebalance.delay.ms for more members
    sync_deadline_ms: int | None = None
    commits_in_flight: int = 0  # checked offset commits not yet stored: the next generation waits for them
    persisted: object = None  # what its record in the log holds (a classic_records.StoredClassicGroup; None: no record)

    # ------------------------------------------------------------------ views

    @property
    def is_empty(self) -> bool:
        return not self.members and not self.pending

    def static_member(self, instance_id: str) -> ClassicMember | None:
        return next((member for member in self.members.values() if instance_id and member.instance_id == instance_id), None)

    def next_deadline(self) -> int | None:
        deadlines = [member.session_deadline_ms for member in self.members.values() if not self._kept_alive(member)]
        deadlines.extend(self.pending.values())
        if self.join_deadline_ms is not None and self.state == ClassicState.PREPARING_REBALANCE:
            deadlines.append(self.join_deadline_ms)
            if not self.pending and all(member.awaiting_join is not None for member in self.members.values()):
                deadlines.append(self.earliest_join_ms)  # only the initial delay holds the join back
        if self.sync_deadline_ms is not None and self.state == ClassicState.COMPLETING_REBALANCE:
            deadlines.append(self.sync_deadline_ms)
        return min(deadlines) if deadlines else None

    def describe(self) -> ClassicDescription:
        stable = self.state == ClassicState.STABLE
        members = tuple(
            ClassicMemberDescription(
                member.member_id,
                member.instance_id,
                member.client_id,
                member.client_host,
                member.metadata(self.protocol_name) if stable else b"",
                member.assignment if stable else b"",
            )
            for member in self.members.values()
        )
        return ClassicDescription(self.group_id, self.state, self.protocol_type, self.protocol_name if stable else "", self.generation, self.leader, members)

    # ------------------------------------------------------------------ JoinGroup

    def join(self, request: JoinRequest, now_ms: int, settings: ClassicSettings, new_member_id: Callable[[str], str]) -> Completion:
        """One JoinGroup; the completion carries a :class:`JoinAnswer` or the group error to answer with.

        Raises the group errors that answer the request at once (INVALID_SESSION_TIMEOUT,
        INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED,
        MEMBER_ID_REQUIRED).
        """
        if not settings.min_session_timeout_ms <= request.session_timeout_ms <= settings.max_session_timeout_ms:
            raise InvalidSessionTimeoutError(request.session_timeout_ms, settings.min_session_timeout_ms, settings.max_session_timeout_ms)
        self._check_protocols(request)
        if not request.member_id:
            return self._join_new(request, now_ms, settings, new_member_id)
        if request.member_id in self.pending:
            del self.pending[request.member_id]
            return self._add_and_rebalance(request, request.member_id, now_ms, settings)
        member = self._known_member(request.member_id, request.instance_id)
        protocols_changed = member.protocols != request.protocols
        self._update(member, request)
        if self.state == ClassicState.PREPARING_REBALANCE:
            return self._await_join(member, now_ms, settings)
        if self.state == ClassicState.COMPLETING_REBALANCE and not protocols_changed:
            return _immediate(self._answer(member))  # its join answer was lost: the same again
        if self.state == ClassicState.STABLE and not protocols_changed and member.member_id != self.leader:
            return _immediate(self._answer(member))  # a follower rejoining without a change: nothing to rebalance
        self._prepare_rebalance(now_ms, settings)
        return self._await_join(member, now_ms, settings)

    def _check_protocols(self, request: JoinRequest) -> None:
        if not request.protocol_type or not request.protocols:
            raise InconsistentGroupProtocolError(self.group_id, "a member must name its protocol type and at least one protocol")
        if not self.members:
            return
        if request.protocol_type != self.protocol_type:
            raise InconsistentGroupProtocolError(self.group_id, f"protocol type {request.protocol_type!r} is not the group's {self.protocol_type!r}")
        names = {name for name, _ in request.protocols}
        others = [member for member in self.members.values() if member.member_id != request.member_id]
        if others and not names & self._candidates(others):
            raise InconsistentGroupProtocolError(
                self.group_id, f"none of the protocols {sorted(names)} is supported by every member (they share {sorted(self._candidates(others))})"
            )

    @staticmethod
    def _candidates(members: Sequence[ClassicMember]) -> set[str]:
        shared: set[str] | None = None
        for member in members:
            names = {name for name, _ in member.protocols}
            shared = names if shared is None else shared & names
        return shared or set()

    def _join_new(self, request: JoinRequest, now_ms: int, settings: ClassicSettings, new_member_id: Callable[[str], str]) -> Completion:
        member_id = new_member_id(request.client_id)
        holder = self.static_member(request.instance_id)
        if holder is not None:
            # A restarted static member takes the place of its previous incarnation, which is fenced.
            self._remove(holder.member_id, FencedInstanceIdError(self.group_id, request.instance_id, holder.member_id, member_id))
            if self.state == ClassicState.STABLE and holder.protocols == request.protocols and holder.member_id != self.leader:
                # KIP-345: a follower back with the same protocols keeps its assignment, without a rebalance.
                member = self._new_member(request, member_id)
                member.assignment = holder.assignment
                member.session_deadline_ms = now_ms + member.session_timeout_ms
                self.members[member_id] = member
                return _immediate(self._answer(member))
            if self.leader == holder.member_id:
                self.leader = member_id
            return self._add_and_rebalance(request, member_id, now_ms, settings)
        if len(self.members) + len(self.pending) >= settings.max_size:
            raise GroupMaxSizeReachedError(self.group_id, settings.max_size)
        if request.require_known_member_id and not request.instance_id:
            self.pending[member_id] = now_ms + request.session_timeout_ms
            raise MemberIdRequiredError(self.group_id, member_id)
        return self._add_and_rebalance(request, member_id, now_ms, settings)

    def _known_member(self, member_id: str, instance_id: str) -> ClassicMember:
        """The member a request comes from; UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID otherwise."""
        if instance_id:
            holder = self.static_member(instance_id)
            if holder is not None and holder.member_id != member_id:
                raise FencedInstanceIdError(self.group_id, instance_id, member_id, holder.member_id)
        member = self.members.get(member_id)
        if member is None or self.state in (ClassicState.EMPTY, ClassicState.DEAD):
            raise UnknownMemberIdError(self.group_id, member_id)
        return member

    @staticmethod
    def _update(member: ClassicMember, request: JoinRequest) -> None:
        member.protocols = request.protocols
        member.session_timeout_ms = request.session_timeout_ms
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.client_id = request.client_id or member.client_id
        member.client_host = request.client_host or member.client_host

    def _add_and_rebalance(self, request: JoinRequest, member_id: str, now_ms: int, settings: ClassicSettings) -> Completion:
        if not self.members:
            self.protocol_type = request.protocol_type
        member = self._new_member(request, member_id)
        self.members[member_id] = member
        if self.state != ClassicState.PREPARING_REBALANCE:
            self._prepare_rebalance(now_ms, settings)
        return self._await_join(member, now_ms, settings)

    @staticmethod
    def _new_member(request: JoinRequest, member_id: str) -> ClassicMember:
        return ClassicMember(
            member_id,
            request.instance_id,
            request.client_id,
            request.client_host,
            request.session_timeout_ms,
            request.rebalance_timeout_ms,
            request.protocol_type,
            request.protocols,
        )

    def _await_join(self, member: ClassicMember, now_ms: int, settings: ClassicSettings) -> Completion:
        if member.awaiting_join is not None:
            member.awaiting_join.complete(RebalanceInProgressError(self.group_id))  # an earlier join of the same member, replaced
        if self.join_deadline_ms is None:
            self.join_deadline_ms = now_ms + member.rebalance_timeout_ms
        completion = Completion(max(self.join_deadline_ms - now_ms, 0))
        member.awaiting_join = completion
        self._try_complete_join(now_ms, settings)
        return completion

    def _prepare_rebalance(self, now_ms: int, settings: ClassicSettings) -> None:
        if self.state == ClassicState.COMPLETING_REBALANCE:
            for member in self.members.values():
                member.assignment = b""
                if member.awaiting_sync is not None:
                    member.awaiting_sync.complete(RebalanceInProgressError(self.group_id))
                    member.awaiting_sync = None
        delay = settings.initial_rebalance_delay_ms if self.state == ClassicState.EMPTY else 0
        self.state = ClassicState.PREPARING_REBALANCE
        self.sync_deadline_ms = None
        longest = max((member.rebalance_timeout_ms for member in self.members.values()), default=0)
        self.join_deadline_ms = now_ms + max(longest, delay)
        self.earliest_join_ms = now_ms + delay

    def _try_complete_join(self, now_ms: int, settings: ClassicSettings) -> None:
        if self.state != ClassicState.PREPARING_REBALANCE or self.pending or self.commits_in_flight:
            return
        if now_ms < self.earliest_join_ms:
            return
        if all(member.awaiting_join is not None for member in self.members.values()):
            self._complete_join(now_ms)

    def _complete_join(self, now_ms: int) -> None:
        """End the join phase: drop dynamic members that did not rejoin, bump the generation, answer every joined member."""
        for member in list(self.members.values()):
            if member.awaiting_join is None and not member.instance_id:
                self._remove(member.member_id, None)
        self.generation += 1
        self.join_deadline_ms = None
        if not self.members:
            self.state = ClassicState.EMPTY
            self.protocol_name = ""
            self.leader = ""
            return
        self.protocol_name = self._select_protocol()
        if self.leader not in self.members or self.members[self.leader].awaiting_join is None:
            joined = [member.member_id for member in self.members.values() if member.awaiting_join is not None]
            self.leader = joined[0] if joined else next(iter(self.members))
        self.state = ClassicState.COMPLETING_REBALANCE
        self.sync_deadline_ms = now_ms + max(member.rebalance_timeout_ms for member in self.members.values())
        for member in self.members.values():
            member.session_deadline_ms = now_ms + member.session_timeout_ms
            member.synced = False
            waiter, member.awaiting_join = member.awaiting_join, None
            if waiter is not None:
                waiter.complete(self._answer(member))

    def _select_protocol(self) -> str:
        """The protocol every member supports that most members prefer (ties: the leader's preference, then the name)."""
        members = list(self.members.values())
        candidates = self._candidates(members)
        votes = dict.fromkeys(candidates, 0)
        for member in members:
            first = next(name for name, _ in member.protocols if name in candidates)
            votes[first] += 1
        leader = self.members.get(self.leader) or members[0]
        preference = {name: index for index, (name, _) in enumerate(leader.protocols)}
        return max(sorted(votes), key=lambda name: (votes[name], -preference.get(name, len(preference))))

    def _answer(self, member: ClassicMember) -> JoinAnswer:
        members: tuple[JoinedMember, ...] = ()
        if member.member_id == self.leader:
            members = tuple(JoinedMember(other.member_id, other.instance_id, other.metadata(self.protocol_name)) for other in self.members.values())
        return JoinAnswer(self.generation, self.protocol_type, self.protocol_name, self.leader, member.member_id, members)

    # ------------------------------------------------------------------ SyncGroup

    def sync(
        self,
        member_id: str,
        instance_id: str,
        generation: int,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
        now_ms: int,
    ) -> Completion:
        """One SyncGroup; the completion carries a :class:`SyncAnswer` or REBALANCE_IN_PROGRESS.

        Raises UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL
        and REBALANCE_IN_PROGRESS (during the join phase) at once.
        """
        member = self._known_member(member_id, instance_id)
        if generation != self.generation:
            raise IllegalGenerationError(self.group_id, member_id, generation, self.generation)
        if (protocol_type and protocol_type != self.protocol_type) or (protocol_name and protocol_name != self.protocol_name):
            raise InconsistentGroupProtocolError(
                self.group_id, f"SyncGroup names protocol {protocol_type!r}/{protocol_name!r}, the group's is {self.protocol_type!r}/{self.protocol_name!r}"
            )
        if self.state == ClassicState.PREPARING_REBALANCE:
            raise RebalanceInProgressError(self.group_id)
        member.session_deadline_ms = now_ms + member.session_timeout_ms
        if self.state == ClassicState.STABLE:
            return _immediate(SyncAnswer(self.protocol_type, self.protocol_name, member.assignment))
        member.synced = True
        if member.awaiting_sync is not None:
            member.awaiting_sync.complete(RebalanceInProgressError(self.group_id))
        completion = Completion(max((self.sync_deadline_ms or now_ms) - now_ms, 0))
        member.awaiting_sync = completion
        if member_id == self.leader:
            for other in self.members.values():
                other.assignment = assignments.get(other.member_id, b"")
            self.state = ClassicState.STABLE
            self.sync_deadline_ms = None
            for other in self.members.values():
                waiter, other.awaiting_sync = other.awaiting_sync, None
                if waiter is not None:
                    waiter.complete(SyncAnswer(self.protocol_type, self.protocol_name, other.assignment))
        return completion

    # ------------------------------------------------------------------ Heartbeat, LeaveGroup

    def heartbeat(self, member_id: str, instance_id: str, generation: int, now_ms: int) -> None:
        """One Heartbeat: keeps the member alive; raises what the member must react to (a rebalance, a newer generation...)."""
        member = self._known_member(member_id, instance_id)
        if self.state == ClassicState.PREPARING_REBALANCE:
            member.session_deadline_ms = now_ms + member.session_timeout_ms
            raise RebalanceInProgressError(self.group_id)
        if generation != self.generation:
            raise IllegalGenerationError(self.group_id, member_id, generation, self.generation)
        member.session_deadline_ms = now_ms + member.session_timeout_ms

    def leave(self, leaving: Sequence[tuple[str, str]], now_ms: int, settings: ClassicSettings) -> list[Exception | None]:
        """Members leaving ((member id, instance id) each; v3+ may name a static member by instance id only); one outcome each."""
        outcomes: list[Exception | None] = []
        removed = False
        for member_id, instance_id in leaving:
            try:
                if not member_id and instance_id:
                    holder = self.static_member(instance_id)
                    if holder is None:
                        raise UnknownMemberIdError(self.group_id, member_id)
                    member_id = holder.member_id
                if member_id in self.pending:
                    del self.pending[member_id]
                else:
                    self._known_member(member_id, instance_id)
                    self._remove(member_id, UnknownMemberIdError(self.group_id, member_id))
                    removed = True
                outcomes.append(None)
            except (UnknownMemberIdError, FencedInstanceIdError) as error:
                outcomes.append(error)
        if removed:
            self._after_removal(now_ms, settings)
        else:
            self._try_complete_join(now_ms, settings)
        return outcomes

    def _remove(self, member_id: str, answer: Exception | None) -> None:
        member = self.members.pop(member_id, None)
        if member is None:
            return
        for waiter in (member.awaiting_join, member.awaiting_sync):
            if waiter is not None:
                waiter.complete(answer if answer is not None else UnknownMemberIdError(self.group_id, member_id))

    def _after_removal(self, now_ms: int, settings: ClassicSettings) -> None:
        if self.state in (ClassicState.STABLE, ClassicState.COMPLETING_REBALANCE):
            self._prepare_rebalance(now_ms, settings)
        if not self.members and self.state == ClassicState.PREPARING_REBALANCE:
            self._complete_join(now_ms)  # nobody left to wait for
            return
        self._try_complete_join(now_ms, settings)

    # ------------------------------------------------------------------ timers and commits

    @staticmethod
    def _kept_alive(member: ClassicMember) -> bool:
        """A member waiting for its join or sync answer cannot heartbeat meanwhile; the phase's own deadline bounds it."""
        return member.awaiting_join is not None or member.awaiting_sync is not None

    def expire(self, now_ms: int, settings: ClassicSettings) -> list[ClassicRemoval]:
        """Apply every passed deadline; what was removed and why."""
        removals = []
        for member_id, deadline in list(self.pending.items()):
            if deadline <= now_ms:
                del self.pending[member_id]
                removals.append(ClassicRemoval(member_id, "did not join with the member id it was given within its session timeout"))
        for member in list(self.members.values()):
            if not self._kept_alive(member) and member.session_deadline_ms <= now_ms:
                self._remove(member.member_id, None)
                removals.append(ClassicRemoval(member.member_id, f"no heartbeat within its session timeout of {member.session_timeout_ms} ms"))
        if self.state == ClassicState.COMPLETING_REBALANCE and self.sync_deadline_ms is not None and self.sync_deadline_ms <= now_ms:
            # Still completing: the leader has not synced, and maybe others (Kafka's pending-sync timeout).
            for member in list(self.members.values()):
                if not member.synced:
                    self._remove(member.member_id, None)
                    removals.append(ClassicRemoval(member.member_id, "did not send SyncGroup within its rebalance timeout"))
        if removals:
            self._after_removal(now_ms, settings)
        if self.state == ClassicState.PREPARING_REBALANCE and self.join_deadline_ms is not None and self.join_deadline_ms <= now_ms:
            before = set(self.members)
            self._complete_join(now_ms)
            removals.extend(ClassicRemoval(member_id, "did not rejoin within the rebalance timeout") for member_id in sorted(before - set(self.members)))
        else:
            self._try_complete_join(now_ms, settings)
        return removals

    def check_commit(self, member_id: str, instance_id: str, generation: int) -> None:
        """Whether a member of this group may commit offsets now (raises why not), as Kafka's classic coordinator decides.

        Without a member id and generation: only while the group has no members.
        """
        if not member_id and generation < 0:
            if self.members:
                raise UnknownMemberIdError(self.group_id, member_id)
            return
        member = self._known_member(member_id, instance_id)
        if self.state == ClassicState.COMPLETING_REBALANCE:
            raise RebalanceInProgressError(self.group_id)
        if generation != self.generation:
            raise IllegalGenerationError(self.group_id, member.member_id, generation, self.generation)

    def check_transactional_commit(self, member_id: str, instance_id: str, generation: int) -> None:
        """Whether a transactional producer may commit offsets for this member (raises why not), as Kafka checks TxnOffsetCommit (KIP-447).

        Unlike a plain commit, a rebalance in progress does not refuse it, and a producer that
        names no member (TxnOffsetCommit before v3, or ``send_offsets_to_transaction`` with a
        bare group id) commits whatever the group's members: it is fenced by its epoch alone.
        """
        if instance_id:
            holder = self.static_member(instance_id)
            if holder is not None and holder.member_id != member_id:
                raise FencedInstanceIdError(self.group_id, instance_id, member_id, holder.member_id)
        if member_id and member_id not in self.members:
            raise UnknownMemberIdError(self.group_id, member_id)
        if generation >= 0 and generation != self.generation:
            raise IllegalGenerationError(self.group_id, member_id, generation, self.generation)

    def begin_commit(self, member_id: str, instance_id: str, generation: int) -> None:
        """:meth:`check_commit`, then hold the generation until :meth:`end_commit`: a commit checked at generation N is
        stored before generation N+1 begins (the join phase waits for it, at most until its deadline)."""
        self.check_commit(member_id, instance_id, generation)
        self.commits_in_flight += 1

    def end_commit(self, now_ms: int, settings: ClassicSettings) -> None:
        self.commits_in_flight = max(self.commits_in_flight - 1, 0)
        self._try_complete_join(now_ms, settings)
