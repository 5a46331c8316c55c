"""Consumer groups for both front doors: KIP-848 heartbeats, the classic protocol, describe, list and delete.

Authorization as in Kafka: READ on the group to join, heartbeat, sync or leave (and READ on
each subscribed topic, checked by the subscription resolver); DESCRIBE to describe or list;
DELETE to delete. Group ids are qualified with the caller's tenant on the way in and made
plain on the way out, so a tenant only ever sees its own groups. Errors become Kafka's codes
and messages here (``server.errors``), never in a transport.

Classic JoinGroup and SyncGroup may have to wait for other members: the coordinator hands back
a completion, and this layer waits on it for at most as long as the group's join or sync phase
may last (its rebalance timeout, plus a margin for the coordinator's timer), so no handler thread
waits without bound. A wait that
runs out answers REBALANCE_IN_PROGRESS and the member joins again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

from broker_nodes.coordinator.groups.classic import (
    ClassicDescription,
    ClassicMemberDescription,
    ClassicState,
    Completion,
    JoinAnswer,
    JoinRequest,
    SyncAnswer,
)
from broker_nodes.coordinator.groups.classic_assignment import assigned_partitions
from broker_nodes.coordinator.groups.classic_errors import MemberIdRequiredError, RebalanceInProgressError
from broker_nodes.coordinator.groups.classic_subscription import CONSUMER_PROTOCOL_TYPE, subscribed_topics
from broker_nodes.coordinator.groups.coordinator import CLASSIC_GROUP_TYPE, CONSUMER_PROTOCOL, SIMPLE_PROTOCOL, GroupSnapshot, ListedGroup
from broker_nodes.coordinator.groups.errors import GroupIdNotFoundError
from broker_nodes.coordinator.groups.group import GroupState, Heartbeat, HeartbeatAnswer
from broker_nodes.coordinator.groups.member import Member, TopicPartition
from broker_nodes.coordinator.groups.subscriptions import TenantSubscriptions
from broker_nodes.coordinator.offset_store import InvalidGroupIdError
from broker_nodes.partition_waitlist import WakeSignal, wait_blocking
from broker_nodes.requests.outcomes import NO_ERROR
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import Operation, ResourceType
from broker_nodes.security.errors import GroupAuthorizationError
from broker_nodes.server import request_parsing
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import InvalidRequestError, error_code_and_message
from weir.errors import ErrorCode

WAIT_MARGIN_S = 5.0  # beyond the rebalance timeout, for the coordinator's timer to end the phase and answer
STATES = {state.value.lower(): state.value for state in (*GroupState, *ClassicState)}  # ListGroups' filter, case-insensitive as in Kafka
GROUP_TYPES = (CLASSIC_GROUP_TYPE, CONSUMER_PROTOCOL)  # ListGroups v5's group types, the types filter's names (case-insensitive)


def _check_group(call: CallContext, group_id: str, operation: Operation, verb: str) -> None:
    if not group_id:
        raise InvalidGroupIdError(group_id)
    if not call.may(operation, ResourceType.GROUP, group_id):
        raise GroupAuthorizationError(group_id, verb)


# The operations Kafka reports in a group's authorized operations (KIP-430).
GROUP_OPERATIONS = (Operation.READ, Operation.DESCRIBE, Operation.DELETE)


def authorized_group_operations(call: CallContext, group_id: str) -> list[Operation]:
    """The group operations the caller's ACLs allow on ``group_id`` (plain name), for KIP-430 answers of both doors."""
    return [operation for operation in GROUP_OPERATIONS if call.may(operation, ResourceType.GROUP, group_id)]


# ---------------------------------------------------------------------- KIP-848


@dataclass(frozen=True, slots=True)
class HeartbeatOutcome:
    error_code: int = NO_ERROR
    error_message: str = ""
    answer: HeartbeatAnswer | None = None  # qualified topic names; the transport makes them plain


def consumer_group_heartbeat(broker: Broker, call: CallContext, group_id: str, parse: Callable[[], Heartbeat]) -> HeartbeatOutcome:
    """Join, heartbeat or leave a KIP-848 group (READ on the group). ``parse`` builds the request's values and may raise its errors."""
    try:
        _check_group(call, group_id, Operation.READ, "join")
        answer = broker.group_coordinator.heartbeat(call.qualify(group_id), parse(), TenantSubscriptions(broker.registry, call))
    except Exception as error:
        code, message = error_code_and_message(error)
        return HeartbeatOutcome(code, message)
    return HeartbeatOutcome(answer=answer)


@dataclass(frozen=True, slots=True)
class DescribeOutcome:
    group_id: str  # as the caller sent it
    error_code: int = NO_ERROR
    error_message: str = ""
    snapshot: GroupSnapshot | None = None  # qualified names inside


