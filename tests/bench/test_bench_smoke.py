"""The benchmark CLI end to end in quick mode against a real broker, peers off.

No timing assertions: the machine running the suite may be busy. What must hold is that
every scenario completes, succeeds, and prints a table with positive figures for Weir.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import BrokerProcess

REPOSITORY = Path(__file__).resolve().parents[2]
# A Weir row: "│ Weir │ 100 B │ 20,000 │ 123,456 │ 11.8 │ ..."
WEIR_ROW = re.compile(r"│ Weir\s+│\s+(\d+) B │\s+([\d,]+) │\s+([\d,]+) │\s+([\d.,]+) │")


def run_bench(*arguments: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", *arguments, "--quick", "--peers", "none", "--sizes", "100"],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def weir_rates(output: str) -> list[int]:
    return [int(match.group(3).replace(",", "")) for match in WEIR_ROW.finditer(output)]


@pytest.mark.parametrize("scenario", ["produce", "consume", "e2e"])
def test_quick_scenario_against_running_broker_prints_positive_figures(broker: BrokerProcess, scenario: str) -> None:
    completed = run_bench(scenario, "--bootstrap", broker.address, "--e2e-seconds", "0.5")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    rates = weir_rates(completed.stdout)
    assert len(rates) == 1, completed.stdout
    assert rates[0] > 0


def test_quick_run_starts_its_own_broker_and_profiles_the_client(tmp_path: Path) -> None:
    completed = run_bench("produce", "--profile", str(tmp_path))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert weir_rates(completed.stdout)[0] > 0
    assert (tmp_path / "weir-produce-100B.prof").is_file()
    assert "--- by own time" in completed.stdout


def test_unreachable_peer_is_reported_in_one_line_not_a_crash(broker: BrokerProcess) -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "produce",
            "--quick",
            "--sizes",
            "100",
            "--bootstrap",
            broker.address,
            "--peers",
            "redis",
            "--redis-url",
            "redis://127.0.0.1:1/0",
        ],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "Redis Streams unavailable" in completed.stdout
    assert "Traceback" not in completed.stdout + completed.stderr


def test_e2e_it_starts_itself_adds_the_acks_all_replicated_row() -> None:
    completed = run_bench("e2e", "--e2e-seconds", "0.5", timeout=240)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    replicated = re.search(r"│ Weir, acks=all RF=3\s+│\s+100 B │\s+([\d,]+) │\s+([\d,]+) │", completed.stdout)
    assert replicated is not None, completed.stdout
    assert int(replicated.group(2).replace(",", "")) > 0
    assert "replication factor 3, min.insync.replicas=2" in completed.stdout
    assert "issue 19: p99 <= 1 ms and p99.9 <= 3 ms" in completed.stdout
