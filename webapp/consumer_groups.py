"""A tenant's consumer groups as the REST API and the dashboard show and change them.

Everything goes through the SDK acting as the tenant (``webapp.tenant_clients``): the
AdminClient's group calls and ``weir.group_tools`` (lag, reset plans), the same code the
``weir groups`` command runs. Group ids are the tenant's plain names; the brokers qualify
them with the tenant, so another tenant's group is simply not found.

Errors come out typed, for both faces to answer alike: :class:`~webapp.accounts.errors.NotFound`
(no such group), :class:`~webapp.accounts.errors.Conflict` (the group has members: offsets
cannot change, the group cannot be deleted), :class:`~webapp.accounts.errors.InvalidInput`
(a reset names an unknown topic or partition) and :class:`BrokerError` (the brokers cannot
be reached or failed otherwise: HTTP 503, never a 500).

Authorization by role happens before these functions are called (viewers read, developers
change).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from webapp.accounts.facade import Conflict, InvalidInput, NotFound
from webapp.tenant_clients import REQUEST_TIMEOUT_SECONDS, BrokersUnreachable, admin_client
from weir import ConsumerGroupState, ConsumerGroupType
from weir.errors import ErrorCode, KafkaError, KafkaException
from weir.group_tools import OffsetChange, apply_offset_reset, consumer_group_lag, plan_offset_reset

# The reset targets a request may name (``ResetRequest.to``).
RESET_TARGETS = ("earliest", "latest", "timestamp", "offset", "offsets")
# Codes by which brokers refuse to change the offsets of, or delete, a group with members.
_ACTIVE_GROUP_CODES = frozenset({ErrorCode.NON_EMPTY_GROUP, ErrorCode.UNKNOWN_MEMBER_ID})
_UNKNOWN_TOPIC_CODES = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode._UNKNOWN_TOPIC, ErrorCode._UNKNOWN_PARTITION})


class BrokerError(Exception):
    """The brokers could not be reached, or failed in a way the caller cannot fix by changing
    the request; ``message`` is safe to show. ``retriable`` tells whether trying again may help."""

    def __init__(self, message: str, retriable: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.retriable = retriable


@dataclass(frozen=True)
class Coordinator:
    broker_id: int
    host: str
    port: int


@dataclass(frozen=True)
class Member:
    """A member and the partitions it owns now and is heading to (``(topic, partition)`` pairs, sorted)."""

    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: list[tuple[str, int]]
    target_assignment: list[tuple[str, int]]

    @property
    def is_moving(self) -> bool:
        return self.assignment != self.target_assignment


@dataclass(frozen=True)
class Group:
    """A described group; ``state`` is a ``weir.ConsumerGroupState`` name (``STABLE``, ``EMPTY``, ...),
    ``group_type`` a ``weir.ConsumerGroupType`` name: ``CONSUMER`` (KIP-848: the weir SDK,
    ``group.protocol=consumer``) or ``CLASSIC`` (JoinGroup/SyncGroup: stock Kafka clients by
    default; a group with committed offsets only is classic too, as in Kafka)."""

    group_id: str
    state: str
    is_simple: bool
    assignor: str
    coordinator: Coordinator | None
    members: list[Member]
    group_type: str = ConsumerGroupType.UNKNOWN.name


@dataclass(frozen=True)
class PartitionLag:
    """One partition of a group: ``committed_offset`` is None when the group has committed
    nothing there, ``end_offset`` when the partition's leader did not answer, and ``lag``
    when either is; ``owner`` is the member that owns the partition now, if any."""

    topic: str
    partition: int
    committed_offset: int | None
    end_offset: int | None
    lag: int | None
    owner: Member | None


@dataclass(frozen=True)
class GroupLag:
    partitions: list[PartitionLag]

    @property
    def total_lag(self) -> int:
        return sum(row.lag or 0 for row in self.partitions)

    @property
    def max_lag_partition(self) -> PartitionLag | None:
        """The partition with the largest lag (the first of equals), None without any lag known."""
        known = [row for row in self.partitions if row.lag is not None]
        return max(known, key=lambda row: row.lag or 0) if known else None


@dataclass(frozen=True)
class GroupOverview:
    """A row of the groups list: the group, and its total lag when it was asked for and known."""

    group: Group
    total_lag: int | None = None


@dataclass(frozen=True)
class ResetRequest:
    """Where to move a group's offsets.

    ``to``: ``earliest`` / ``latest`` / ``timestamp`` (``timestamp_ms``: the first offset at
    or after it) / ``offset`` (``offset`` in every partition) over every partition of
    ``topics``; or ``offsets``: exactly ``offsets`` ({(topic, partition): offset}).
    ``partitions``: with a target over ``topics``, only these partition numbers (every topic
    must have each of them); empty: all partitions.
    """

    to: str
    topics: list[str] = field(default_factory=list)
    timestamp_ms: int | None = None
    offset: int | None = None
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    partitions: tuple[int, ...] = ()


@dataclass(frozen=True)
class PlannedChange:
    topic: str
    partition: int
    current_offset: int | None  # None: nothing committed there yet
    new_offset: int


@dataclass(frozen=True)
class ResetOutcome:
    """The plan (applied or not) and how many members the group had when it was made."""

    changes: list[PlannedChange]
    applied: bool
    active_members: int


# ---------------------------------------------------------------------- reads


def list_groups(tenant_public_id: str, *, states: set[str] | None = None, types: set[str] | None = None, with_lag: bool = False) -> list[GroupOverview]:
    """The tenant's groups by id, described (one batched call); with their total lag when
    ``with_lag`` (a few calls per group). ``states`` filters by state names, ``types`` by
    ``weir.ConsumerGroupType`` names (``CONSUMER``, ``CLASSIC``)."""
    wanted = {ConsumerGroupState[name] for name in states} if states else None
    wanted_types = {ConsumerGroupType[name] for name in types} if types else None
    with _admin(tenant_public_id, "Listing the groups") as admin:
        result = admin.list_consumer_groups(request_timeout=REQUEST_TIMEOUT_SECONDS, states=wanted, types=wanted_types).result(timeout=REQUEST_TIMEOUT_SECONDS)
        group_ids = sorted({listing.group_id for listing in result.valid})
        groups = _describe_many(admin, group_ids)
        overviews = []
        for group_id in group_ids:
            group = groups.get(group_id)
            if group is None:
                continue  # deleted between the listing and the description
            total = _lag(admin, group_id, group).total_lag if with_lag else None
            overviews.append(GroupOverview(group, total))
    return overviews


def get_group(tenant_public_id: str, group_id: str) -> Group:
    """The group with its members; NotFound when the tenant has no such group."""
    with _admin(tenant_public_id, "Describing the group") as admin:
        group = _describe(admin, group_id)
    if group is None:
        raise NotFound(f"Consumer group '{group_id}' does not exist.")
    return group


def get_group_lag(tenant_public_id: str, group_id: str) -> tuple[Group | None, GroupLag]:
    """The group (None when only committed offsets are left of it) and each of its
    partitions' committed offset, end offset, lag and owner; NotFound when neither exists."""
    with _admin(tenant_public_id, "Reading the group's lag") as admin:
        group = _describe(admin, group_id)
        lag = _lag(admin, group_id, group)
    if group is None and not lag.partitions:
        raise NotFound(f"Consumer group '{group_id}' does not exist.")
    return group, lag


