"""One consumer group's state machine, driven heartbeat by heartbeat with a manual time."""

from __future__ import annotations

import pytest

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
from broker_nodes.coordinator.groups.group import GroupSettings, GroupState, Heartbeat, Subscription, check_commit_without_group, owners
from broker_nodes.coordinator.groups.member import MemberState
from tests.broker_nodes.coordinator.groups.groups_support import SETTINGS, GroupHarness, partitions

ALL = partitions("t", 0, 1, 2, 3)


@pytest.fixture
def harness() -> GroupHarness:
    harness = GroupHarness()
    harness.add_topic("t", 4)
    return harness


def assert_single_owners(harness: GroupHarness) -> None:
    assert all(len(members) == 1 for members in owners(harness.group.members).values())


# ---------------------------------------------------------------------- joining and reconciling


def test_first_member_joins_and_gets_every_partition_at_epoch_one(harness: GroupHarness) -> None:
    answer = harness.join("t")
    assert (answer.member_id, answer.member_epoch, answer.assignment, answer.heartbeat_interval_ms) == ("member-1", 1, ALL, 1_000)
    assert harness.group.state == GroupState.STABLE
    assert (harness.group.group_epoch, harness.group.assignment_epoch) == (1, 1)


def test_second_member_gets_partitions_only_after_the_first_revoked_them(harness: GroupHarness) -> None:
    first = harness.join("t")
    second = harness.join("t")
    assert (second.member_epoch, second.assignment) == (2, frozenset())
    assert harness.group.state == GroupState.RECONCILING
    # However often the newcomer asks, nothing still owned elsewhere is handed over.
    for _ in range(3):
        assert harness.beat(second).assignment is None
    # The first member is told to keep half; it stays at its epoch until it reports the rest gone.
    told = harness.beat(first)
    assert (told.member_epoch, told.assignment) == (1, partitions("t", 0, 1))
    assert harness.group.members[first.member_id].state == MemberState.UNREVOKED_PARTITIONS
    still = harness.beat(told, owned=ALL)
    assert (still.member_epoch, still.assignment) == (1, partitions("t", 0, 1))
    assert harness.beat(second).assignment is None
    revoked = harness.beat(told, owned=partitions("t", 0, 1))
    assert (revoked.member_epoch, revoked.assignment) == (2, partitions("t", 0, 1))
    handed = harness.beat(second)
    assert (handed.member_epoch, handed.assignment) == (2, partitions("t", 2, 3))
    assert harness.group.state == GroupState.STABLE
    assert_single_owners(harness)


def test_steady_heartbeat_answers_no_assignment_and_one_with_owned_answers_the_full_set(harness: GroupHarness) -> None:
    answer = harness.join("t")
    assert harness.beat(answer).assignment is None
    assert harness.beat(answer, owned=ALL).assignment == ALL


def test_leaving_member_frees_its_partitions_for_the_next_target(harness: GroupHarness) -> None:
    first = harness.join("t")
    second = harness.join("t")
    harness.beat(harness.beat(first), owned=partitions("t", 0, 1))
    second = harness.beat(second)
    left = harness.heartbeat(Heartbeat(first.member_id, -1))
    assert left.member_epoch == -1 and first.member_id not in harness.group.members
    assert harness.group.state == GroupState.ASSIGNING  # the group epoch moved; the next heartbeat computes the target
    after = harness.beat(second)
    assert (after.member_epoch, after.assignment) == (harness.group.group_epoch, ALL)
    assert harness.group.state == GroupState.STABLE


def test_last_member_leaving_makes_the_group_empty_from_then(harness: GroupHarness) -> None:
    answer = harness.join("t")
    harness.now += 5
    harness.heartbeat(Heartbeat(answer.member_id, -1))
    assert harness.group.state == GroupState.EMPTY
    assert harness.group.empty_since_ms == harness.now
    assert harness.group.offsets_expire_from() == harness.now


