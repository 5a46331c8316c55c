"""`python -m bench lag-latency`: the scenario is wired in and its table reports the samples.
The benchmark itself needs a whole stack and several schedule intervals: it is run by hand."""

from __future__ import annotations

from rich.console import Console

from bench.__main__ import STACK_SCENARIOS, build_parser
from bench.lag_latency import Sample, latency_table


def test_lag_latency_is_a_stack_scenario() -> None:
    assert "lag-latency" in STACK_SCENARIOS
    assert build_parser().parse_args(["lag-latency", "--runs", "3"]).runs == 3


def test_table_shows_the_spread_and_the_medians_of_wait_and_job() -> None:
    samples = [Sample(40.0, 20.0, 18.0, "a"), Sample(70.0, 50.0, 19.0, "b"), Sample(55.0, None, None, None)]
    console = Console(width=200, record=True)
    console.print(latency_table(samples, 4, 60.0, "python -m bench lag-latency --runs 4"))
    text = console.export_text()
    assert "beat every 60 s" in text
    row = next(line for line in text.splitlines() if "3/4" in line)
    assert [cell.strip() for cell in row.strip("│ ").split("│")] == ["3/4", "40.0", "55.0", "70.0", "35.0", "18.5", "19.0"]