# ---------------------------------------------------------------------- changes


def plan_reset(tenant_public_id: str, group_id: str, request: ResetRequest) -> ResetOutcome:
    """The change ``request`` would make (a dry run: nothing is written)."""
    with _admin(tenant_public_id, "Planning the reset") as admin:
        members = _member_count(admin, group_id)
        changes = _plan(admin, group_id, request)
    return ResetOutcome(_planned(changes), applied=False, active_members=members)


def apply_reset(tenant_public_id: str, group_id: str, request: ResetRequest) -> ResetOutcome:
    """Plan ``request`` and write the new offsets. Conflict (nothing written) while the group
    has members: Kafka lets only an empty group's offsets change."""
    with _admin(tenant_public_id, "Resetting the offsets") as admin:
        members = _member_count(admin, group_id)
        if members:
            raise _active_group(group_id, members, "resetting its offsets")
        changes = _plan(admin, group_id, request)
        try:
            apply_offset_reset(admin, group_id, changes, timeout=REQUEST_TIMEOUT_SECONDS)
        except KafkaException as error:
            if error.args[0].code() in _ACTIVE_GROUP_CODES:
                raise Conflict(f"Consumer group '{group_id}' has active members: {error.args[0].str()}") from None
            raise
    return ResetOutcome(_planned(changes), applied=True, active_members=0)


