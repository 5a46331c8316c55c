"""`python -m bench flood`: the ratio on its own, then the whole benchmark, small (one short run
against a broker it starts). No timing assertion on the figures: the machine running the suite
may be busy."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from bench.flood import FloodSamples, PhaseSample, p99_ratio

REPOSITORY = Path(__file__).resolve().parents[2]
# A phase's row: "│ under flood │    1 │       87 │   10.9 │  131.9 │       9.30x │   18.9 │   0.0 │   230 │"
ROW = r"│ {label}\s+│\s+1 │\s+([\d,]+) │\s+([\d.,]+) │\s+([\d.,]+) │\s+([\d.,]+)x │\s+([-\d.,]+) │\s+([-\d.,]+) │\s+([\d,]+) │"


def phase(*latencies_ms: float) -> PhaseSample:
    return PhaseSample([int(value * 1_000_000) for value in latencies_ms], seconds=1.0, peak_rss_bytes=1)


def test_ratio_is_of_the_median_p99s_over_runs() -> None:
    samples = FloodSamples(alone=[phase(1, 2), phase(1, 4), phase(1, 6)], flooded=[phase(1, 8), phase(1, 12), phase(1, 40)])
    assert p99_ratio(samples) == 3.0
    assert p99_ratio(FloodSamples(alone=[phase(1)])) is None


def test_flood_benchmark_measures_both_phases_and_the_broker_memory() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "bench", "flood", "--quick", "--flood-seconds", "0.5", "--flood-threads", "2"],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=240,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    for label in ("alone", "under flood"):
        row = re.search(ROW.format(label=re.escape(label)), output)
        assert row is not None, output
        assert int(row.group(1).replace(",", "")) > 0  # well-behaved produces measured
        assert int(row.group(7).replace(",", "")) > 0  # the broker's peak RSS
    assert re.search(r"p99 under the flood / p99 alone: [\d.]+", output), output
    assert "Traceback" not in output
