"""Election rules as tables: ISR first, offline when no ISR member lives, unclean only when allowed;
controlled shutdown; preferred-leader election with Kafka's imbalance percentage."""

from __future__ import annotations

import pytest

from webapp.controller.election import (
    NO_LEADER,
    PartitionState,
    after_broker_failure,
    after_broker_return,
    after_controlled_shutdown,
    elect_leader,
    preferred_elections,
    preferred_leader_election,
)


@pytest.mark.parametrize(
    ("replicas", "isr", "live", "unclean", "expected"),
    [
        ((1, 2, 3), (1, 2, 3), {1, 2, 3}, False, 1),  # preferred leader first
        ((1, 2, 3), (2, 3), {1, 2, 3}, False, 2),  # a live replica outside the ISR never leads cleanly
        ((1, 2, 3), (1, 3), {2, 3}, False, 3),  # first live ISR member in replica order
        ((1, 2, 3), (1,), {2, 3}, False, NO_LEADER),  # no live ISR member: offline
        ((1, 2, 3), (1,), {2, 3}, True, 2),  # unclean: any live replica
        ((1, 2, 3), (1,), set(), True, NO_LEADER),  # nobody alive, even unclean
        ((3, 1, 2), (1, 2, 3), {1, 2, 3}, False, 3),  # replica order, not id order
    ],
)
def test_elect_leader_follows_the_rules(replicas, isr, live, unclean, expected) -> None:  # type: ignore[no-untyped-def]
    assert elect_leader(replicas, isr, live, unclean_allowed=unclean) == expected


@pytest.mark.parametrize(
    ("state", "failed", "live", "unclean", "expected"),
    [
        # The leader dies, an ISR member takes over with a higher epoch, the ISR shrinks.
        (PartitionState((1, 2, 3), (1, 2, 3), 1, 4), 1, {2, 3}, False, PartitionState((1, 2, 3), (2, 3), 2, 5)),
        # A follower dies: same leader, smaller ISR, and a new epoch that carries the ISR to the leader.
        (PartitionState((1, 2, 3), (1, 2, 3), 1, 4), 3, {1, 2}, False, PartitionState((1, 2, 3), (1, 2), 1, 5)),
        # The leader dies and no ISR member is alive: offline, epoch still increases, ISR keeps its last member.
        (PartitionState((1, 2, 3), (1,), 1, 4), 1, {2, 3}, False, PartitionState((1, 2, 3), (1,), NO_LEADER, 5)),
        # Same with unclean election on: a live out-of-sync replica leads alone.
        (PartitionState((1, 2, 3), (1,), 1, 4), 1, {2, 3}, True, PartitionState((1, 2, 3), (2,), 2, 5)),
        # The live ISR member is preferred over an out-of-sync replica even when unclean is on.
        (PartitionState((1, 2, 3), (1, 3), 1, 4), 1, {2, 3}, True, PartitionState((1, 2, 3), (3,), 3, 5)),
        # The only ISR member left of an offline partition dies again: nothing to change.
        (PartitionState((1, 2, 3), (1,), NO_LEADER, 5), 1, {2}, False, PartitionState((1, 2, 3), (1,), NO_LEADER, 5)),
    ],
)
def test_after_broker_failure(state, failed, live, unclean, expected) -> None:  # type: ignore[no-untyped-def]
    assert after_broker_failure(state, failed, live, unclean_allowed=unclean) == expected


def test_failure_of_a_broker_outside_the_partition_changes_nothing() -> None:
    assert after_broker_failure(PartitionState((1, 2), (1, 2), 1, 0), 3, {1, 2}, unclean_allowed=False) is None


def test_failure_of_an_out_of_sync_follower_changes_nothing() -> None:
    assert after_broker_failure(PartitionState((1, 2, 3), (1, 2), 1, 0), 3, {1, 2}, unclean_allowed=False) is None


@pytest.mark.parametrize(
    ("state", "returned", "live", "unclean", "expected"),
    [
        # The last ISR member returns: it leads again at a higher epoch.
        (PartitionState((1, 2, 3), (1,), NO_LEADER, 5), 1, {1}, False, PartitionState((1, 2, 3), (1,), 1, 6)),
        # An out-of-sync replica returns: the partition stays offline without unclean election.
        (PartitionState((1, 2, 3), (1,), NO_LEADER, 5), 2, {2}, False, None),
        # ... and leads alone with it.
        (PartitionState((1, 2, 3), (1,), NO_LEADER, 5), 2, {2}, True, PartitionState((1, 2, 3), (2,), 2, 6)),
        # A partition with a leader is left alone.
        (PartitionState((1, 2, 3), (2, 3), 2, 5), 1, {1, 2, 3}, False, None),
    ],
)
def test_after_broker_return(state, returned, live, unclean, expected) -> None:  # type: ignore[no-untyped-def]
    assert after_broker_return(state, returned, live, unclean_allowed=unclean) == expected


@pytest.mark.parametrize("failed", [1, 2, 3])
def test_leader_epochs_never_decrease_through_failures_and_returns(failed: int) -> None:
    state = PartitionState((1, 2, 3), (1, 2, 3), 1, 0)
    epochs = [state.leader_epoch]
    live = {1, 2, 3}
    for node_id in (failed, *(n for n in (1, 2, 3) if n != failed)):
        live.discard(node_id)
        state = after_broker_failure(state, node_id, live, unclean_allowed=False) or state
        epochs.append(state.leader_epoch)
    live.add(failed)
    state = after_broker_return(state, failed, live, unclean_allowed=False) or state
    epochs.append(state.leader_epoch)
    assert epochs == sorted(epochs)
    assert epochs[-1] > epochs[0]