def delete_group(tenant_public_id: str, group_id: str) -> None:
    """Delete an empty group and its committed offsets; NotFound / Conflict (members) otherwise."""
    with _admin(tenant_public_id, "Deleting the group") as admin:
        future = admin.delete_consumer_groups([group_id], request_timeout=REQUEST_TIMEOUT_SECONDS)[group_id]
        try:
            future.result(timeout=REQUEST_TIMEOUT_SECONDS)
        except KafkaException as error:
            code = error.args[0].code()
            if code == ErrorCode.GROUP_ID_NOT_FOUND:
                raise NotFound(f"Consumer group '{group_id}' does not exist.") from None
            if code == ErrorCode.NON_EMPTY_GROUP:
                raise _active_group(group_id, _member_count(admin, group_id), "deleting it") from None
            raise


# ---------------------------------------------------------------------- helpers


@contextmanager
def _admin(tenant_public_id: str, doing: str) -> Iterator[Any]:
    """The tenant's AdminClient; SDK failures leave as BrokerError / InvalidInput."""
    try:
        with admin_client(tenant_public_id) as admin:
            yield admin
    except BrokersUnreachable as error:
        raise BrokerError(error.message) from None
    except KafkaException as error:
        raise _translated(error.args[0], doing) from None


def _translated(error: KafkaError, doing: str) -> Exception:
    code = error.code()
    if code in _UNKNOWN_TOPIC_CODES:
        return InvalidInput.for_field("topics", f"{error.str()} (no such topic or partition).")
    if code == ErrorCode.INVALID_TOPIC_EXCEPTION:
        return InvalidInput.for_field("topics", f"{error.str()} (not a valid topic name).")
    if code == ErrorCode.INVALID_GROUP_ID:
        return InvalidInput.for_field("consumer_group_id", error.str())
    return BrokerError(f"{doing} failed: {error.name()}: {error.str()}", error.retriable())


def _active_group(group_id: str, members: int, doing: str) -> Conflict:
    noun = "member" if members == 1 else "members"
    return Conflict(f"Consumer group '{group_id}' has {members} active {noun}: stop {'it' if members == 1 else 'them'} before {doing}.")


def _describe(admin: Any, group_id: str) -> Group | None:
    return _describe_many(admin, [group_id]).get(group_id)


def _describe_many(admin: Any, group_ids: list[str]) -> dict[str, Group]:
    """Descriptions by group id; groups that do not exist (or are dead) are left out."""
    if not group_ids:
        return {}
    futures = admin.describe_consumer_groups(group_ids, request_timeout=REQUEST_TIMEOUT_SECONDS)
    groups = {}
    for group_id, future in futures.items():
        try:
            description = future.result(timeout=REQUEST_TIMEOUT_SECONDS)
        except KafkaException as error:
            if error.args[0].code() == ErrorCode.GROUP_ID_NOT_FOUND:
                continue
            raise
        if description.state != ConsumerGroupState.DEAD:
            groups[group_id] = _group(description)
    return groups


def _group(description: Any) -> Group:
    coordinator = description.coordinator
    members = [
        Member(
            member_id=member.member_id,
            instance_id=member.group_instance_id or None,
            client_id=member.client_id,
            host=member.host,
            assignment=_pairs(member.assignment),
            target_assignment=_pairs(member.target_assignment if member.target_assignment is not None else member.assignment),
        )
        for member in description.members
    ]
    return Group(
        group_id=description.group_id,
        state=description.state.name,
        is_simple=bool(description.is_simple_consumer_group),
        assignor=description.partition_assignor or "",
        coordinator=Coordinator(coordinator.id, coordinator.host, coordinator.port) if coordinator is not None else None,
        members=sorted(members, key=lambda member: (member.client_id, member.member_id)),
        group_type=description.type.name if isinstance(description.type, ConsumerGroupType) else ConsumerGroupType.UNKNOWN.name,
    )