def test_subscription_change_bumps_the_epoch_and_reassigns(harness: GroupHarness) -> None:
    harness.add_topic("u", 2)
    answer = harness.join("t")
    changed = harness.heartbeat(Heartbeat(answer.member_id, answer.member_epoch, subscription=Subscription(("u",), "")))
    # Partitions of a topic no longer subscribed must be revoked first.
    assert (changed.member_epoch, changed.assignment) == (1, frozenset())
    done = harness.beat(changed, owned=frozenset())
    assert (done.member_epoch, done.assignment) == (2, partitions("u", 0, 1))


def test_regex_subscription_and_a_topic_created_later_reach_the_member(harness: GroupHarness) -> None:
    answer = harness.join(regex="orders-.*")
    assert answer.assignment == frozenset()
    harness.add_topic("orders-eu", 2)
    harness.add_topic("audit", 1)
    later = harness.beat(answer)
    assert (later.member_epoch, later.assignment) == (2, partitions("orders-eu", 0, 1))


def test_more_partitions_of_a_subscribed_topic_bump_the_epoch(harness: GroupHarness) -> None:
    answer = harness.join("t")
    harness.topics["t"] = harness.topics["t"].__class__(harness.topics["t"].topic_id, 6)
    grown = harness.beat(answer)
    assert (grown.member_epoch, grown.assignment) == (2, partitions("t", 0, 1, 2, 3, 4, 5))


def test_assignor_most_members_prefer_wins_else_the_broker_default(harness: GroupHarness) -> None:
    harness.join("t")
    assert harness.group.assignor_name(SETTINGS) == "sticky"
    harness.join("t", assignor="range")
    harness.join("t", assignor="cooperative-sticky")
    harness.join("t", assignor="range")
    assert harness.group.assignor_name(SETTINGS) == "range"


# ---------------------------------------------------------------------- fencing


def test_heartbeat_with_a_newer_epoch_is_fenced(harness: GroupHarness) -> None:
    answer = harness.join("t")
    with pytest.raises(FencedMemberEpochError, match="sent member epoch 2, newer than its epoch 1"):
        harness.heartbeat(Heartbeat(answer.member_id, 2))


def test_previous_epoch_is_accepted_only_with_owned_partitions_it_still_has(harness: GroupHarness) -> None:
    first = harness.join("t")
    harness.join("t")
    revoking = harness.beat(first)
    moved = harness.beat(revoking, owned=partitions("t", 0, 1))
    assert moved.member_epoch == 2
    # The answer at epoch 2 was lost: the member retries with epoch 1 and what it owns.
    retried = harness.heartbeat(Heartbeat(first.member_id, 1, owned=partitions("t", 0, 1)))
    assert (retried.member_epoch, retried.assignment) == (2, partitions("t", 0, 1))
    with pytest.raises(FencedMemberEpochError):
        harness.heartbeat(Heartbeat(first.member_id, 1))
    with pytest.raises(FencedMemberEpochError):
        harness.heartbeat(Heartbeat(first.member_id, 1, owned=ALL))


def test_fenced_member_rejoins_with_epoch_zero_owning_nothing_and_gets_its_target_back(harness: GroupHarness) -> None:
    answer = harness.join("t")
    with pytest.raises(FencedMemberEpochError):
        harness.heartbeat(Heartbeat(answer.member_id, 7))
    again = harness.join("t", member_id=answer.member_id)
    assert (again.member_id, again.member_epoch, again.assignment) == (answer.member_id, 1, ALL)


def test_unknown_member_and_missing_member_id(harness: GroupHarness) -> None:
    with pytest.raises(UnknownMemberIdError, match="has no member 'ghost'"):
        harness.heartbeat(Heartbeat("ghost", 3))
    with pytest.raises(InvalidGroupRequestError, match="needs the member id"):
        harness.heartbeat(Heartbeat("", 3))
    with pytest.raises(UnknownMemberIdError):
        harness.heartbeat(Heartbeat("ghost", -1))


