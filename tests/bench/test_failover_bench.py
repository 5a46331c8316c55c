"""`python -m bench failover`: the delivery clock and the options on their own, then the whole
benchmark, small (one run of the tuned configuration on a real `make up` stack). No timing
assertion on the figures: the machine running the suite may be busy."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.__main__ import build_parser
from bench.failover import CONFIGURATIONS, DeliveryClock, FailoverSample
from bench.replicated_topics import PartitionState

REPOSITORY = Path(__file__).resolve().parents[2]
# The configuration's row: "│ tuned  │  2,000 │  250 │  2,000 │  1/1 │  3,523 │  3,523 │  3,523 │  2,021 │  1,502 │  0 │"
TUNED_ROW = re.compile(r"│ tuned\s+│\s+2,000 │\s+250 │\s+2,000 │\s+(\d+)/(\d+) │\s+([\d,]+) │\s+([\d,]+) │\s+([\d,]+) │\s+([\d,-]+) │\s+([\d,-]+) │\s+(\d+) │")


class FakeClock:
    def __init__(self) -> None:
        self.now_ns = 0

    def __call__(self) -> int:
        return self.now_ns


def test_first_ack_after_kill_ignores_records_produced_before_the_kill() -> None:
    clock = FakeClock()
    deliveries = DeliveryClock(clock_ns=clock)
    deliveries.kill_ns = 1_000_000_000
    clock.now_ns = 4_000_000_000
    deliveries.on_delivery(999_999_999, None, None)  # produced just before the kill, acknowledged late
    assert deliveries.first_ack_after_kill_ns is None
    clock.now_ns = 4_500_000_000
    deliveries.on_delivery(1_000_000_000, None, None)
    clock.now_ns = 4_600_000_000
    deliveries.on_delivery(1_005_000_000, None, None)
    assert deliveries.acknowledged == 3
    assert deliveries.failover_ms == 3500.0


def test_failed_deliveries_are_kept_and_do_not_end_the_failover() -> None:
    clock = FakeClock()
    deliveries = DeliveryClock(clock_ns=clock)
    deliveries.kill_ns = 0
    clock.now_ns = 2_000_000
    deliveries.on_delivery(1, "NOT_ENOUGH_REPLICAS", None)
    assert deliveries.failover_ms is None
    assert deliveries.errors == ["NOT_ENOUGH_REPLICAS"]
    assert deliveries.acknowledged == 0


def test_no_failover_is_measured_before_the_kill() -> None:
    deliveries = DeliveryClock(clock_ns=FakeClock())
    deliveries.on_delivery(5, None, None)
    assert deliveries.failover_ms is None


def test_sample_splits_the_failover_at_the_leader_move() -> None:
    assert FailoverSample(killed_broker=1, failover_ms=3500.0, new_leader=2, leader_moved_ms=2100.0).after_move_ms == 1400.0
    assert FailoverSample(killed_broker=1, failover_ms=3500.0, new_leader=None, leader_moved_ms=None).after_move_ms is None


def test_session_settings_become_the_stack_environment() -> None:
    assert CONFIGURATIONS["tuned"].stack_settings() == {
        "WEIR_BROKER_SESSION_TIMEOUT_MS": "2000",
        "WEIR_BROKER_BROKER_HEARTBEAT_INTERVAL_MS": "250",
        "WEIR_BROKER_REPLICA_LAG_TIME_MAX_MS": "2000",
    }


def test_a_partition_is_healthy_only_with_a_leader_and_every_replica_in_sync() -> None:
    assert PartitionState(0, leader=2, replicas=(1, 2, 3), isr=(3, 2, 1)).healthy
    assert not PartitionState(0, leader=2, replicas=(1, 2, 3), isr=(2, 3)).healthy
    assert not PartitionState(0, leader=-1, replicas=(1, 2, 3), isr=(1, 2, 3)).healthy


def test_failover_configurations_are_chosen_by_name() -> None:
    parser = build_parser()
    assert parser.parse_args(["failover"]).failover_config == ("default", "tuned")
    assert parser.parse_args(["failover", "--failover-config", "tuned"]).failover_config == ("tuned",)
    with pytest.raises(SystemExit):
        parser.parse_args(["failover", "--failover-config", "fast"])


@pytest.mark.slow
def test_failover_benchmark_kills_the_leader_and_measures_the_first_acknowledgement() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "bench", "failover", "--runs", "1", "--failover-config", "tuned"],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=280,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    row = TUNED_ROW.search(output)
    assert row is not None, output
    measured, runs, minimum, median, maximum, _moved, _after, failures = row.groups()
    assert (measured, runs, failures) == ("1", "1", "0")
    assert minimum == median == maximum
    assert int(median.replace(",", "")) > 0
    assert re.search(r"run 1 of 1: killed broker \d; new leader \d seen after [\d,]+ ms; first acknowledgement after [\d,]+ ms", output), output
