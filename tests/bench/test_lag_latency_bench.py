"""`python -m bench lag-latency`: the scenario is wired in and its table reports p50/p99 against
issue 17's targets. The benchmark itself needs a whole stack: it is run by hand."""

from __future__ import annotations

from rich.console import Console

from bench.__main__ import STACK_SCENARIOS, build_parser
from bench.lag_latency import latency_table, percentile


def test_lag_latency_is_a_stack_scenario() -> None:
    assert "lag-latency" in STACK_SCENARIOS
    assert build_parser().parse_args(["lag-latency", "--runs", "3"]).runs == 3


def test_percentiles_are_nearest_rank() -> None:
    values = [float(value) for value in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.99), percentile(values, 1.0)) == (50.0, 99.0, 100.0)
    assert percentile([3.0], 0.99) == 3.0 and percentile([], 0.5) is None


def test_table_shows_the_spread_and_whether_the_targets_are_met() -> None:
    console = Console(width=220, record=True)
    console.print(latency_table([1.0, 2.0, 3.0, 4.0], 4, "python -m bench lag-latency --runs 4"))
    console.print(latency_table([1.0, 12.0], 3, "python -m bench lag-latency --runs 3"))
    text = console.export_text()
    met = next(line for line in text.splitlines() if "4/4" in line)
    assert [cell.strip() for cell in met.strip("│ ").split("│")] == ["4/4", "1.00", "2.00", "4.00", "4.00", "4.00", "met"]
    missed = next(line for line in text.splitlines() if "2/3" in line)
    assert missed.rstrip(" │").endswith("not met")