def _pairs(assignment: Any) -> list[tuple[str, int]]:
    return sorted((partition.topic, partition.partition) for partition in (assignment.topic_partitions if assignment is not None else []))


def _lag(admin: Any, group_id: str, group: Group | None) -> GroupLag:
    try:
        rows = consumer_group_lag(admin, group_id, timeout=REQUEST_TIMEOUT_SECONDS)
    except KafkaException as error:
        if error.args[0].code() == ErrorCode.GROUP_ID_NOT_FOUND:
            return GroupLag([])
        raise
    owners = {pair: member for member in (group.members if group else []) for pair in member.assignment}
    partitions = [
        PartitionLag(
            topic=row.topic,
            partition=row.partition,
            committed_offset=row.committed_offset if row.committed_offset >= 0 else None,
            end_offset=row.end_offset if row.end_offset >= 0 else None,
            lag=row.lag,
            owner=owners.get((row.topic, row.partition)),
        )
        for row in rows
    ]
    return GroupLag(sorted(partitions, key=lambda row: (row.topic, row.partition)))


def _member_count(admin: Any, group_id: str) -> int:
    group = _describe(admin, group_id)
    return len(group.members) if group is not None else 0


def _plan(admin: Any, group_id: str, request: ResetRequest) -> list[OffsetChange]:
    if request.to not in RESET_TARGETS:
        raise InvalidInput.for_field("to", f"Unknown reset target {request.to!r}; expected one of {', '.join(RESET_TARGETS)}.")
    topics = list(dict.fromkeys(request.topics))
    target: Any
    if request.to == "offsets":
        if not request.offsets:
            raise InvalidInput.for_field("offsets", "Name at least one partition and its new offset.")
        target, topics = dict(request.offsets), sorted({topic for topic, _ in request.offsets})
    elif not topics:
        raise InvalidInput.for_field("topics", "Name at least one topic whose offsets to reset.")
    elif request.to == "timestamp":
        if request.timestamp_ms is None or request.timestamp_ms < 0:
            raise InvalidInput.for_field("timestamp", "A time at or after 1970-01-01T00:00:00Z is needed to reset to a time.")
        target = ("timestamp", request.timestamp_ms)
    elif request.to == "offset":
        if request.offset is None or request.offset < 0:
            raise InvalidInput.for_field("offset", "An offset of at least 0 is needed.")
        target = _same_offset_everywhere(admin, topics, request.offset)
    else:
        target = request.to
    changes = plan_offset_reset(admin, group_id, topics=topics, to=target, timeout=REQUEST_TIMEOUT_SECONDS)
    return _chosen_partitions(changes, request.partitions) if request.partitions and request.to != "offsets" else changes


def _chosen_partitions(changes: list[OffsetChange], partitions: tuple[int, ...]) -> list[OffsetChange]:
    """The changes of the chosen partition numbers; InvalidInput names a topic that lacks one."""
    by_topic: dict[str, set[int]] = {}
    for change in changes:
        by_topic.setdefault(change.topic, set()).add(change.partition)
    missing = [
        f"{topic} has no partition {number} (it has 0-{max(numbers)})"
        for topic, numbers in sorted(by_topic.items())
        for number in partitions
        if number not in numbers
    ]
    if missing:
        raise InvalidInput.for_field("partitions", "; ".join(missing) + ".")
    return [change for change in changes if change.partition in partitions]


def _same_offset_everywhere(admin: Any, topics: list[str], offset: int) -> dict[tuple[str, int], int]:
    metadata = admin.list_topics(timeout=REQUEST_TIMEOUT_SECONDS)
    missing = [topic for topic in topics if topic not in metadata.topics]
    if missing:
        raise InvalidInput.for_field("topics", f"No such topic: {', '.join(missing)}.")
    return {(topic, partition): offset for topic in topics for partition in sorted(metadata.topics[topic].partitions)}


def _planned(changes: list[OffsetChange]) -> list[PlannedChange]:
    planned = [
        PlannedChange(change.topic, change.partition, change.current_offset if change.current_offset >= 0 else None, change.new_offset) for change in changes
    ]
    return sorted(planned, key=lambda change: (change.topic, change.partition))