def describe_groups(broker: Broker, call: CallContext, group_ids: Sequence[str]) -> list[DescribeOutcome]:
    """Each group's state and members, in request order (DESCRIBE on the group); classic groups too (``snapshot.group_type``).

    A classic group's members carry what its consumer protocol says (subscribed topics and
    assigned partitions, qualified like a KIP-848 member's), read from the metadata and
    assignment bytes while the group is Stable; a member of another protocol type shows none.
    """
    request_parsing.require_nonempty(group_ids, "group id")
    outcomes = []
    for group_id in group_ids:
        try:
            _check_group(call, group_id, Operation.DESCRIBE, "describe")
            snapshot = broker.group_coordinator.describe(call.qualify(group_id))
            if snapshot.group_type == CLASSIC_GROUP_TYPE:
                snapshot = _classic_snapshot(broker, call, snapshot)
            elif snapshot.protocol_type == SIMPLE_PROTOCOL:
                snapshot = replace(snapshot, group_type=CLASSIC_GROUP_TYPE)  # offsets only: a classic group in Kafka, as ListGroups says
            outcomes.append(DescribeOutcome(group_id, snapshot=snapshot))
        except Exception as error:
            code, message = error_code_and_message(error)
            outcomes.append(DescribeOutcome(group_id, code, message))
    return outcomes


def _classic_snapshot(broker: Broker, call: CallContext, snapshot: GroupSnapshot) -> GroupSnapshot:
    """The classic group's snapshot with its members' consumer-protocol subscriptions and assignments (one read of the group)."""
    classic = broker.group_coordinator.classic.describe(snapshot.group_id)
    if classic is None:  # deleted since the first read (DeleteGroups, expiry, a KIP-848 group taking its id)
        return replace(snapshot, state=ClassicState.EMPTY, members=(), target={})
    members = tuple(_classic_member(classic, member, call) for member in classic.members)
    return replace(
        snapshot,
        state=classic.state,
        group_epoch=classic.generation,
        assignment_epoch=classic.generation,
        assignor_name=classic.protocol_name,
        members=members,
        target={member.member_id: member.assigned for member in members},
        protocol_type=classic.protocol_type,
    )


def _classic_member(group: ClassicDescription, member: ClassicMemberDescription, call: CallContext) -> Member:
    topics: tuple[str, ...] = ()
    assigned: frozenset[TopicPartition] = frozenset()
    if group.protocol_type == CONSUMER_PROTOCOL_TYPE:
        topics = tuple(sorted(set(subscribed_topics(member.metadata) or ()))) if member.metadata else ()
        assigned = frozenset((call.qualify(topic), partition) for topic, partition in assigned_partitions(member.assignment) or ())
    return Member(
        member.member_id,
        member.instance_id,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=topics,
        member_epoch=group.generation,
        assigned=assigned,
    )


def list_groups(broker: Broker, call: CallContext, states: Sequence[str] = (), types: Sequence[str] = ()) -> list[ListedGroup]:
    """The groups this broker coordinates that the caller may describe (plain ids), optionally only in ``states`` / of ``types``."""
    wanted = set()
    for name in states:
        if name.lower() not in STATES:
            raise InvalidRequestError(f"group state {name!r} does not exist: use one of {', '.join(sorted(STATES.values()))}")
        wanted.add(name.lower())
    wanted_types = set()
    for name in types:
        if name.lower() not in GROUP_TYPES:
            raise InvalidRequestError(f"group type {name!r} does not exist: use one of {', '.join(GROUP_TYPES)}")
        wanted_types.add(name.lower())
    listed = []
    for group in broker.group_coordinator.list_groups():
        if not call.owns(group.group_id) or (wanted and group.state.value.lower() not in wanted) or (wanted_types and group.group_type not in wanted_types):
            continue
        plain = call.plain(group.group_id)
        if call.may(Operation.DESCRIBE, ResourceType.GROUP, plain):
            listed.append(ListedGroup(plain, group.state, group.protocol_type, group.group_type))
    return listed


@dataclass(frozen=True, slots=True)
class ClassicDescribeOutcome:
    """A group as DescribeGroups shows it; a KIP-848 group too (members without metadata or assignment bytes)."""

    group_id: str  # as the caller sent it
    error_code: int = NO_ERROR
    error_message: str = ""
    state: str = GroupState.DEAD.value
    protocol_type: str = ""
    protocol_name: str = ""
    members: tuple[ClassicMemberDescription, ...] = ()


