"""The classic group state machine (JoinGroup/SyncGroup/Heartbeat/LeaveGroup), driven with explicit times."""

from __future__ import annotations

import itertools

import pytest

from broker_nodes.coordinator.groups.classic import ClassicGroup, ClassicSettings, ClassicState, Completion, JoinAnswer, JoinRequest, SyncAnswer
from broker_nodes.coordinator.groups.classic_errors import (
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    MemberIdRequiredError,
    RebalanceInProgressError,
)
from broker_nodes.coordinator.groups.errors import FencedInstanceIdError, InvalidSessionTimeoutError, UnknownMemberIdError

SETTINGS = ClassicSettings(initial_rebalance_delay_ms=0)
SESSION_MS = 10_000
REBALANCE_MS = 30_000


def ids():
    counter = itertools.count(1)
    return lambda client_id: f"{client_id}-{next(counter)}"


def join_request(member_id: str = "", protocols=(("range", b"r"),), instance_id: str = "", require_known: bool = False, protocol_type: str = "consumer"):
    return JoinRequest(
        member_id=member_id,
        protocol_type=protocol_type,
        protocols=tuple(protocols),
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=REBALANCE_MS,
        instance_id=instance_id,
        client_id="app",
        require_known_member_id=require_known,
    )


def result(completion: Completion):
    assert completion.done, "the request is still waiting"
    return completion.wait(0)


def joined(group: ClassicGroup, now: int, new_ids, **kwargs) -> JoinAnswer:
    answer = result(group.join(join_request(**kwargs), now, SETTINGS, new_ids))
    assert isinstance(answer, JoinAnswer), answer
    return answer


def test_a_lone_member_becomes_leader_and_gets_what_it_assigned_itself():
    group, new_ids = ClassicGroup("t~g"), ids()
    answer = joined(group, 0, new_ids)
    assert (answer.generation, answer.leader, answer.member_id, answer.protocol_name) == (1, answer.member_id, "app-1", "range")
    assert [member.metadata for member in answer.members] == [b"r"]
    assert group.state == ClassicState.COMPLETING_REBALANCE
    sync = result(group.sync(answer.member_id, "", 1, "consumer", "range", {answer.member_id: b"assignment"}, 10))
    assert sync == SyncAnswer("consumer", "range", b"assignment")
    assert group.state == ClassicState.STABLE


def test_v4_first_join_answers_member_id_required_and_the_member_joins_with_it():
    group, new_ids = ClassicGroup("t~g"), ids()
    with pytest.raises(MemberIdRequiredError) as raised:
        group.join(join_request(require_known=True), 0, SETTINGS, new_ids)
    member_id = raised.value.member_id
    assert group.state == ClassicState.EMPTY and member_id in group.pending
    answer = joined(group, 5, new_ids, member_id=member_id, require_known=True)
    assert answer.member_id == member_id and answer.leader == member_id


def test_second_member_waits_until_the_first_rejoins_then_both_get_the_new_generation():
    group, new_ids = ClassicGroup("t~g"), ids()
    first = joined(group, 0, new_ids)
    group.sync(first.member_id, "", 1, None, None, {first.member_id: b"all"}, 0)
    waiting = group.join(join_request(), 100, SETTINGS, new_ids)
    assert not waiting.done and group.state == ClassicState.PREPARING_REBALANCE
    with pytest.raises(RebalanceInProgressError):
        group.heartbeat(first.member_id, "", 1, 200)
    rejoined = result(group.join(join_request(member_id=first.member_id), 300, SETTINGS, new_ids))
    second = result(waiting)
    assert rejoined.generation == second.generation == 2
    assert rejoined.leader == first.member_id and len(rejoined.members) == 2 and second.members == ()
    follower_sync = group.sync(second.member_id, "", 2, None, None, {}, 310)
    assert not follower_sync.done, "the follower waits for the leader's assignment"
    group.sync(first.member_id, "", 2, None, None, {first.member_id: b"a", second.member_id: b"b"}, 320)
    assert result(follower_sync).assignment == b"b"
    group.heartbeat(second.member_id, "", 2, 400)


