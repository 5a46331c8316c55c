"""Election rules as tables: ISR first, offline when no ISR member lives, unclean only when allowed."""

from __future__ import annotations

import pytest

from webapp.fleet.controller.election import NO_LEADER, PartitionState, after_broker_failure, after_broker_return, elect_leader


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