def describe_classic_groups(broker: Broker, call: CallContext, group_ids: Sequence[str]) -> list[ClassicDescribeOutcome]:
    """Each group for DescribeGroups, in request order (DESCRIBE on the group); a group that does not exist is Dead, as in Kafka."""
    outcomes = []
    for group_id in group_ids:
        try:
            _check_group(call, group_id, Operation.DESCRIBE, "describe")
            outcomes.append(_describe_classic(broker, group_id, call.qualify(group_id)))
        except Exception as error:
            code, message = error_code_and_message(error)
            outcomes.append(ClassicDescribeOutcome(group_id, code, message))
    return outcomes


def _describe_classic(broker: Broker, group_id: str, qualified: str) -> ClassicDescribeOutcome:
    classic = broker.group_coordinator.classic.describe(qualified)
    if classic is not None:
        return ClassicDescribeOutcome(
            group_id, state=classic.state.value, protocol_type=classic.protocol_type, protocol_name=classic.protocol_name, members=classic.members
        )
    try:
        snapshot = broker.group_coordinator.describe(qualified)
    except GroupIdNotFoundError:
        return ClassicDescribeOutcome(group_id)
    members = tuple(
        ClassicMemberDescription(member.member_id, member.instance_id, member.client_id, member.client_host, b"", b"") for member in snapshot.members
    )
    return ClassicDescribeOutcome(
        group_id, state=snapshot.state.value, protocol_type=snapshot.protocol_type, protocol_name=snapshot.assignor_name, members=members
    )


@dataclass(frozen=True, slots=True)
class GroupResult:
    group_id: str
    error_code: int = NO_ERROR
    error_message: str = ""


def delete_groups(broker: Broker, call: CallContext, group_ids: Sequence[str]) -> list[GroupResult]:
    """Delete groups without members, with their committed offsets (DELETE on the group), in request order."""
    request_parsing.require_nonempty(group_ids, "group id")
    request_parsing.require_unique(group_ids, "group id")
    results = []
    for group_id in group_ids:
        try:
            _check_group(call, group_id, Operation.DELETE, "delete")
            broker.group_coordinator.delete_group(call.qualify(group_id))
            results.append(GroupResult(group_id))
        except Exception as error:
            code, message = error_code_and_message(error)
            results.append(GroupResult(group_id, code, message))
    return results


# ---------------------------------------------------------------------- classic


@dataclass(frozen=True, slots=True)
class JoinOutcome:
    error_code: int = NO_ERROR
    error_message: str = ""
    member_id: str = ""  # the new id with MEMBER_ID_REQUIRED
    answer: JoinAnswer | None = None


Outcome = TypeVar("Outcome")
Answer = TypeVar("Answer")


class PendingGroupAnswer(Generic[Outcome]):
    """A JoinGroup or SyncGroup waiting for its rebalance phase (a ``partition_waitlist.Pending``).

    Done when the group completes its :class:`Completion` or when the phase's longest time
    (plus the coordinator timer's margin) passed; :meth:`outcome` then maps the result (none:
    REBALANCE_IN_PROGRESS, as before). Releasing only unsubscribes: the group keeps the
    completion until the phase ends, which bounds it.
    """

    def __init__(self, completion: Completion, outcome: Callable[[object | None], Outcome], monotonic: Callable[[], float] = time.monotonic) -> None:
        self._completion = completion
        self._outcome = outcome
        self._monotonic = monotonic
        self._deadline = monotonic() + completion.wait_ms / 1000.0 + WAIT_MARGIN_S

    @property
    def signal(self) -> WakeSignal:
        return self._completion.signal

    def advance(self) -> bool:
        return self._completion.done or self.remaining_seconds() <= 0

    def remaining_seconds(self) -> float:
        return self._deadline - self._monotonic()

    def release(self) -> None:
        self._completion.signal.subscribe(None)

    def outcome(self) -> Outcome:
        return self._outcome(self._completion.result)


def _answered(result: object) -> Completion:
    completion = Completion()
    completion.complete(result)
    return completion


def _expect(result: object | None, group: str, kind: type[Answer]) -> Answer:
    """The group's answer of ``kind``; raises its error, or REBALANCE_IN_PROGRESS when none came in time."""
    if result is None:
        raise RebalanceInProgressError(group)
    if isinstance(result, Exception):
        raise result
    assert isinstance(result, kind)
    return result


def join_group(broker: Broker, call: CallContext, group_id: str, request: JoinRequest) -> JoinOutcome:
    """One classic JoinGroup (READ on the group); blocks this thread until the rebalance completes, bounded by the rebalance timeout."""
    pending = start_join_group(broker, call, group_id, request)
    wait_blocking(pending)
    return pending.outcome()