def test_a_member_that_heartbeats_but_does_not_rejoin_within_the_rebalance_timeout_is_removed():
    group, new_ids = ClassicGroup("t~g"), ids()
    first = joined(group, 0, new_ids)
    group.sync(first.member_id, "", 1, None, None, {}, 0)
    waiting = group.join(join_request(), 1_000, SETTINGS, new_ids)
    for now in range(5_000, 1_000 + REBALANCE_MS, 5_000):  # alive, told to rejoin, never does
        with pytest.raises(RebalanceInProgressError):
            group.heartbeat(first.member_id, "", 1, now)
        assert group.expire(now, SETTINGS) == []
    assert not waiting.done
    removals = group.expire(1_000 + REBALANCE_MS, SETTINGS)
    assert [removal.member_id for removal in removals] == [first.member_id]
    answer = result(waiting)
    assert answer.generation == 2 and answer.leader == answer.member_id and list(group.members) == [answer.member_id]


def test_session_timeout_removes_a_silent_member_and_rebalances_the_rest():
    group, new_ids = ClassicGroup("t~g"), ids()
    first = joined(group, 0, new_ids)
    waiting = group.join(join_request(), 10, SETTINGS, new_ids)
    assert not waiting.done  # the group was completing: it prepares a new rebalance, and the first member must rejoin
    rejoined = result(group.join(join_request(member_id=first.member_id), 20, SETTINGS, new_ids))
    second = result(waiting)
    group.sync(rejoined.member_id, "", 2, None, None, {}, 30)
    group.heartbeat(second.member_id, "", 2, 30)
    group.heartbeat(second.member_id, "", 2, SESSION_MS)
    removals = group.expire(30 + SESSION_MS, SETTINGS)
    assert [removal.member_id for removal in removals] == [first.member_id]
    assert group.state == ClassicState.PREPARING_REBALANCE
    with pytest.raises(RebalanceInProgressError):
        group.heartbeat(second.member_id, "", 2, SESSION_MS + 40)
    answer = result(group.join(join_request(member_id=second.member_id), SESSION_MS + 50, SETTINGS, new_ids))
    assert answer.generation == 3 and answer.leader == second.member_id


def test_wrong_generation_unknown_member_and_inconsistent_protocols_are_refused():
    group, new_ids = ClassicGroup("t~g"), ids()
    first = joined(group, 0, new_ids)
    with pytest.raises(IllegalGenerationError):
        group.sync(first.member_id, "", 7, None, None, {}, 1)
    with pytest.raises(UnknownMemberIdError):
        group.heartbeat("nobody", "", 1, 1)
    with pytest.raises(InconsistentGroupProtocolError):
        group.join(join_request(protocols=(("roundrobin", b""),)), 2, SETTINGS, new_ids)
    with pytest.raises(InconsistentGroupProtocolError):
        group.join(join_request(protocol_type="connect"), 2, SETTINGS, new_ids)
    with pytest.raises(InvalidSessionTimeoutError):
        group.join(JoinRequest("", "consumer", (("range", b""),), 10, REBALANCE_MS), 2, SETTINGS, new_ids)


def test_the_protocol_every_member_supports_and_most_prefer_is_chosen():
    group, new_ids = ClassicGroup("t~g"), ids()
    first = joined(group, 0, new_ids, protocols=(("cooperative-sticky", b"c"), ("range", b"r")))
    waiting = group.join(join_request(protocols=(("range", b"r2"),)), 10, SETTINGS, new_ids)
    leader = result(group.join(join_request(member_id=first.member_id, protocols=(("cooperative-sticky", b"c"), ("range", b"r"))), 20, SETTINGS, new_ids))
    assert leader.protocol_name == result(waiting).protocol_name == "range"
    assert sorted(member.metadata for member in leader.members) == [b"r", b"r2"]


def test_leaving_rebalances_the_others_and_the_last_leaving_empties_the_group():
    group, new_ids = ClassicGroup("t~g"), ids()
    first = joined(group, 0, new_ids)
    waiting = group.join(join_request(), 10, SETTINGS, new_ids)
    result(group.join(join_request(member_id=first.member_id), 20, SETTINGS, new_ids))
    second = result(waiting)
    group.sync(first.member_id, "", 2, None, None, {}, 30)
    assert group.leave([(first.member_id, "")], 40, SETTINGS) == [None]
    assert group.state == ClassicState.PREPARING_REBALANCE
    outcomes = group.leave([(second.member_id, ""), ("ghost", "")], 50, SETTINGS)
    assert outcomes[0] is None and isinstance(outcomes[1], UnknownMemberIdError)
    assert group.state == ClassicState.EMPTY and group.is_empty