@pytest.mark.parametrize(
    ("state", "live", "expected"),
    [
        # It leads: the first other live ISR member in replica order takes over, the ISR drops it.
        (PartitionState((1, 2, 3), (1, 2, 3), 1, 4), {2, 3}, PartitionState((1, 2, 3), (2, 3), 2, 5)),
        (PartitionState((1, 3, 2), (1, 2, 3), 1, 4), {2, 3}, PartitionState((1, 3, 2), (2, 3), 3, 5)),
        # A dead ISR member is skipped for a live one.
        (PartitionState((1, 2, 3), (1, 2, 3), 1, 4), {3}, PartitionState((1, 2, 3), (2, 3), 3, 5)),
        # It leads alone: nothing moves, the broker keeps the partition (reported as remaining).
        (PartitionState((1, 2, 3), (1,), 1, 4), {2, 3}, None),
        # Only out-of-sync replicas are alive: never an unclean handover.
        (PartitionState((1, 2, 3), (1, 2), 1, 4), {3}, None),
        # It follows: it leaves the ISR; same leader, new epoch (so that the leader takes the ISR).
        (PartitionState((2, 1, 3), (2, 1, 3), 2, 4), {2, 3}, PartitionState((2, 1, 3), (2, 3), 2, 5)),
        # It is the last ISR member of an offline partition: the ISR never becomes empty.
        (PartitionState((2, 1), (1,), NO_LEADER, 4), {2}, None),
        # Not in the ISR, not the leader, or not a replica at all: unaffected.
        (PartitionState((2, 1, 3), (2, 3), 2, 4), {2, 3}, None),
        (PartitionState((2, 3), (2, 3), 2, 4), {2, 3}, None),
    ],
)
def test_after_controlled_shutdown_of_broker_1(state: PartitionState, live: set[int], expected: PartitionState | None) -> None:
    assert after_controlled_shutdown(state, 1, live) == expected


@pytest.mark.parametrize(
    ("state", "live", "expected"),
    [
        # The preferred replica is back in the ISR: it leads again at a higher epoch.
        (PartitionState((1, 2, 3), (2, 3, 1), 2, 5), {1, 2, 3}, PartitionState((1, 2, 3), (2, 3, 1), 1, 6)),
        # Already the leader: nothing to do.
        (PartitionState((1, 2, 3), (1, 2, 3), 1, 5), {1, 2, 3}, None),
        # Alive but not in the ISR (still catching up): it must not lead.
        (PartitionState((1, 2, 3), (2, 3), 2, 5), {1, 2, 3}, None),
        # In the ISR but not alive.
        (PartitionState((1, 2, 3), (1, 2, 3), 2, 5), {2, 3}, None),
        # An offline partition whose preferred replica is alive and in the ISR gets it as leader.
        (PartitionState((1, 2), (1,), NO_LEADER, 5), {1}, PartitionState((1, 2), (1,), 1, 6)),
    ],
)
def test_preferred_leader_election(state: PartitionState, live: set[int], expected: PartitionState | None) -> None:
    assert preferred_leader_election(state, live) == expected


def _led_by(leaders: list[int], preferred: int = 1) -> dict[int, PartitionState]:
    """Partitions 0..n-1 that all prefer ``preferred``, with the given leaders, everyone in the ISR."""
    replicas = (preferred, *(node for node in (1, 2, 3) if node != preferred))
    return {index: PartitionState(replicas, (1, 2, 3), leader, 7) for index, leader in enumerate(leaders)}


@pytest.mark.parametrize(
    ("leaders", "percentage", "moved"),
    [
        # 1 of 10 partitions broker 1 prefers is led elsewhere: 10% is not above 10%.
        ([1] * 9 + [2], 10.0, []),
        # 2 of 10: 20% is above 10%, both move.
        ([1] * 8 + [2, 3], 10.0, [8, 9]),
        # The same 10% is above a 5% threshold.
        ([1] * 9 + [2], 5.0, [9]),
        # 0%: any partition not on its preferred leader moves.
        ([1, 1, 1, 2], 0.0, [3]),
        # An operator's election (no percentage) moves every partition that can move.
        ([1] * 9 + [2], None, [9]),
        # Balanced: nothing moves.
        ([1, 1, 1], 10.0, []),
    ],
)
def test_preferred_elections_respect_the_imbalance_percentage(leaders: list[int], percentage: float | None, moved: list[int]) -> None:
    states = _led_by(leaders)
    elected = preferred_elections(states, {1, 2, 3}, imbalance_percentage=percentage)
    assert sorted(elected) == moved
    assert all(state.leader == 1 and state.leader_epoch == 8 for state in elected.values())


def test_preferred_elections_count_the_imbalance_per_broker() -> None:
    # Broker 1 leads 1 of the 2 partitions it prefers (50% imbalanced); broker 2 leads all 4 of its own.
    states = {
        "a": PartitionState((1, 2), (1, 2), 1, 0),
        "b": PartitionState((1, 2), (1, 2), 2, 3),
        **{f"c{index}": PartitionState((2, 1), (1, 2), 2, 0) for index in range(4)},
    }
    elected = preferred_elections(states, {1, 2}, imbalance_percentage=10.0)
    assert elected == {"b": PartitionState((1, 2), (1, 2), 1, 4)}


def test_imbalanced_broker_outside_the_isr_gets_nothing_back() -> None:
    # Broker 1 prefers both partitions and leads neither; it is alive but in the ISR of only one.
    states = {
        0: PartitionState((1, 2, 3), (2, 3), 2, 1),
        1: PartitionState((1, 2, 3), (1, 2, 3), 2, 1),
    }
    assert preferred_elections(states, {1, 2, 3}, imbalance_percentage=10.0) == {1: PartitionState((1, 2, 3), (1, 2, 3), 1, 2)}