# ---------------------------------------------------------------------- timeouts


def test_member_without_heartbeat_for_its_session_timeout_is_removed(harness: GroupHarness) -> None:
    first = harness.join("t")
    second = harness.join("t")
    harness.beat(harness.beat(first), owned=partitions("t", 0, 1))
    assert harness.expire(9_999) == []
    second = harness.beat(second)
    assert harness.expire(1) == [first.member_id]
    assert harness.beat(second).assignment == ALL
    with pytest.raises(UnknownMemberIdError):
        harness.beat(first)


def test_member_that_does_not_revoke_within_its_rebalance_timeout_is_removed_though_it_heartbeats(harness: GroupHarness) -> None:
    first = harness.join("t", rebalance_timeout_ms=20_000)
    second = harness.join("t")
    revoking = harness.beat(first)
    for _ in range(3):
        harness.now += 5_000
        harness.beat(revoking)  # still heartbeating, never reporting the partitions revoked
        harness.beat(second)
    assert harness.expire(4_999) == []
    assert harness.expire(1) == [first.member_id]
    assert harness.beat(second).assignment == ALL


def test_timers_start_afresh_for_loaded_members(harness: GroupHarness) -> None:
    harness.join("t", session_timeout_ms=3_000)
    loaded = harness.group.copy()
    loaded.session_deadlines.clear()
    loaded.start_timers(harness.now + 60_000)
    assert loaded.next_deadline() == harness.now + 63_000


# ---------------------------------------------------------------------- static membership


def test_static_member_leaving_for_now_keeps_its_partitions_and_gets_them_back_on_rejoin(harness: GroupHarness) -> None:
    static = harness.join("t", instance_id="host-1")
    other = harness.join("t")
    harness.beat(harness.beat(static), owned=partitions("t", 0, 1))
    other = harness.beat(other)
    epoch = harness.group.group_epoch
    left = harness.heartbeat(Heartbeat(static.member_id, -2, instance_id="host-1"))
    assert left.member_epoch == -2
    # Nobody else gets its partitions meanwhile, and the group does not rebalance.
    assert harness.beat(other).assignment is None
    assert harness.group.group_epoch == epoch
    back = harness.join("t", instance_id="host-1")
    assert back.member_id != static.member_id and back.assignment == partitions("t", 0, 1)
    assert harness.group.group_epoch == epoch and static.member_id not in harness.group.members
    assert_single_owners(harness)


def test_second_live_member_with_the_same_instance_id_is_unreleased_instance_id(harness: GroupHarness) -> None:
    harness.join("t", instance_id="host-1")
    with pytest.raises(UnreleasedInstanceIdError, match="'host-1'"):
        harness.join("t", instance_id="host-1")


def test_old_incarnation_of_a_replaced_static_member_is_fenced(harness: GroupHarness) -> None:
    old = harness.join("t", instance_id="host-1")
    harness.heartbeat(Heartbeat(old.member_id, -2, instance_id="host-1"))
    harness.join("t", instance_id="host-1")
    with pytest.raises(FencedInstanceIdError):
        harness.heartbeat(Heartbeat(old.member_id, old.member_epoch, instance_id="host-1"))


def test_new_incarnation_of_a_static_member_cannot_take_another_members_id(harness: GroupHarness) -> None:
    static = harness.join("t", instance_id="host-1")
    other = harness.join("t")
    harness.heartbeat(Heartbeat(static.member_id, -2, instance_id="host-1"))
    with pytest.raises(InvalidGroupRequestError, match="is another member's"):
        harness.join("t", instance_id="host-1", member_id=other.member_id)
    # Refused without a change: the old incarnation still holds the instance id.
    holder = harness.group.static_member("host-1")
    assert holder is not None and holder.member_id == static.member_id


