"""Every classic group this broker coordinates, in memory, following the leadership of ``__consumer_offsets``.

A classic group lives under the leadership of its offsets partition (the ``OffsetsPartition``
object of that leadership is its ``home``): when the leadership ends or begins again, the
group is dropped on its next use or timer check and its waiting JoinGroup/SyncGroup requests
are answered NOT_COORDINATOR. Each completed generation is in the log (``classic_records``:
written under the group's lock, acks=all, after every change that alters it), so the new
coordinator takes the group over from the record its load read (``OffsetsPartition.classic_records``)
on first use or timer check, Stable in that generation: its members carry on. A group whose
last member leaves stays, as in Kafka: Empty, its protocol type and generation kept, its
record rewritten without members (not a tombstone), so ListGroups / DescribeGroups show it as
a classic ``consumer`` group (not an offsets-only one) and its next rebalance continues the
generations; a new coordinator loads it Empty from that record. Memory keeps such a group
as its record alone (protocol type, generation), per leadership, outside the timers' dict of
groups with members; a protocol call revives it as a :class:`ClassicGroup` for its duration.
It is deleted (tombstone) only by DeleteGroups, by offset expiry once it has no offsets left,
or when a KIP-848 heartbeat takes its id (``GroupCoordinator``). A record that could not be
written is logged and written with the group's next change; until then a failover finds the
previous generation and its members rejoin, as before the record existed.

A group id is one kind of group at a time: every call here runs under the same per-group lock
as the KIP-848 group of that id (``LoadedGroups.lock``), so a classic join and a consumer-group
heartbeat can never both create the group. A classic JoinGroup to an empty KIP-848 group
converts it (its records are deleted; offsets stay), as Kafka 4 does; to one with members it is
refused with INCONSISTENT_GROUP_PROTOCOL. The other way, a KIP-848 heartbeat joining the id of
an Empty classic group deletes it (Kafka's ``maybeDeleteEmptyClassicGroup``; offsets stay), and
is refused GROUP_ID_NOT_FOUND while it has members.

Thread-safe: the dicts of groups are changed under each group's lock and read without one (a
dict operation is atomic); a group itself is only touched under its lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from broker_nodes import names
from broker_nodes.clock import Clock
from broker_nodes.coordinator.groups import classic_records
from broker_nodes.coordinator.groups.classic import (
    ClassicDescription,
    ClassicGroup,
    ClassicSettings,
    ClassicState,
    Completion,
    JoinRequest,
)
from broker_nodes.coordinator.groups.classic_errors import InconsistentGroupProtocolError, NotConsumerGroupError
from broker_nodes.coordinator.groups.classic_subscription import CONSUMER_PROTOCOL_TYPE, subscribed_topics
from broker_nodes.coordinator.groups.errors import NonEmptyGroupError, UnknownMemberIdError
from broker_nodes.coordinator.offset_store import CoordinatorLoadingError, CoordinatorNotAvailableError, NotCoordinatorError, OffsetStore
from broker_nodes.coordinator.offsets_partition import OffsetsPartition

logger = logging.getLogger(__name__)

# (offsets partition, group id) -> None: delete the empty KIP-848 group of that id (its records; the caller holds the group's lock)
ConsumerGroupDropper = Callable[[OffsetsPartition, str], None]


@dataclass(frozen=True, slots=True)
class _EmptyGroup:
    """An Empty classic group as memory keeps it: its record (protocol type, generation), whether the log holds it, and
    since when (ms) this coordinator knows it Empty (its offsets' retention counts from then)."""

    stored: classic_records.StoredClassicGroup
    written: bool
    empty_since_ms: int


class ClassicGroups:
    """See the module docstring."""

    def __init__(
        self, offsets: OffsetStore, clock: Clock, settings: ClassicSettings, member_ids: Callable[[str], str], drop_consumer_group: ConsumerGroupDropper
    ) -> None:
        self._offsets = offsets
        self._clock = clock
        self.settings = settings
        self._member_ids = member_ids
        self._drop_consumer_group = drop_consumer_group
        self._groups: dict[str, ClassicGroup] = {}  # groups with members (or pending ones): the timers look at these
        # Empty groups, by leadership (id of its home -> (home, group id -> group)); a leadership's dict goes when it ends.
        self._empty: dict[int, tuple[object, dict[str, _EmptyGroup]]] = {}

    # ------------------------------------------------------------------ the protocol

    def join(self, group_id: str, request: JoinRequest) -> Completion:
        """One JoinGroup of the (qualified) group; the completion carries the answer (see ``ClassicGroup.join``)."""
        partition = self._offsets.coordinating(group_id)
        with partition.groups.lock(group_id):
            consumer = partition.groups.get(group_id)
            if consumer is not None:
                if consumer.members:
                    raise InconsistentGroupProtocolError(
                        group_id, f"it is a consumer group (group.protocol=consumer) with {len(consumer.members)} members; join it with that protocol"
                    )
                self._drop_consumer_group(partition, group_id)
                logger.info("group %s: the empty consumer group becomes a classic group", group_id)
            group = self._current(partition, group_id) or ClassicGroup(group_id, home=partition)
            try:
                return group.join(request, self._clock.milliseconds(), self.settings, self._member_ids)
            finally:
                self._keep(group)

    def sync(
        self,
        group_id: str,
        member_id: str,
        instance_id: str,
        generation: int,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
    ) -> Completion:
        partition = self._offsets.coordinating(group_id)
        with partition.groups.lock(group_id):
            group = self._require(partition, group_id, member_id)
            try:
                return group.sync(member_id, instance_id, generation, protocol_type, protocol_name, assignments, self._clock.milliseconds())
            finally:
                self._keep(group)

    def heartbeat(self, group_id: str, member_id: str, instance_id: str, generation: int) -> None:
        partition = self._offsets.coordinating(group_id)
        with partition.groups.lock(group_id):
            self._require(partition, group_id, member_id).heartbeat(member_id, instance_id, generation, self._clock.milliseconds())

    def leave(self, group_id: str, members: Sequence[tuple[str, str]]) -> list[Exception | None]:
        """Members leaving (member id, instance id); one outcome each. UNKNOWN_MEMBER_ID for each when the group has no members."""
        partition = self._offsets.coordinating(group_id)
        with partition.groups.lock(group_id):
            group = self._current(partition, group_id)
            if group is None:
                return [UnknownMemberIdError(group_id, member_id) for member_id, _ in members]
            try:
                return group.leave(members, self._clock.milliseconds(), self.settings)
            finally:
                self._keep(group)

    def begin_commit(self, partition: OffsetsPartition, group_id: str, member_id: str, instance_id: str, generation: int) -> ClassicGroup | None:
        """Under the group's lock: the classic group of ``group_id`` (None when there is none), its generation held for
        this commit (see ``ClassicGroup.begin_commit``); raises when this member may not commit now."""
        group = self._current(partition, group_id)
        if group is None:
            return None
        if self._groups.get(group_id) is not group:  # an Empty group: only commits from outside any generation, nothing to hold
            group.check_commit(member_id, instance_id, generation)
            return None
        group.begin_commit(member_id, instance_id, generation)
        return group

    def check_transactional_commit(self, partition: OffsetsPartition, group_id: str, member_id: str, instance_id: str, generation: int) -> bool:
        """Under the group's lock: check a TxnOffsetCommit against the classic group (see ``ClassicGroup.check_transactional_commit``);
        False when there is no classic group of that id."""
        group = self._current(partition, group_id)
        if group is None:
            return False
        group.check_transactional_commit(member_id, instance_id, generation)
        return True

    def end_commit(self, partition: OffsetsPartition, group: ClassicGroup) -> None:
        """The commit :meth:`begin_commit` allowed is stored (or failed): the group may move to its next generation."""
        with partition.groups.lock(group.group_id):
            group.end_commit(self._clock.milliseconds(), self.settings)
            if self._groups.get(group.group_id) is group:
                self._keep(group)

    def replaced_by_consumer_group(self, partition: OffsetsPartition, group_id: str) -> bool:
        """Under the group's lock, for a KIP-848 heartbeat creating a group of that id: GROUP_ID_NOT_FOUND when a classic
        group with members has it; True when an Empty classic group has it (the caller tombstones its record and
        calls :meth:`forget`, as Kafka's ``maybeDeleteEmptyClassicGroup``); False when there is no classic group."""
        group = self._current(partition, group_id)
        if group is None:
            return False
        if group.members:
            raise NotConsumerGroupError(group_id)
        return True

    def has_group(self, partition: OffsetsPartition, group_id: str) -> bool:
        """Under the group's lock: whether a classic group of that id exists (with members or Empty)."""
        return self._current(partition, group_id) is not None

    def is_empty_group(self, partition: OffsetsPartition, group_id: str) -> bool:
        """Under the group's lock: whether the classic group of that id exists and is Empty (no members, none pending)."""
        group = self._current(partition, group_id)
        return group is not None and group.is_empty and group.state == ClassicState.EMPTY

    def empty_group_ids(self, partition: OffsetsPartition) -> list[str]:
        """The Empty classic groups of one led offsets partition (read without locks: check each under its lock)."""
        self._take_over_loaded(partition)
        entry = self._empty.get(id(partition))
        return list(entry[1]) if entry is not None and entry[0] is partition else []

    def offsets_expire_from(self, partition: OffsetsPartition, group_id: str) -> int | None:
        """For offset retention, called under ``partition``'s lock without the group's (reads only): None while a classic
        group of that id has members (or is rebalancing), whose offsets never expire; the time (ms) an Empty one became
        Empty, from which its offsets count (Kafka's KIP-211); -1 when there is no classic group of that id (each offset
        counts from its commit)."""
        group = self._groups.get(group_id)
        if group is not None and group.home is partition:
            return None
        loaded = partition.classic_records.get(group_id)
        if loaded is not None:
            return None if loaded.members else self._clock.milliseconds()  # loaded, not taken over yet: Empty from now
        empty = self._empty_entry(partition, group_id)
        return empty.empty_since_ms if empty is not None else -1

    def forget(self, partition: OffsetsPartition, group_id: str) -> None:
        """Under the group's lock, once its record is tombstoned: the classic group of that id is gone (DeleteGroups,
        expiry, a KIP-848 group taking its id)."""
        partition.classic_records.pop(group_id, None)
        group = self._groups.get(group_id)
        if group is not None and group.home is partition:
            del self._groups[group_id]  # members it may have had are pending ones, without waiters
        entry = self._empty.get(id(partition))
        if entry is not None and entry[0] is partition:
            entry[1].pop(group_id, None)

    # ------------------------------------------------------------------ views

    def describe(self, group_id: str) -> ClassicDescription | None:
        """The classic group of that id (an Empty one too), None when there is none."""
        partition = self._offsets.coordinating(group_id)
        with partition.groups.lock(group_id):
            group = self._current(partition, group_id)
            return group.describe() if group is not None else None

    def listed(self, partition: OffsetsPartition) -> list[ClassicDescription]:
        """The classic groups of one led offsets partition, Empty ones too (summaries without members)."""
        self._take_over_loaded(partition)
        found = []
        for group_id, group in list(self._groups.items()):
            if group.home is partition:
                found.append(ClassicDescription(group_id, group.state, group.protocol_type, group.protocol_name, group.generation, group.leader))
        entry = self._empty.get(id(partition))
        if entry is not None and entry[0] is partition:
            for group_id, empty in list(entry[1].items()):
                current = self._groups.get(group_id)
                if current is None or current.home is not partition:  # else a join revived it meanwhile: listed above
                    found.append(ClassicDescription(group_id, ClassicState.EMPTY, empty.stored.protocol_type, "", empty.stored.generation, ""))
        return found

    def subscribed_topics(self, partition: OffsetsPartition, group_id: str) -> frozenset[str] | None:
        """Under the group's lock: the (qualified) topics its members subscribe to; None when there is no classic group.

        NonEmptyGroupError when it has members of another protocol type than ``consumer``, whose
        subscriptions Kafka cannot read either.
        """
        group = self._current(partition, group_id)
        if group is None or not group.members:
            return None
        if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise NonEmptyGroupError(group_id, len(group.members))
        tenant = names.split(group_id)[0]
        topics: set[str] = set()
        for member in group.members.values():
            protocol = group.protocol_name or member.protocols[0][0]
            subscribed = subscribed_topics(member.metadata(protocol))
            if subscribed is None:
                raise NonEmptyGroupError(group_id, len(group.members))  # unreadable: every topic may be subscribed
            topics.update(names.qualify(tenant, topic) for topic in subscribed)
        return frozenset(topics)

    def member_count(self, partition: OffsetsPartition, group_id: str) -> int:
        """Under the group's lock: how many members the classic group has (0 when there is none)."""
        group = self._current(partition, group_id)
        return len(group.members) + len(group.pending) if group is not None else 0

    # ------------------------------------------------------------------ timers

    def expire(self) -> int:
        """Apply the timers of every group, drop groups whose leadership ended; returns how many members were removed."""
        led_partitions = self._offsets.led_partitions()
        for partition in led_partitions:
            self._take_over_loaded(partition)
        led = {id(partition) for partition in led_partitions}
        for home_id in list(self._empty):
            if home_id not in led:
                self._empty.pop(home_id, None)  # that leadership ended: its Empty groups go with it (the log keeps them)
        now = self._clock.milliseconds()
        removed = 0
        for group_id, group in list(self._groups.items()):
            if id(group.home) not in led:
                self._drop_if_stale(group_id)
                continue
            deadline = group.next_deadline()
            if deadline is None or deadline > now:
                continue
            try:
                partition = self._offsets.coordinating(group_id)
            except (NotCoordinatorError, CoordinatorLoadingError):
                self._drop_if_stale(group_id)
                continue
            with partition.groups.lock(group_id):
                current = self._current(partition, group_id)
                if current is None:
                    continue
                try:
                    removals = current.expire(self._clock.milliseconds(), self.settings)
                finally:
                    self._keep(current)
            for removal in removals:
                logger.info("classic group %s: member %s removed: %s", group_id, removal.member_id, removal.reason)
            removed += len(removals)
        return removed

    # ------------------------------------------------------------------ keeping the dict

    def _current(self, partition: OffsetsPartition, group_id: str) -> ClassicGroup | None:
        """The group if it lives under this leadership; one of an earlier leadership is dropped (its waiters told NOT_COORDINATOR).

        A group this leadership loaded from the log and nobody used yet is taken over now.
        An Empty group comes back as a new :class:`ClassicGroup` each time, kept by :meth:`_keep`
        (a call that changes nothing need not keep it).
        """
        group = self._groups.get(group_id)
        if group is not None and group.home is partition:
            return group
        if group is not None:
            self._abandon(group)
        entry = self._empty.get(id(partition))
        empty = entry[1].get(group_id) if entry is not None and entry[0] is partition else None
        if empty is not None:
            return classic_records.restore(group_id, empty.stored, partition, self._clock.milliseconds(), written=empty.written)
        return self._restore(partition, group_id)

    def _restore(self, partition: OffsetsPartition, group_id: str) -> ClassicGroup | None:
        """Under the group's lock: the group of the record this leadership loaded, Stable, its members' sessions starting
        now, or Empty in its generation (kept with the Empty groups)."""
        stored = partition.classic_records.pop(group_id, None)
        if stored is None:
            return None
        group = classic_records.restore(group_id, stored, partition, self._clock.milliseconds())
        if not stored.members:
            # The record's own time is not kept: retention counts from the load (later, so offsets are never expired early).
            self._keep_empty(partition, group_id, _EmptyGroup(stored, written=True, empty_since_ms=self._clock.milliseconds()))
            return group
        self._groups[group_id] = group
        logger.info("classic group %s loaded in generation %d with %d members", group_id, group.generation, len(group.members))
        return group

    def _take_over_loaded(self, partition: OffsetsPartition) -> None:
        """Take over every group ``partition``'s load read, so its timers run and listings show it."""
        for group_id in list(partition.classic_records):
            with partition.groups.lock(group_id):
                self._current(partition, group_id)

    def _require(self, partition: OffsetsPartition, group_id: str, member_id: str) -> ClassicGroup:
        group = self._current(partition, group_id)
        if group is None:
            raise UnknownMemberIdError(group_id, member_id)
        return group

    def _keep(self, group: ClassicGroup) -> None:
        """Under the group's lock, after every change: bring its record up to date and keep it (an Empty one as its
        record alone; one that never had a generation is forgotten)."""
        self._persist(group)
        home = group.home
        if not (group.is_empty and group.state == ClassicState.EMPTY):
            self._groups[group.group_id] = group
            self._drop_empty(home, group.group_id)
            return
        if self._groups.get(group.group_id) is group:
            del self._groups[group.group_id]
        stored = classic_records.empty_form(group.protocol_type, group.generation)
        if stored is None:
            self._drop_empty(home, group.group_id)
        else:
            known = self._empty_entry(home, group.group_id)  # a call on an Empty group that changed nothing keeps its time
            since = known.empty_since_ms if known is not None else self._clock.milliseconds()
            self._keep_empty(home, group.group_id, _EmptyGroup(stored, written=group.persisted == stored, empty_since_ms=since))

    def _keep_empty(self, home: object, group_id: str, empty: _EmptyGroup) -> None:
        entry = self._empty.get(id(home))
        if entry is None or entry[0] is not home:
            entry = self._empty.setdefault(id(home), (home, {}))
        entry[1][group_id] = empty

    def _empty_entry(self, home: object, group_id: str) -> _EmptyGroup | None:
        entry = self._empty.get(id(home))
        return entry[1].get(group_id) if entry is not None and entry[0] is home else None

    def _drop_empty(self, home: object, group_id: str) -> None:
        entry = self._empty.get(id(home))
        if entry is not None and entry[0] is home:
            entry[1].pop(group_id, None)

    def _persist(self, group: ClassicGroup) -> None:
        """Write the group's record when what it should hold changed (see the module docstring); a failure is logged."""
        try:
            wanted = classic_records.stored_form(group)
        except LookupError:
            return  # a rebalance in progress: the record keeps the last completed generation
        if wanted == group.persisted or not isinstance(group.home, OffsetsPartition):
            return
        value = None if wanted is None else classic_records.encode_value(wanted, self._clock.milliseconds())
        try:
            self._offsets.write_records(group.home, group.group_id, [(classic_records.encode_key(group.group_id), value)])
        except (NotCoordinatorError, CoordinatorLoadingError, CoordinatorNotAvailableError) as error:
            logger.warning(
                "classic group %s: its generation %d could not be written (%s); it is written with its next change", group.group_id, group.generation, error
            )
            return
        group.persisted = wanted

    def _drop_if_stale(self, group_id: str) -> None:
        group = self._groups.get(group_id)
        if group is None:
            return
        led = {id(partition) for partition in self._offsets.led_partitions()}
        if id(group.home) not in led:
            self._abandon(group)

    def _abandon(self, group: ClassicGroup) -> None:
        if self._groups.get(group.group_id) is group:
            del self._groups[group.group_id]
        home = group.home
        error = NotCoordinatorError(group.group_id, home.partition if isinstance(home, OffsetsPartition) else -1)
        for member in group.members.values():
            for waiter in (member.awaiting_join, member.awaiting_sync):
                if waiter is not None:
                    waiter.complete(error)
        logger.info("classic group %s dropped: this broker no longer coordinates it under that leadership; its members rejoin", group.group_id)
