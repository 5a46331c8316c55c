"""The consumer groups of one led ``__consumer_offsets`` partition, rebuilt from its log and then kept current.

One :class:`LoadedGroups` belongs to each leadership of an offsets partition (it lives in
that leadership's ``OffsetsPartition``): the loader replays the partition's group records
into it (:meth:`replay`, in log order), and afterwards the coordinator replaces a group
wholesale after each change it has written (:meth:`put`). Groups are never changed in place
once stored, so a reader holding one sees a consistent state without a lock.

Thread-safety: :meth:`lock` gives the lock of a group (striped: a fixed pool of locks shared
by hash), which the coordinator holds from reading a group to storing its next state,
across the write of its records; the offset store holds it around commits of the group.
Reads (:meth:`get`, :meth:`group_ids`) are single dict operations and need no lock.
Replay runs on the loader thread before the partition serves anyone.
"""

from __future__ import annotations

import threading
from dataclasses import replace

from broker_nodes.coordinator.groups.group import ConsumerGroup
from broker_nodes.coordinator.groups.member import Member, MemberState
from broker_nodes.coordinator.groups.records import (
    CurrentAssignmentValue,
    GroupMetadataValue,
    GroupRecord,
    PartitionMetadataValue,
    RecordKind,
    TargetMemberValue,
    TargetMetadataValue,
)

LOCK_STRIPES = 64  # group locks per offsets partition; groups that share one just wait for each other


class LoadedGroups:
    """See the module docstring."""

    def __init__(self) -> None:
        self._groups: dict[str, ConsumerGroup] = {}
        self._locks = [threading.Lock() for _ in range(LOCK_STRIPES)]

    def lock(self, group_id: str) -> threading.Lock:
        return self._locks[hash(group_id) % LOCK_STRIPES]

    def get(self, group_id: str) -> ConsumerGroup | None:
        return self._groups.get(group_id)

    def group_ids(self) -> list[str]:
        return list(self._groups)

    def put(self, group: ConsumerGroup) -> None:
        """Store a group's new state; the caller holds its lock and has written its records."""
        self._groups[group.group_id] = group

    def remove(self, group_id: str) -> None:
        """Forget a deleted group; the caller holds its lock and has written its tombstones."""
        self._groups.pop(group_id, None)

    # ------------------------------------------------------------------ loading

    def replay(self, record: GroupRecord) -> None:
        """Apply one record read from the log; records come in log order."""
        group = self._groups.get(record.group_id)
        if record.value is None:
            if group is not None:
                self._replay_tombstone(group, record)
            return
        if group is None:
            group = self._groups[record.group_id] = ConsumerGroup(record.group_id)
        value = record.value
        if isinstance(value, GroupMetadataValue):
            group.group_epoch = value.epoch
            group.empty_since_ms = value.empty_since_ms
        elif isinstance(value, PartitionMetadataValue):
            group.subscription_metadata = dict(value.topics)
        elif isinstance(value, TargetMetadataValue):
            group.assignment_epoch = value.assignment_epoch
        elif isinstance(value, TargetMemberValue):
            group.target[record.member_id] = value.partitions
        elif isinstance(value, Member):
            known = group.members.get(record.member_id)
            group.members[record.member_id] = (
                value
                if known is None
                else replace(
                    value,
                    member_epoch=known.member_epoch,
                    previous_member_epoch=known.previous_member_epoch,
                    state=known.state,
                    assigned=known.assigned,
                    pending_revocation=known.pending_revocation,
                )
            )
        elif isinstance(value, CurrentAssignmentValue):
            known = group.members.get(record.member_id) or Member(record.member_id)
            group.members[record.member_id] = replace(
                known,
                member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch,
                state=value.state,
                assigned=value.assigned,
                pending_revocation=value.pending_revocation,
            )

    def _replay_tombstone(self, group: ConsumerGroup, record: GroupRecord) -> None:
        if record.kind == RecordKind.GROUP_METADATA:
            del self._groups[group.group_id]
        elif record.kind == RecordKind.PARTITION_METADATA:
            group.subscription_metadata = {}
        elif record.kind == RecordKind.MEMBER_METADATA:
            group.members.pop(record.member_id, None)
        elif record.kind == RecordKind.TARGET_MEMBER:
            group.target.pop(record.member_id, None)
        elif record.kind == RecordKind.CURRENT_ASSIGNMENT and record.member_id in group.members:
            group.members[record.member_id] = replace(
                group.members[record.member_id], state=MemberState.STABLE, assigned=frozenset(), pending_revocation=frozenset()
            )

    def start_timers(self, now_ms: int) -> None:
        """Once loaded: every member gets a full session timeout from now (it may be heartbeating to the old coordinator)."""
        for group in self._groups.values():
            group.start_timers(now_ms)