def test_static_member_rejoining_with_its_own_member_id_starts_over(harness: GroupHarness) -> None:
    static = harness.join("t", instance_id="host-1")
    again = harness.join("t", instance_id="host-1", member_id=static.member_id)
    assert again.member_id == static.member_id
    assert again.assignment == partitions("t", 0, 1, 2, 3)


def test_static_member_gone_for_its_session_timeout_is_removed_and_its_partitions_move(harness: GroupHarness) -> None:
    static = harness.join("t", instance_id="host-1", session_timeout_ms=5_000)
    other = harness.join("t")
    harness.beat(harness.beat(static), owned=partitions("t", 0, 1))
    other = harness.beat(other)
    harness.heartbeat(Heartbeat(static.member_id, -2, instance_id="host-1"))
    harness.now += 4_000
    other = harness.beat(other)
    assert harness.expire(1_000) == [static.member_id]
    assert harness.beat(other).assignment == ALL


def test_dynamic_member_cannot_leave_as_static(harness: GroupHarness) -> None:
    answer = harness.join("t")
    with pytest.raises(InvalidGroupRequestError, match="-2 is for static members"):
        harness.heartbeat(Heartbeat(answer.member_id, -2))


# ---------------------------------------------------------------------- bad requests


def test_join_needs_a_subscription_and_valid_timeouts_and_assignor(harness: GroupHarness) -> None:
    with pytest.raises(InvalidGroupRequestError, match="must send its subscription"):
        harness.heartbeat(Heartbeat("", 0))
    with pytest.raises(InvalidSessionTimeoutError, match="session timeout 999 ms"):
        harness.join("t", session_timeout_ms=999)
    with pytest.raises(UnsupportedAssignorError, match="'fancy'"):
        harness.join("t", assignor="fancy")
    with pytest.raises(InvalidGroupRequestError, match="member epoch -3"):
        harness.heartbeat(Heartbeat("m", -3))
    limited = GroupHarness(settings=GroupSettings(assignors=("range",), max_size=1))
    limited.add_topic("t", 1)
    with pytest.raises(UnsupportedAssignorError, match="offers range"):
        limited.join("t", assignor="sticky")
    limited.join("t")
    with pytest.raises(GroupMaxSizeReachedError, match="group.consumer.max.size=1"):
        limited.join("t")


# ---------------------------------------------------------------------- offset commits


def test_member_commits_only_its_partitions_with_its_current_epoch(harness: GroupHarness) -> None:
    first = harness.join("t")
    harness.join("t")
    revoking = harness.beat(first)
    # Still revoking 2 and 3: it may commit them before it lets them go.
    assert harness.group.check_commit(first.member_id, 1, [("t", 0), ("t", 3)]) == [None, None]
    harness.beat(revoking, owned=partitions("t", 0, 1))
    outcomes = harness.group.check_commit(first.member_id, 2, [("t", 1), ("t", 3)])
    assert outcomes[0] is None and isinstance(outcomes[1], PartitionNotAssignedError)
    assert "partition 3 of topic 't' is not assigned" in str(outcomes[1])
    with pytest.raises(StaleMemberEpochError, match="carries member epoch 1, but its epoch is now 2"):
        harness.group.check_commit(first.member_id, 1, [("t", 0)])
    with pytest.raises(UnknownMemberIdError):
        harness.group.check_commit("ghost", 1, [("t", 0)])
    with pytest.raises(ActiveGroupError, match="has 2 active members"):
        harness.group.check_commit("", -1, [("t", 0)])


def test_commit_without_member_is_fine_once_the_group_is_empty_or_without_state(harness: GroupHarness) -> None:
    answer = harness.join("t")
    harness.heartbeat(Heartbeat(answer.member_id, -1))
    assert harness.group.check_commit("", -1, [("t", 0)]) == [None]
    assert check_commit_without_group("g", "", 2) == [None, None]
    with pytest.raises(UnknownMemberIdError):
        check_commit_without_group("g", "m-1", 1)
