"""The leader's ISR rules and the acks=all purgatory, without brokers or sleeps."""

from __future__ import annotations

from broker_nodes.replication.high_watermark import high_watermark_over
from broker_nodes.replication.isr import IsrTracker
from broker_nodes.replication.purgatory import AcksPurgatory


def _tracker(isr: list[int], now_ms: int = 0, *, confirm_changes: bool = False) -> IsrTracker:
    return IsrTracker(
        "t", 0, leader_id=1, leader_epoch=2, leader_epoch_start_offset=10, replicas=[1, 2, 3], isr=isr, now_ms=now_ms, confirm_changes=confirm_changes
    )


def test_follower_behind_longer_than_the_lag_limit_leaves_the_isr() -> None:
    tracker = _tracker([1, 2, 3])
    tracker.record_fetch(2, 20, leader_log_end_offset=20, high_watermark=20, now_ms=900)
    assert tracker.shrink(now_ms=1000, max_lag_ms=500) == ((3,), (1, 2))
    assert tracker.isr == (1, 2)


def test_follower_that_read_everything_of_its_previous_fetch_stays_caught_up() -> None:
    tracker = _tracker([1, 2, 3])
    tracker.record_fetch(2, 10, leader_log_end_offset=20, high_watermark=10, now_ms=100)
    tracker.record_fetch(2, 20, leader_log_end_offset=30, high_watermark=20, now_ms=400)
    # Caught up as of the previous fetch (100 ms): within the limit at 550 ms, beyond it at 700 ms.
    assert 2 not in tracker.shrink(now_ms=550, max_lag_ms=500)[0]
    assert 2 in tracker.shrink(now_ms=700, max_lag_ms=500)[0]


def test_follower_joins_only_once_it_reaches_high_watermark_and_epoch_start() -> None:
    tracker = _tracker([1])
    assert tracker.record_fetch(3, 9, leader_log_end_offset=12, high_watermark=9, now_ms=1) is None
    assert tracker.record_fetch(3, 10, leader_log_end_offset=12, high_watermark=10, now_ms=2) == (1, 3)
    assert tracker.isr == (1, 3)


def test_with_a_controller_a_shrink_is_pending_until_confirmed_and_the_high_watermark_still_waits() -> None:
    tracker = _tracker([1, 2, 3], confirm_changes=True)
    tracker.record_fetch(2, 20, leader_log_end_offset=20, high_watermark=20, now_ms=900)
    assert tracker.shrink(now_ms=1000, max_lag_ms=500) == ((3,), (1, 2))
    # Committed ISR unchanged (min.insync.replicas counts 3), the lagging replica still holds the high watermark back.
    assert tracker.isr == (1, 2, 3)
    assert tracker.pending_isr == (1, 2)
    assert tracker.maximal_isr == (1, 2, 3)
    assert sorted(tracker.in_sync_follower_log_end_offsets()) == [0, 20]
    # One change in flight at a time.
    assert tracker.shrink(now_ms=2000, max_lag_ms=500) == ((), ())
    assert tracker.confirm((1, 2), [1, 2])
    assert tracker.isr == (1, 2) and tracker.pending_isr is None
    assert tracker.in_sync_follower_log_end_offsets() == [20]


def test_with_a_controller_an_expansion_counts_the_new_replica_for_the_high_watermark_at_once() -> None:
    tracker = _tracker([1], confirm_changes=True)
    assert tracker.record_fetch(3, 10, leader_log_end_offset=12, high_watermark=10, now_ms=2) == (1, 3)
    assert tracker.isr == (1,)
    assert tracker.maximal_isr == (1, 3)
    assert tracker.in_sync_follower_log_end_offsets() == [10]
    # Another replica catching up meanwhile waits for the answer.
    assert tracker.record_fetch(2, 12, leader_log_end_offset=12, high_watermark=10, now_ms=3) is None


def test_a_refused_or_stale_answer_leaves_the_committed_isr() -> None:
    tracker = _tracker([1, 2, 3], confirm_changes=True)
    tracker.record_fetch(2, 20, leader_log_end_offset=20, high_watermark=20, now_ms=900)
    _, proposed = tracker.shrink(now_ms=1000, max_lag_ms=500)
    assert not tracker.confirm((1,), [1])  # an answer to some other proposal
    assert tracker.pending_isr == proposed
    tracker.abandon(proposed)
    assert tracker.pending_isr is None and tracker.isr == (1, 2, 3)
    # The controller stores the ISR its own way: replicas outside the partition are dropped, the leader kept.
    _, proposed = tracker.shrink(now_ms=1100, max_lag_ms=500)
    assert tracker.confirm(proposed, [2, 7])
    assert tracker.isr == (1, 2)


def test_leader_is_in_the_isr_even_when_the_map_leaves_it_out() -> None:
    assert _tracker([2, 3]).isr == (1, 2, 3)


def test_high_watermark_is_the_smallest_log_end_in_the_isr() -> None:
    assert high_watermark_over(30, [25, 28]) == 25
    assert high_watermark_over(30, []) == 30


def test_acks_waiter_wakes_only_when_the_high_watermark_covers_its_batch() -> None:
    purgatory = AcksPurgatory()
    waiter = purgatory.park(("t", 0), 10)
    purgatory.on_high_watermark("t", 0, 9)
    assert not waiter.wait(0)
    purgatory.on_high_watermark("t", 0, 10)
    assert waiter.wait(0)
    purgatory.release(waiter)


def test_closed_acks_purgatory_wakes_new_waiters_at_once() -> None:
    purgatory = AcksPurgatory()
    purgatory.close()
    assert purgatory.park(("t", 0), 5).wait(0)
