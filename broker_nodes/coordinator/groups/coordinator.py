"""The group coordinator: every consumer group whose ``__consumer_offsets`` partition this broker leads.

Groups live with the committed offsets of their partition (``OffsetsPartition.groups``) and
follow its leadership: loaded from the log when this broker becomes leader, dropped when it
stops (members then get NOT_COORDINATOR, find the new coordinator and go on with their
member id and epoch, which it knows from the records).

Every change follows one path (:meth:`GroupCoordinator._change`): under the group's lock,
work on a copy of the group, write the records of the difference (``records.group_records``)
through the offset store's acks=all append, and only then keep the copy and answer. A
change that fails to be written leaves the group as it was. Heartbeats that change nothing
persistent (the usual steady heartbeat) write nothing.

Timers: :meth:`expire_members` (run every ``TIMER_INTERVAL_SECONDS``) removes members past
their session or rebalance timeout; :meth:`expire_offsets` (offsets.retention.check.interval.ms)
expires offsets and then deletes groups that stayed empty, without offsets, for
offsets.retention.minutes, and Empty classic groups without offsets left (Kafka's
``cleanupGroupMetadata``: such a group goes at the first check that finds it so).

Thread-safe: calls for different groups run in parallel; calls for one group in turn.
"""

from __future__ import annotations

import base64
import functools
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from broker_nodes.clock import Clock
from broker_nodes.coordinator.groups import classic_records
from broker_nodes.coordinator.groups.classic import ClassicSettings, ClassicState
from broker_nodes.coordinator.groups.classic_errors import GroupSubscribedToTopicError
from broker_nodes.coordinator.groups.classic_groups import ClassicGroups
from broker_nodes.coordinator.groups.errors import GroupIdNotFoundError, NonEmptyGroupError, UnknownMemberIdError
from broker_nodes.coordinator.groups.group import (
    ConsumerGroup,
    GroupSettings,
    GroupState,
    Heartbeat,
    HeartbeatAnswer,
    SubscriptionResolver,
)
from broker_nodes.coordinator.groups.member import JOIN_EPOCH, Member, TopicPartition
from broker_nodes.coordinator.groups.records import group_records
from broker_nodes.coordinator.groups.subscriptions import registry_topics
from broker_nodes.coordinator.offset_store import CoordinatorLoadingError, InvalidGroupIdError, NotCoordinatorError, OffsetCommitEntry, OffsetStore
from broker_nodes.coordinator.offsets_partition import OffsetsPartition
from broker_nodes.topic_registry import TopicRegistry
from log_formats.offset_commit_records import OffsetCommitKey, encode_offset_commit_key

logger = logging.getLogger(__name__)

TIMER_INTERVAL_SECONDS = 0.1  # how often session and rebalance timeouts are checked
CONSUMER_PROTOCOL = "consumer"  # ListGroups' protocol type of a group with members' state
CLASSIC_GROUP_TYPE = "classic"  # ListGroups v5's group type of a JoinGroup/SyncGroup group (KIP-848 ones are "consumer")
SIMPLE_PROTOCOL = ""  # ... of a group that only has committed offsets (assign()-style consumers)

Result = TypeVar("Result")


