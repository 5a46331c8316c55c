"""One group member and its reconciliation towards its target assignment (Kafka's CurrentAssignmentBuilder).

A member owns ``assigned`` and, while it revokes, ``pending_revocation``; no other member may
be given a partition in either set. When the group's target assignment (epoch E) differs
from what a member owns, :func:`reconcile` moves it in steps:

1. It keeps ``assigned ∩ target``. If it owns partitions outside its target, those move to
   ``pending_revocation``, it stays at its epoch in UNREVOKED_PARTITIONS and is told its
   assignment without them; it must report them gone (``owned``) before anything else.
2. Then it moves to epoch E and gets the partitions of its target that no other member owns
   (reported or pending revocation); those still owned elsewhere wait in
   UNRELEASED_PARTITIONS and are handed over on a later heartbeat once released.

So a partition changes hands only after its previous owner no longer owns it, and a
member's epoch only grows. Immutable: every change is a new :class:`Member`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace

TopicPartition = tuple[str, int]

LEAVE_EPOCH = -1  # a member leaving the group
STATIC_LEAVE_EPOCH = -2  # a static member leaving for now: its partitions wait for it for the session timeout
JOIN_EPOCH = 0  # a member joining (or rejoining after being fenced)


class MemberState(enum.IntEnum):
    """Kafka's MemberState values (stored in the current assignment record)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2


@dataclass(frozen=True, slots=True)
class Member:
    """A member: what it subscribes to (stored in its metadata record) and what it owns (current assignment record)."""

    member_id: str
    instance_id: str = ""  # group.instance.id; "" for a dynamic member
    rack_id: str = ""
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()  # as the member sent them (plain), sorted
    subscribed_topic_regex: str = ""  # over the tenant's plain names; "" for none
    server_assignor: str = ""  # "" for the group's choice
    rebalance_timeout_ms: int = 300_000
    session_timeout_ms: int = 45_000
    subscribed_topics: frozenset[str] = field(default_factory=frozenset)  # names and regex resolved (qualified)
    member_epoch: int = JOIN_EPOCH
    previous_member_epoch: int = JOIN_EPOCH
    state: MemberState = MemberState.STABLE
    assigned: frozenset[TopicPartition] = field(default_factory=frozenset)
    pending_revocation: frozenset[TopicPartition] = field(default_factory=frozenset)

    @property
    def owned(self) -> frozenset[TopicPartition]:
        """Every partition no other member may be given while this one holds it."""
        return self.assigned | self.pending_revocation

    def metadata(self) -> tuple[object, ...]:
        """The fields of the member metadata record (a change writes one)."""
        return (
            self.instance_id,
            self.rack_id,
            self.client_id,
            self.client_host,
            self.subscribed_topic_names,
            self.subscribed_topic_regex,
            self.server_assignor,
            self.rebalance_timeout_ms,
            self.session_timeout_ms,
            self.subscribed_topics,
        )

    def current_assignment(self) -> tuple[object, ...]:
        """The fields of the current assignment record (a change writes one)."""
        return (self.member_epoch, self.previous_member_epoch, self.state, self.assigned, self.pending_revocation)

    def with_epoch(self, epoch: int, *, state: MemberState, assigned: frozenset[TopicPartition], pending_revocation: frozenset[TopicPartition]) -> Member:
        """This member at ``epoch`` with its new assignment, remembering the epoch it had (a member may retry with it after a lost answer)."""
        previous = self.member_epoch if epoch != self.member_epoch else self.previous_member_epoch
        return replace(self, member_epoch=epoch, previous_member_epoch=previous, state=state, assigned=assigned, pending_revocation=pending_revocation)


def _still_owns(revoking: Collection[TopicPartition], owned: frozenset[TopicPartition] | None) -> bool:
    """Whether the member may still own any of ``revoking``; it may when it did not say what it owns."""
    if owned is None:
        return True
    return any(topic_partition in owned for topic_partition in revoking)


def reconcile(
    member: Member,
    target_epoch: int,
    target: frozenset[TopicPartition],
    owned: frozenset[TopicPartition] | None,
    owned_by_another: Callable[[TopicPartition], bool],
) -> Member:
    """The member's next state towards ``target`` at ``target_epoch`` (see the module docstring).

    ``owned`` is what the member reported owning in this heartbeat (None: not reported);
    ``owned_by_another`` tells whether another member still owns a partition.
    """
    if member.state == MemberState.STABLE and member.member_epoch == target_epoch:
        return member
    if member.state == MemberState.UNREVOKED_PARTITIONS and _still_owns(member.pending_revocation, owned):
        return member
    # Partitions of topics the member no longer subscribes to are not its to own any more.
    wanted = frozenset(topic_partition for topic_partition in target if topic_partition[0] in member.subscribed_topics)
    keep = member.assigned & wanted
    revoking = member.assigned - keep
    waiting = wanted - keep
    unreleased = frozenset(
        topic_partition for topic_partition in waiting if topic_partition not in member.pending_revocation and owned_by_another(topic_partition)
    )
    if revoking and _still_owns(revoking, owned):
        return member.with_epoch(member.member_epoch, state=MemberState.UNREVOKED_PARTITIONS, assigned=keep, pending_revocation=revoking)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.with_epoch(target_epoch, state=state, assigned=keep | (waiting - unreleased), pending_revocation=frozenset())
