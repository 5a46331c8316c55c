"""`python -m bench control-plane` end to end, small: the whole stack starts, topics become
ready, the API load runs, the report prints. No timing assertion: the machine running the
suite may be busy; the figures are measured by running the benchmark itself."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
# The run's row: "│   1 │          2/2 │  812.3 │ ... │ 0 │"
RUN_ROW = re.compile(r"│\s+1 │\s+(\d+)/(\d+) │.*│\s+([\d,]+) │\s+[\d.,]+ │\s+([\d.,]+) │\s+([\d.,]+) │\s+([\d.,]+) │\s+(\d+) │")


@pytest.mark.slow
def test_control_plane_benchmark_creates_ready_topics_and_measures_the_api() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "bench", "control-plane", "--runs", "1", "--topics", "2", "--rate", "20", "--seconds", "1"],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    row = RUN_ROW.search(output)
    assert row is not None, output
    ready, created, requests, _p50, p99, _maximum, failures = row.groups()
    assert (ready, created) == ("2", "2")
    assert int(requests.replace(",", "")) == 20
    assert float(p99.replace(",", "")) > 0
    assert failures == "0"
    assert "Celery uses" in output
    assert re.search(r"topic ready \(median of run medians\): [\d,]+ ms, target < 1,000 ms: target (met|NOT met)", output), output
    assert re.search(r"API p99 \(median of runs\): [\d.,]+ ms, target < 100 ms: target (met|NOT met)", output), output