def new_member_id() -> str:
    """A member id as Kafka makes them: a random UUID in URL-safe base64 (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


def new_classic_member_id(client_id: str) -> str:
    """A classic member id as Kafka makes them: the client id, a dash and a random UUID."""
    return f"{client_id}-{uuid.uuid4()}"


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """One group as ConsumerGroupDescribe shows it."""

    group_id: str
    state: GroupState | ClassicState
    group_epoch: int  # a classic group's generation
    assignment_epoch: int
    assignor_name: str  # a classic group's protocol (the client-side assignor)
    members: tuple[Member, ...]  # by member id
    target: dict[str, frozenset[TopicPartition]]
    protocol_type: str
    group_type: str = CONSUMER_PROTOCOL


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    state: GroupState | ClassicState
    protocol_type: str
    group_type: str = CONSUMER_PROTOCOL


class GroupCoordinator:
    """See the module docstring."""

    def __init__(
        self,
        offset_store: OffsetStore,
        registry: TopicRegistry,
        clock: Clock,
        settings: GroupSettings,
        *,
        member_ids: Callable[[], str] = new_member_id,
        classic_settings: ClassicSettings | None = None,
        classic_member_ids: Callable[[str], str] = new_classic_member_id,
    ) -> None:
        self._offsets = offset_store
        self._topics = registry_topics(registry)
        self._clock = clock
        self.settings = settings
        self._member_ids = member_ids
        # Classic (JoinGroup/SyncGroup) groups: in memory, each completed generation in the log (classic_records), under the same per-group locks.
        self.classic = ClassicGroups(offset_store, clock, classic_settings or ClassicSettings(), classic_member_ids, self._drop_empty_consumer_group)

    # ------------------------------------------------------------------ the protocol

    def heartbeat(self, group_id: str, request: Heartbeat, resolve: SubscriptionResolver) -> HeartbeatAnswer:
        """One ConsumerGroupHeartbeat of the (qualified) group; the group errors, or the coordinator errors, otherwise."""
        now = self._clock.milliseconds()
        partition = self._offsets.coordinating(group_id)
        replacing: list[bool] = []  # set when the heartbeat creates the group in place of an Empty classic one

        def change(group: ConsumerGroup) -> HeartbeatAnswer:
            # Under the group's lock, like every classic change: a classic group with members refuses the heartbeat.
            if self.classic.replaced_by_consumer_group(partition, group_id):
                replacing.append(True)
            return group.heartbeat(request, now, self.settings, resolve, self._topics, self._member_ids)

        return self._change(
            group_id,
            change,
            create=request.member_epoch == JOIN_EPOCH,
            missing=lambda: UnknownMemberIdError(group_id, request.member_id),
            replacing_classic=replacing,
        )

    def describe(self, group_id: str) -> GroupSnapshot:
        """The group's state; GroupIdNotFoundError when it has neither members' state nor committed offsets."""
        partition = self._offsets.coordinating(group_id)
        group = partition.groups.get(group_id)
        if group is None:
            classic = self.classic.describe(group_id)
            if classic is not None:
                members = tuple(
                    Member(member.member_id, member.instance_id, client_id=member.client_id, client_host=member.client_host) for member in classic.members
                )
                return GroupSnapshot(
                    group_id,
                    classic.state,
                    classic.generation,
                    classic.generation,
                    classic.protocol_name,
                    members,
                    {},
                    classic.protocol_type,
                    CLASSIC_GROUP_TYPE,
                )
            if not partition.committed(group_id):
                raise GroupIdNotFoundError(group_id)
            return GroupSnapshot(group_id, GroupState.EMPTY, 0, 0, "", (), {}, SIMPLE_PROTOCOL)
        members = tuple(group.members[member_id] for member_id in sorted(group.members))
        return GroupSnapshot(
            group_id, group.state, group.group_epoch, group.assignment_epoch, group.assignor_name(self.settings), members, dict(group.target), CONSUMER_PROTOCOL
        )

    def list_groups(self) -> list[ListedGroup]:
        """Every group of the offsets partitions this broker leads and has loaded, by group id."""
        listed = []
        for partition in self._offsets.led_partitions():
            classic = {group.group_id: group for group in self.classic.listed(partition)}
            group_ids = set(partition.groups.group_ids()) | set(partition.groups_with_commits()) | set(classic)
            for group_id in group_ids:
                group = partition.groups.get(group_id)
                if group is None and group_id in classic:
                    listed.append(ListedGroup(group_id, classic[group_id].state, classic[group_id].protocol_type, CLASSIC_GROUP_TYPE))
                elif group is None:
                    listed.append(ListedGroup(group_id, GroupState.EMPTY, SIMPLE_PROTOCOL, CLASSIC_GROUP_TYPE))  # Kafka's type of an offsets-only group
                else:
                    listed.append(ListedGroup(group_id, group.state, CONSUMER_PROTOCOL))
        return sorted(listed, key=lambda entry: entry.group_id)

    def delete_group(self, group_id: str) -> None:
        """Delete a group without members: tombstones for its state and every committed offset.

        NonEmptyGroupError while it has members (a static member that left for now counts);
        GroupIdNotFoundError when there is nothing to delete (an Empty classic group is something).
        """
        partition = self._offsets.coordinating(group_id)
        with partition.groups.lock(group_id):
            group = partition.groups.get(group_id)
            commits = sorted(partition.committed(group_id))
            classic_members = self.classic.member_count(partition, group_id)
            if classic_members:
                raise NonEmptyGroupError(group_id, classic_members)
            if group is None and not commits and not self.classic.has_group(partition, group_id):
                raise GroupIdNotFoundError(group_id)
            if group is not None and group.members:
                raise NonEmptyGroupError(group_id, len(group.members))
            self._delete_locked(partition, group_id, group, commits, classic_tombstone=True)
            self.classic.forget(partition, group_id)
        logger.info("group %s deleted with %d committed offsets", group_id, len(commits))

    def delete_offsets(self, group_id: str, topic_partitions: list[TopicPartition]) -> list[Exception | None]:
        """OffsetDelete: remove committed offsets of the (qualified) group with tombstones; one outcome per partition.

        A partition of a topic the group's members subscribe to is refused (GROUP_SUBSCRIBED_TO_TOPIC);
        GroupIdNotFoundError when there is no such group (neither members, offsets nor an Empty
        classic group); an Empty classic group goes with its last offset. Under the group's lock,
        so no commit of the group runs in between.
        """
        partition = self._offsets.coordinating(group_id)
        with partition.groups.lock(group_id):
            group = partition.groups.get(group_id)
            committed = partition.committed(group_id)
            subscribed = self.classic.subscribed_topics(partition, group_id)
            if group is not None and group.members:
                subscribed = frozenset(topic for member in group.members.values() for topic in member.subscribed_topics)
            if subscribed is None and group is None and not committed and not self.classic.has_group(partition, group_id):
                raise GroupIdNotFoundError(group_id)
            outcomes: list[Exception | None] = [
                GroupSubscribedToTopicError(group_id, topic) if subscribed and topic in subscribed else None for topic, _ in topic_partitions
            ]
            deleting = sorted({item for item, outcome in zip(topic_partitions, outcomes) if outcome is None and item in committed})
            # An Empty classic group goes with its last offset, in the same write (Kafka's cleanupGroupMetadata after OffsetDelete).
            dropping_classic = bool(deleting) and len(deleting) == len(committed) and self._classic_group_goes(partition, group_id)
            if deleting:
                records = [(encode_offset_commit_key(OffsetCommitKey(group_id, topic, number)), None) for topic, number in deleting]
                if dropping_classic:
                    records.append((classic_records.encode_key(group_id), None))
                self._offsets.write_records(partition, group_id, records)
                with partition.lock:
                    partition.remove((group_id, item) for item in deleting)
                if dropping_classic:
                    self.classic.forget(partition, group_id)
                    logger.info("classic group %s deleted with its last committed offsets", group_id)
        if deleting:
            logger.info("group %s: %d committed offsets deleted", group_id, len(deleting))
        return outcomes

    def _drop_empty_consumer_group(self, partition: OffsetsPartition, group_id: str) -> None:
        """A classic join converts an empty KIP-848 group: its records go, its offsets stay (the caller holds the group's lock)."""
        self._delete_locked(partition, group_id, partition.groups.get(group_id), [])

    def commit_offsets(
        self, group_id: str, member_id: str, generation: int, entries: list[OffsetCommitEntry], *, instance_id: str = ""
    ) -> list[Exception | None]:
        """Store offsets of the (qualified) group, checked against its members as its kind of group requires (see ``OffsetStore.commit``).

        A classic group's member commits with its generation (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
        REBALANCE_IN_PROGRESS otherwise); ``generation`` is a KIP-848 member's member epoch. The
        classic check and the append are two steps (the offset store takes the group's lock
        itself), so the checked generation is held until the commit is stored: the group's next
        generation waits for it.
        """
        if not group_id:
            raise InvalidGroupIdError(group_id)
        partition = self._offsets.coordinating(group_id)
        with partition.groups.lock(group_id):
            classic = self.classic.begin_commit(partition, group_id, member_id, instance_id, generation)
        if classic is None:
            return self._offsets.commit(group_id, member_id, entries, member_epoch=generation)
        try:
            return self._offsets.commit(group_id, "", entries)  # checked above; the offset store sees a commit from outside any member
        finally:
            self.classic.end_commit(partition, classic)

    def commit_transactional_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        generation: int,
        entries: list[OffsetCommitEntry],
        *,
        instance_id: str = "",
    ) -> list[Exception | None]:
        """TxnOffsetCommit: store offsets of the (qualified) group as part of the producer's transaction (KIP-447).

        The member is checked as Kafka checks transactional commits (a classic group's
        generation, a KIP-848 member's epoch, the static member's instance id: ILLEGAL_GENERATION,
        UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID); a producer naming no member is not checked
        against the group. The offsets are visible once the transaction commits (see
        ``OffsetStore.commit_transactional``). The group's lock is held until they are stored.
        """
        if not group_id:
            raise InvalidGroupIdError(group_id)
        partition = self._offsets.coordinating(group_id)
        with partition.groups.lock(group_id):
            if not self.classic.check_transactional_commit(partition, group_id, member_id, instance_id, generation):
                group = partition.groups.get(group_id)
                if group is not None:
                    group.check_transactional_commit(member_id, generation)
                elif member_id:
                    raise UnknownMemberIdError(group_id, member_id)
            return self._offsets.commit_transactional(partition, group_id, producer_id, producer_epoch, entries)

    def _delete_locked(
        self, partition: OffsetsPartition, group_id: str, group: ConsumerGroup | None, commits: list[TopicPartition], *, classic_tombstone: bool = False
    ) -> None:
        records = group_records(group, None)
        if classic_tombstone:
            # The classic group's record (an Empty one's, or one its last member's leaving could not rewrite: a record
            # left behind would bring the group back on failover), tombstoned as Kafka's deletion does.
            records.append((classic_records.encode_key(group_id), None))
        records.extend((encode_offset_commit_key(OffsetCommitKey(group_id, topic, number)), None) for topic, number in commits)
        self._offsets.write_records(partition, group_id, records)
        partition.groups.remove(group_id)
        with partition.lock:
            partition.remove((group_id, topic_partition) for topic_partition in commits)

    # ------------------------------------------------------------------ timers

    def expire_members(self) -> int:
        """Remove every member past its session or rebalance timeout; returns how many were removed."""
        now = self._clock.milliseconds()
        removed = 0
        for partition in self._offsets.led_partitions():
            for group_id in partition.groups.group_ids():
                group = partition.groups.get(group_id)
                deadline = group.next_deadline() if group is not None else None
                if deadline is None or deadline > now:
                    continue
                try:
                    removals = self._change(
                        group_id,
                        lambda working: working.expire(now, self._topics),
                        create=False,
                        missing=functools.partial(GroupIdNotFoundError, group_id),
                    )
                except (NotCoordinatorError, CoordinatorLoadingError, GroupIdNotFoundError):
                    continue  # the leadership moved on (the new coordinator times its members out) or the group went
                except Exception:
                    logger.exception("group %s: removing timed-out members failed; trying again on the next check", group_id)
                    continue
                for removal in removals:
                    logger.info("group %s: member %s removed: %s", group_id, removal.member_id, removal.reason)
                removed += len(removals)
        return removed + self.classic.expire()

    def expire_offsets(self, retention_ms: int) -> int:
        """Expire committed offsets, then delete groups empty for ``retention_ms`` that have no offsets left; returns offsets expired."""
        expired = self._offsets.expire(retention_ms, self.classic.offsets_expire_from)
        now = self._clock.milliseconds()
        for partition in self._offsets.led_partitions():
            for group_id in partition.groups.group_ids():
                group = partition.groups.get(group_id)
                if group is None or group.members or group.empty_since_ms < 0 or group.empty_since_ms + retention_ms > now:
                    continue
                try:
                    with partition.groups.lock(group_id):
                        current = partition.groups.get(group_id)
                        # Offsets of an open transaction keep the group, as Kafka's hasOffsets does.
                        if current is None or current.members or partition.committed(group_id) or partition.has_transactional(group_id):
                            continue
                        self._delete_locked(partition, group_id, current, [])
                except (NotCoordinatorError, CoordinatorLoadingError):
                    continue
                except Exception:
                    logger.exception("group %s: deleting the expired empty group failed; trying again on the next check", group_id)
                    continue
                logger.info("group %s deleted: empty for %d ms and without committed offsets", group_id, retention_ms)
            self._delete_empty_classic_groups(partition)
        return expired

    def _classic_group_goes(self, partition: OffsetsPartition, group_id: str) -> bool:
        """Under the group's lock: whether an Empty classic group of that id goes once it has no committed offsets.

        Offsets of an open transaction keep it, as Kafka's hasOffsets does.
        """
        return self.classic.is_empty_group(partition, group_id) and not partition.has_transactional(group_id)

    def _delete_empty_classic_groups(self, partition: OffsetsPartition) -> None:
        """Delete the Empty classic groups of ``partition`` that have no offsets left, as Kafka's ``cleanupGroupMetadata``."""
        for group_id in self.classic.empty_group_ids(partition):
            try:
                with partition.groups.lock(group_id):
                    if partition.committed(group_id) or not self._classic_group_goes(partition, group_id):
                        continue
                    self._delete_locked(partition, group_id, None, [], classic_tombstone=True)
                    self.classic.forget(partition, group_id)
            except (NotCoordinatorError, CoordinatorLoadingError):
                continue
            except Exception:
                logger.exception("classic group %s: deleting the empty group without offsets failed; trying again on the next check", group_id)
                continue
            logger.info("classic group %s deleted: Empty and without committed offsets", group_id)

    # ------------------------------------------------------------------ the one way groups change

    def _change(
        self,
        group_id: str,
        change: Callable[[ConsumerGroup], Result],
        *,
        create: bool,
        missing: Callable[[], Exception],
        replacing_classic: list[bool] | None = None,
    ) -> Result:
        """Apply ``change`` to a copy of the group, write the difference, then keep the copy (see the module docstring).

        ``replacing_classic`` non-empty once ``change`` ran: the group takes the id of an Empty
        classic group, whose record's tombstone goes in the same write (Kafka's
        ``maybeDeleteEmptyClassicGroup``), so either both land or neither does.
        """
        partition = self._offsets.coordinating(group_id)
        with partition.groups.lock(group_id):
            before = partition.groups.get(group_id)
            if before is None and not create:
                raise missing()
            working = before.copy() if before is not None else ConsumerGroup(group_id)
            result = change(working)
            records = group_records(before, working)
            if replacing_classic:
                records.insert(0, (classic_records.encode_key(group_id), None))
            if records:
                self._offsets.write_records(partition, group_id, records)
            if replacing_classic:
                self.classic.forget(partition, group_id)
                logger.info("group %s: the empty classic group becomes a consumer group", group_id)
            partition.groups.put(working)
            return result
