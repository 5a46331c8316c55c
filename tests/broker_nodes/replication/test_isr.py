"""The leader's ISR rules and the acks=all purgatory, without brokers or sleeps."""

from __future__ import annotations

from broker_nodes.replication.high_watermark import high_watermark_over
from broker_nodes.replication.isr import IsrTracker
from broker_nodes.replication.purgatory import AcksPurgatory


def _tracker(isr: list[int], now_ms: int = 0) -> IsrTracker:
    return IsrTracker("t", 0, leader_id=1, leader_epoch=2, leader_epoch_start_offset=10, replicas=[1, 2, 3], isr=isr, now_ms=now_ms)


def test_follower_behind_longer_than_the_lag_limit_leaves_the_isr() -> None:
    tracker = _tracker([1, 2, 3])
    tracker.record_fetch(2, 20, leader_log_end_offset=20, high_watermark=20, now_ms=900)
    assert tracker.shrink(now_ms=1000, max_lag_ms=500) == (3,)
    assert tracker.isr == (1, 2)


def test_follower_that_read_everything_of_its_previous_fetch_stays_caught_up() -> None:
    tracker = _tracker([1, 2, 3])
    tracker.record_fetch(2, 10, leader_log_end_offset=20, high_watermark=10, now_ms=100)
    tracker.record_fetch(2, 20, leader_log_end_offset=30, high_watermark=20, now_ms=400)
    # Caught up as of the previous fetch (100 ms): within the limit at 550 ms, beyond it at 700 ms.
    assert 2 not in tracker.shrink(now_ms=550, max_lag_ms=500)
    assert 2 in tracker.shrink(now_ms=700, max_lag_ms=500)


def test_follower_joins_only_once_it_reaches_high_watermark_and_epoch_start() -> None:
    tracker = _tracker([1])
    assert not tracker.record_fetch(3, 9, leader_log_end_offset=12, high_watermark=9, now_ms=1)
    assert tracker.record_fetch(3, 10, leader_log_end_offset=12, high_watermark=10, now_ms=2)
    assert tracker.isr == (1, 3)


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
