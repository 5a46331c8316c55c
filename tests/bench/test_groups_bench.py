"""`python -m bench groups`: the rebalance log, the settled test, run order, ratio and verdict on
their own, then the whole benchmark, small (one run of each figure on a real `make up` stack).
No timing assertion on the figures: the machine running the suite may be busy."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.__main__ import build_parser
from bench.groups import (
    ASSIGNED,
    DEFAULT_TIMEOUTS,
    FAST_TIMEOUTS,
    SUBSCRIBED,
    ConsumeSample,
    RebalanceLog,
    covers_exactly_once,
    run_order,
    throughput_ratio,
    verdict,
)

REPOSITORY = Path(__file__).resolve().parents[2]
# A settling row: "│ session 3 s │ 3,000 │ 1,000 │ 1/1 │ 972 │ 972 │ 972 │ 1,021 │ 1,021 │ 1,021 │ 0 │"
SETTLE_ROW = r"│ {label}\s+│\s+[\d,]+(?: \(broker default\))? │\s+[\d,]+ │\s+1/1 │(?:\s+([\d,]+) │){{6}}\s+0 │"
THROUGHPUT_ROW = r"│ {label}\s+│\s+1 │\s+([\d,]+) │\s+([\d.,]+) │\s+([\d,]+) │"


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def sample(records_per_second: float, join_seconds: float = 0.0) -> ConsumeSample:
    return ConsumeSample(records=int(records_per_second), record_bytes=100, join_seconds=join_seconds, seconds=1.0)


def test_rebalance_log_follows_each_members_callbacks_and_times_the_last_change() -> None:
    clock = FakeClock()
    log = RebalanceLog(clock=clock)
    clock.now = 1.0
    log.record("m1", "assign", [0, 1, 2])
    clock.now = 2.0
    log.record("m1", "revoke", [2])
    log.record("m2", "assign", [2])
    clock.now = 3.0
    log.record("m2", "lost", [2])
    assert log.assignments() == {"m1": frozenset({0, 1}), "m2": frozenset()}
    assert log.last_change_since(1.5) == 3.0
    assert log.last_change_since(3.5) is None


def test_a_group_covers_its_partitions_only_with_each_exactly_once() -> None:
    assert covers_exactly_once([frozenset({0, 2}), frozenset({1, 3})], 4)
    assert not covers_exactly_once([frozenset({0, 1}), frozenset({1, 2, 3})], 4)  # 1 twice
    assert not covers_exactly_once([frozenset({0, 1}), frozenset({3})], 4)  # 2 nowhere


def test_heartbeats_come_at_most_every_third_of_the_session_timeout() -> None:
    assert DEFAULT_TIMEOUTS.heartbeat_interval_ms == 5000 and DEFAULT_TIMEOUTS.consumer_settings() == {}
    assert FAST_TIMEOUTS.heartbeat_interval_ms == 1000 and FAST_TIMEOUTS.consumer_settings() == {"session.timeout.ms": 3000}


def test_runs_alternate_which_mode_goes_first() -> None:
    assert run_order(1) == (ASSIGNED, SUBSCRIBED)
    assert run_order(2) == (SUBSCRIBED, ASSIGNED)


def test_ratio_is_of_the_medians_and_can_count_the_join() -> None:
    samples = {ASSIGNED: [sample(100_000), sample(200_000), sample(900_000)], SUBSCRIBED: [sample(90_000, 1.0), sample(180_000, 1.0), sample(1_000, 1.0)]}
    assert throughput_ratio(samples) == 0.45
    assert throughput_ratio(samples, with_join=True) == pytest.approx(90_000 / 2.0 / 200_000)
    assert throughput_ratio({ASSIGNED: [sample(1.0)]}) is None


def test_verdict_says_met_at_the_target_and_not_met_below_or_unmeasured() -> None:
    assert verdict(0.9).endswith("target met")
    assert verdict(0.89).endswith("target NOT met")
    assert verdict(None).endswith("target NOT met")


def test_groups_is_a_stack_scenario_with_its_own_record_default() -> None:
    arguments = build_parser().parse_args(["groups", "--runs", "2"])
    assert (arguments.scenario, arguments.runs, arguments.records) == ("groups", 2, None)
