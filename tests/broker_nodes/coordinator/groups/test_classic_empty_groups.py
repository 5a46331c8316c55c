"""An emptied classic group stays as Kafka keeps it: Empty, protocol type "consumer", its generation, a record without members.

A standalone broker (manual clock) provides the log; each "coordinator" is an OffsetStore and a
GroupCoordinator over it with its own leadership of the group's offsets partition, as after a
failover (the helpers of ``test_classic_group_records``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_nodes.clock import ManualClock
from broker_nodes.config import load_broker_config
from broker_nodes.coordinator.groups.classic import ClassicState, JoinAnswer
from broker_nodes.coordinator.groups.classic_records import StoredClassicGroup
from broker_nodes.coordinator.groups.coordinator import CLASSIC_GROUP_TYPE, ListedGroup
from broker_nodes.coordinator.groups.errors import GroupIdNotFoundError, UnknownMemberIdError
from broker_nodes.coordinator.groups.group import GroupState, Heartbeat, Subscription
from broker_nodes.coordinator.offset_store import OffsetCommitEntry
from broker_nodes.server.broker import Broker
from tests.broker_nodes.coordinator.test_classic_group_records import GROUP, Coordinator, classic_records_in_log

RETENTION_MS = 60_000
EMPTIED = StoredClassicGroup("consumer", 2, "", "", ())  # the record of a group whose only member left in generation 1


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    broker = Broker(load_broker_config(node_id=1, listen="127.0.0.1:0", data_dir=tmp_path, configs=["offsets.topic.num.partitions=2"]), clock=ManualClock())
    broker.start()
    broker.topic_admin.create_topic("orders", 1, 1, {})
    yield broker
    broker.shutdown()


def joined_group(coordinator: Coordinator, *, commit: bool = True) -> JoinAnswer:
    """One member joins (generation 1), syncs and maybe commits orders-0 at offset 5: the group is Stable."""
    answer = coordinator.join(client_id="a").wait(0)
    assert isinstance(answer, JoinAnswer) and answer.generation == 1
    coordinator.classic.sync(GROUP, answer.member_id, "", 1, "consumer", "range", {answer.member_id: b"orders-0"})
    if commit:
        assert coordinator.groups.commit_offsets(GROUP, answer.member_id, 1, [OffsetCommitEntry("orders", 0, 5, -1, "")]) == [None]
    return answer


def emptied_group(coordinator: Coordinator, *, commit: bool = True) -> JoinAnswer:
    """:func:`joined_group`, then its member leaves: the group is Empty in generation 2."""
    answer = joined_group(coordinator, commit=commit)
    assert coordinator.classic.leave(GROUP, [(answer.member_id, "")]) == [None]
    return answer


def assert_shown_empty(coordinator: Coordinator, generation: int) -> None:
    assert coordinator.groups.list_groups() == [ListedGroup(GROUP, ClassicState.EMPTY, "consumer", CLASSIC_GROUP_TYPE)]
    snapshot = coordinator.groups.describe(GROUP)
    assert (snapshot.state, snapshot.protocol_type, snapshot.group_type, snapshot.group_epoch, snapshot.members) == (
        ClassicState.EMPTY,
        "consumer",
        CLASSIC_GROUP_TYPE,
        generation,
        (),
    )


def test_the_last_member_leaving_keeps_the_group_empty_with_its_protocol_type_and_generation(broker: Broker, coordinators) -> None:
    first = coordinators(1)
    left = emptied_group(first)
    assert classic_records_in_log(broker)[-1] == (GROUP, EMPTIED)  # Kafka's emptied record, not a tombstone
    assert_shown_empty(first, 2)
    assert first.classic.describe(GROUP) is not None
    written = len(classic_records_in_log(broker))
    assert first.groups.commit_offsets(GROUP, "", -1, [OffsetCommitEntry("orders", 0, 6, -1, "")]) == [None]  # from outside any generation
    with pytest.raises(UnknownMemberIdError):  # a member of a past generation is no member now
        first.groups.commit_offsets(GROUP, left.member_id, 1, [OffsetCommitEntry("orders", 0, 7, -1, "")])
    assert len(classic_records_in_log(broker)) == written  # nothing changed: nothing written

    rejoined = first.join(client_id="a").wait(0)
    assert isinstance(rejoined, JoinAnswer) and rejoined.generation == 3  # the generations go on


def test_a_new_coordinator_loads_the_empty_group_empty_and_its_rejoin_continues_the_generation(broker: Broker, coordinators) -> None:
    left = emptied_group(coordinators(1))
    second = coordinators(2)
    assert_shown_empty(second, 2)  # Empty, not Stable, and not an offsets-only group
    with pytest.raises(UnknownMemberIdError):
        second.classic.heartbeat(GROUP, left.member_id, "", 1)
    rejoined = second.join(client_id="a").wait(0)
    assert isinstance(rejoined, JoinAnswer) and rejoined.generation == 3
    second.classic.sync(GROUP, rejoined.member_id, "", 3, "consumer", "range", {rejoined.member_id: b"orders-0"})
    assert second.groups.describe(GROUP).state == ClassicState.STABLE
    assert [stored.generation for _, stored in classic_records_in_log(broker) if stored] == [1, 2, 3]


def test_delete_groups_removes_an_empty_group_even_without_offsets(broker: Broker, coordinators) -> None:
    first = coordinators(1)
    emptied_group(first, commit=False)
    assert_shown_empty(first, 2)
    first.groups.delete_group(GROUP)
    assert classic_records_in_log(broker)[-1] == (GROUP, None)
    assert first.groups.list_groups() == []
    with pytest.raises(GroupIdNotFoundError):
        first.groups.describe(GROUP)
    with pytest.raises(GroupIdNotFoundError):
        first.groups.delete_group(GROUP)
    with pytest.raises(GroupIdNotFoundError):
        coordinators(2).groups.describe(GROUP)  # the tombstone deletes it for the next coordinator too


def test_an_empty_group_goes_with_its_last_offset_and_not_before(broker: Broker, coordinators) -> None:
    clock = broker.clock
    assert isinstance(clock, ManualClock)
    first = coordinators(1)
    emptied_group(first)
    assert first.groups.expire_offsets(RETENTION_MS) == 0
    assert_shown_empty(first, 2)  # its offset keeps it
    clock.advance(RETENTION_MS + 1)
    assert first.groups.expire_offsets(RETENTION_MS) == 1
    assert classic_records_in_log(broker)[-1] == (GROUP, None)
    assert first.groups.list_groups() == []
    with pytest.raises(GroupIdNotFoundError):
        coordinators(2).groups.describe(GROUP)


def test_an_empty_group_without_offsets_goes_at_the_next_expiry_check(broker: Broker, coordinators) -> None:
    first = coordinators(1)
    emptied_group(first, commit=False)
    first.groups.expire_offsets(RETENTION_MS)
    assert first.groups.list_groups() == []
    assert classic_records_in_log(broker)[-1] == (GROUP, None)


def test_a_consumer_group_heartbeat_takes_the_id_of_an_empty_classic_group_and_its_offsets_stay(broker: Broker, coordinators) -> None:
    first = coordinators(1)
    emptied_group(first)
    joined = first.groups.heartbeat(
        GROUP, Heartbeat("", 0, subscription=Subscription(("orders",), ""), session_timeout_ms=60_000), lambda names, _: frozenset(names)
    )
    assert joined.member_epoch > 0
    assert classic_records_in_log(broker)[-1] == (GROUP, None)  # tombstoned in the heartbeat's own write
    assert [(listed.group_id, listed.protocol_type, listed.group_type) for listed in first.groups.list_groups()] == [(GROUP, "consumer", "consumer")]
    assert set(first.store.coordinating(GROUP).committed(GROUP)) == {("orders", 0)}
    assert first.classic.describe(GROUP) is None

    second = coordinators(2)  # the log agrees: a consumer group, no classic one
    assert second.groups.describe(GROUP).state in (GroupState.STABLE, GroupState.RECONCILING, GroupState.ASSIGNING)
    assert second.classic.describe(GROUP) is None


def test_offset_delete_of_the_last_offset_deletes_the_empty_group_in_the_same_write(broker: Broker, coordinators) -> None:
    first = coordinators(1)
    emptied_group(first)
    assert first.groups.delete_offsets(GROUP, [("orders", 0)]) == [None]
    assert classic_records_in_log(broker)[-1] == (GROUP, None)
    assert first.groups.list_groups() == []
    with pytest.raises(GroupIdNotFoundError):
        first.groups.delete_group(GROUP)  # nothing left to delete, as Kafka answers after OffsetDelete emptied the group


def committed_offsets(coordinator: Coordinator) -> dict[tuple[str, int], int]:
    return {(topic, partition): found.offset for topic, partition, found in coordinator.store.fetch(GROUP, None) if found is not None}


def test_offsets_of_a_classic_group_with_members_never_expire(broker: Broker, coordinators) -> None:
    """Kafka's KIP-211: a group with members keeps its offsets however old its last commit (a quiet topic's consumer
    commits nothing new for days)."""
    clock = broker.clock
    assert isinstance(clock, ManualClock)
    first = coordinators(1)
    joined_group(first)
    clock.advance(RETENTION_MS * 3)
    assert first.groups.expire_offsets(RETENTION_MS) == 0
    assert committed_offsets(first) == {("orders", 0): 5}
    # The same for the group as a new coordinator loads it (Stable, with its member), before anything took it over.
    assert coordinators(2).groups.expire_offsets(RETENTION_MS) == 0


def test_offsets_of_an_emptied_classic_group_count_from_when_it_became_empty(broker: Broker, coordinators) -> None:
    clock = broker.clock
    assert isinstance(clock, ManualClock)
    first = coordinators(1)
    answer = joined_group(first)
    clock.advance(RETENTION_MS // 2)
    assert first.classic.leave(GROUP, [(answer.member_id, "")]) == [None]  # Empty from here
    clock.advance(RETENTION_MS // 2 + 1)  # the commit is past the retention, the emptiness not yet
    assert first.groups.expire_offsets(RETENTION_MS) == 0
    first.groups.describe(GROUP)  # a call on the Empty group that changes nothing does not restart its time
    clock.advance(RETENTION_MS // 2)
    assert first.groups.expire_offsets(RETENTION_MS) == 1
    assert committed_offsets(first) == {}
    assert first.groups.list_groups() == []  # and the group went with its last offset