def test_commits_need_the_current_generation_and_none_during_the_sync_phase():
    group, new_ids = ClassicGroup("t~g"), ids()
    first = joined(group, 0, new_ids)
    with pytest.raises(RebalanceInProgressError):
        group.check_commit(first.member_id, "", 1)
    group.sync(first.member_id, "", 1, None, None, {}, 0)
    group.check_commit(first.member_id, "", 1)
    with pytest.raises(IllegalGenerationError):
        group.check_commit(first.member_id, "", 0)
    with pytest.raises(UnknownMemberIdError):
        group.check_commit("", "", -1)  # a commit from outside the group while it has members


def test_a_restarted_static_member_takes_its_place_and_fences_the_old_id():
    group, new_ids = ClassicGroup("t~g"), ids()
    old = joined(group, 0, new_ids, instance_id="pod-1")
    group.sync(old.member_id, "pod-1", 1, None, None, {old.member_id: b"x"}, 0)
    new = joined(group, 100, new_ids, instance_id="pod-1")
    assert new.member_id != old.member_id and list(group.members) == [new.member_id] and new.leader == new.member_id
    with pytest.raises(FencedInstanceIdError):
        group.heartbeat(old.member_id, "pod-1", 2, 110)


def test_a_leader_that_never_syncs_is_removed_after_the_rebalance_timeout_and_the_follower_is_told_to_rejoin():
    group, new_ids = ClassicGroup("t~g"), ids()
    first = joined(group, 0, new_ids)
    waiting = group.join(join_request(), 10, SETTINGS, new_ids)
    leader = result(group.join(join_request(member_id=first.member_id), 20, SETTINGS, new_ids))
    follower = result(waiting)
    pending_sync = group.sync(follower.member_id, "", 2, None, None, {}, 30)
    group.expire(20 + REBALANCE_MS, SETTINGS)
    assert leader.member_id not in group.members
    assert isinstance(result(pending_sync), RebalanceInProgressError)


def test_a_group_leaving_empty_waits_the_initial_delay_so_members_starting_together_rebalance_once():
    settings, group, new_ids = ClassicSettings(initial_rebalance_delay_ms=3_000), ClassicGroup("t~g"), ids()
    first = group.join(join_request(), 0, settings, new_ids)
    second = group.join(join_request(), 1_000, settings, new_ids)
    assert not first.done and not second.done
    assert group.next_deadline() == 3_000
    group.expire(2_999, settings)
    assert not first.done
    group.expire(3_000, settings)
    answers = [result(first), result(second)]
    assert {answer.generation for answer in answers} == {1} and len(answers[0].members) == 2


def test_a_restarted_static_follower_keeps_its_assignment_without_a_rebalance():
    group, new_ids = ClassicGroup("t~g"), ids()
    leader = joined(group, 0, new_ids, instance_id="pod-0")
    waiting = group.join(join_request(instance_id="pod-1"), 10, SETTINGS, new_ids)
    result(group.join(join_request(member_id=leader.member_id, instance_id="pod-0"), 20, SETTINGS, new_ids))
    follower = result(waiting)
    group.sync(leader.member_id, "pod-0", 2, None, None, {leader.member_id: b"a", follower.member_id: b"b"}, 30)
    back = joined(group, 1_000, new_ids, instance_id="pod-1")
    assert (back.generation, back.leader, group.state) == (2, leader.member_id, ClassicState.STABLE)
    assert result(group.sync(back.member_id, "pod-1", 2, None, None, {}, 1_010)).assignment == b"b"
    with pytest.raises(FencedInstanceIdError):
        group.heartbeat(follower.member_id, "pod-1", 2, 1_020)


def test_the_next_generation_waits_for_a_commit_checked_at_the_current_one():
    group, new_ids = ClassicGroup("t~g"), ids()
    first = joined(group, 0, new_ids)
    group.sync(first.member_id, "", 1, None, None, {}, 0)
    group.begin_commit(first.member_id, "", 1)
    waiting = group.join(join_request(), 10, SETTINGS, new_ids)
    rejoined = group.join(join_request(member_id=first.member_id), 20, SETTINGS, new_ids)
    assert not waiting.done and not rejoined.done and group.generation == 1, "the commit of generation 1 is still being stored"
    group.end_commit(30, SETTINGS)
    assert result(waiting).generation == result(rejoined).generation == 2