def start_join_group(broker: Broker, call: CallContext, group_id: str, request: JoinRequest) -> PendingGroupAnswer[JoinOutcome]:
    """The JoinGroup :func:`join_group` runs, handed to the group; its caller drives the wait (see :class:`PendingGroupAnswer`)."""
    group = call.qualify(group_id)

    def outcome(result: object | None) -> JoinOutcome:
        try:
            answer = _expect(result, group, JoinAnswer)
        except MemberIdRequiredError as error:
            code, message = error_code_and_message(error)
            return JoinOutcome(code, message, member_id=error.member_id)
        except Exception as error:
            code, message = error_code_and_message(error)
            return JoinOutcome(code, message, member_id=request.member_id)
        return JoinOutcome(member_id=answer.member_id, answer=answer)

    try:
        _check_group(call, group_id, Operation.READ, "join")
        completion = broker.group_coordinator.classic.join(group, request)
    except Exception as error:
        completion = _answered(error)
    return PendingGroupAnswer(completion, outcome)


@dataclass(frozen=True, slots=True)
class SyncOutcome:
    error_code: int = NO_ERROR
    error_message: str = ""
    answer: SyncAnswer | None = None


@dataclass(frozen=True, slots=True)
class SyncRequest:
    member_id: str
    generation: int
    instance_id: str = ""
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: Mapping[str, bytes] = field(default_factory=dict)  # the leader's, member id -> assignment


def sync_group(broker: Broker, call: CallContext, group_id: str, request: SyncRequest) -> SyncOutcome:
    """One classic SyncGroup (READ on the group); blocks this thread until the leader's assignment, bounded by the sync deadline."""
    pending = start_sync_group(broker, call, group_id, request)
    wait_blocking(pending)
    return pending.outcome()


def start_sync_group(broker: Broker, call: CallContext, group_id: str, request: SyncRequest) -> PendingGroupAnswer[SyncOutcome]:
    """The SyncGroup :func:`sync_group` runs, handed to the group; its caller drives the wait (see :class:`PendingGroupAnswer`)."""
    group = call.qualify(group_id)

    def outcome(result: object | None) -> SyncOutcome:
        try:
            answer = _expect(result, group, SyncAnswer)
        except Exception as error:
            code, message = error_code_and_message(error)
            return SyncOutcome(code, message)
        return SyncOutcome(answer=answer)

    try:
        _check_group(call, group_id, Operation.READ, "sync with")
        completion = broker.group_coordinator.classic.sync(
            group, request.member_id, request.instance_id, request.generation, request.protocol_type, request.protocol_name, request.assignments
        )
    except Exception as error:
        completion = _answered(error)
    return PendingGroupAnswer(completion, outcome)


def classic_heartbeat(broker: Broker, call: CallContext, group_id: str, member_id: str, instance_id: str, generation: int) -> tuple[int, str]:
    """One classic Heartbeat (READ on the group): (error code, message)."""
    try:
        _check_group(call, group_id, Operation.READ, "heartbeat to")
        broker.group_coordinator.classic.heartbeat(call.qualify(group_id), member_id, instance_id, generation)
    except Exception as error:
        return error_code_and_message(error)
    return NO_ERROR, ""


@dataclass(frozen=True, slots=True)
class LeaveOutcome:
    error_code: int = NO_ERROR
    error_message: str = ""
    members: list[tuple[str, str, int, str]] = field(default_factory=list)  # (member id, instance id, error code, message)


def leave_group(broker: Broker, call: CallContext, group_id: str, members: Sequence[tuple[str, str]]) -> LeaveOutcome:
    """Members leaving a classic group (READ on the group); one result per (member id, instance id)."""
    try:
        _check_group(call, group_id, Operation.READ, "leave")
        if not members:
            raise InvalidRequestError("LeaveGroup must name at least one member")
        outcomes = broker.group_coordinator.classic.leave(call.qualify(group_id), members)
    except Exception as error:
        code, message = error_code_and_message(error)
        return LeaveOutcome(code, message)
    results = []
    for (member_id, instance_id), outcome in zip(members, outcomes):
        code, message = (NO_ERROR, "") if outcome is None else error_code_and_message(outcome)
        results.append((member_id, instance_id, code, message))
    first_error = next(((code, message) for _, _, code, message in results if code != NO_ERROR), (NO_ERROR, ""))
    return LeaveOutcome(first_error[0] if len(results) == 1 else NO_ERROR, first_error[1] if len(results) == 1 else "", results)


def dead_state(error_code: int) -> str:
    """The state a describe reports for a group it cannot show: Dead when it does not exist, as Kafka."""
    return GroupState.DEAD.value if error_code in (ErrorCode.GROUP_ID_NOT_FOUND, NO_ERROR) else ""
