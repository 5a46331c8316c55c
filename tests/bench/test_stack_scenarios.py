"""The stack benchmarks end to end, small, on ONE `make up` stack: `python -m bench groups`,
`replication-throughput`, `transactions --quick` and `control-plane` each run as users run them,
attached to the module's stack (``WEIR_BENCH_STACK``, see bench/stack.py) instead of starting their
own: a stack start costs about 45 s of CPU, and what these tests check (each scenario runs end to
end and prints its table, its ratio and its verdict) does not need a fresh stack. Their topics have
distinct names. Starting and stopping a stack of its own is covered by `bench failover`
(tests/bench/test_failover_bench.py), whose stack has settings of its own.

No timing assertion on the figures: the machine running the suite may be busy; the figures are
measured by running the benchmarks themselves.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from bench.groups import ASSIGNED, SUBSCRIBED
from bench.stack import ATTACH_VARIABLE, LocalStack
from bench.transactions import E2E_LABEL, IDEMPOTENT, TRANSACTIONAL_100, TRANSACTIONAL_1000
from tests.bench.conftest import SMALL_INTERNAL_TOPICS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

REPOSITORY = Path(__file__).resolve().parents[2]
SCENARIO_TIMEOUT_SECONDS = 280

# groups: a settling row "│ session 3 s │ 3,000 │ 1,000 │ 1/1 │ 972 │ 972 │ 972 │ 1,021 │ 1,021 │ 1,021 │ 0 │" and a throughput row.
SETTLE_ROW = r"│ {label}\s+│\s+[\d,]+(?: \(broker default\))? │\s+[\d,]+ │\s+1/1 │(?:\s+([\d,]+) │){{6}}\s+0 │"
GROUPS_THROUGHPUT_ROW = r"│ {label}\s+│\s+1 │\s+([\d,]+) │\s+([\d.,]+) │\s+([\d,]+) │"
# replication-throughput: "│ RF=3 acks=all │    1 │   149,171 │  14.2 │  842.1 │  927.4 │"
REPLICATION_ROW = r"│ {label}\s+│\s+1 │\s+([\d,]+) │\s+([\d.,]+) │"
# transactions: "│ transactional, 1,000 records/txn │    1 │  12,345 │  1.2 │  0.93 │  12.0 │  30.1 │"
TRANSACTIONS_ROW = r"│ {label}\s+│\s+(\d+) │\s+([\d,]+) │\s+([\d.,]+) │\s+([\d.]+|-) │\s+([\d.,]+|-) │\s+([\d.,]+|-) │"
# control-plane: the run's row "│   1 │          2/2 │  812.3 │ ... │ 0 │"
# run, ready/created, ..., requests, achieved req/s, API p50, p99, max, web CPU ms/req (- when unread), failures
CONTROL_PLANE_ROW = re.compile(r"│\s+1 │\s+(\d+)/(\d+) │.*│\s+([\d,]+) │\s+[\d.,]+ │\s+([\d.,]+) │\s+([\d.,]+) │\s+([\d.,]+) │\s+[\d.,-]+ │\s+(\d+) │")


@pytest.fixture(scope="module")
def stack_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A running `make up` stack (internal topics of 3 partitions, as tests/bench/conftest.py gives every
    stack of the suite), described in a file for ``WEIR_BENCH_STACK``; stopped after the module."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in SMALL_INTERNAL_TOPICS.items():
            patch.setenv(name, value)
        patch.delenv(ATTACH_VARIABLE, raising=False)
        with LocalStack(Console(stderr=True), "suite") as stack:
            yield stack.attach_file(tmp_path_factory.mktemp("stack") / "stack.json")


def run_scenario(stack_file: Path, *arguments: str) -> str:
    """``python -m bench <arguments>`` on the module's stack; its output (stdout and stderr), after checking it succeeded."""
    completed = subprocess.run(
        [sys.executable, "-m", "bench", *arguments],
        cwd=REPOSITORY,
        env={**os.environ, ATTACH_VARIABLE: str(stack_file)},
        capture_output=True,
        text=True,
        timeout=SCENARIO_TIMEOUT_SECONDS,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert "on the running stack in" in output, output
    return output


def test_groups_benchmark_measures_settling_and_the_throughput_ratio(stack_file: Path) -> None:
    output = run_scenario(stack_file, "groups", "--runs", "1", "--records", "5000")
    for label in ("default", "session 3 s"):
        assert re.search(SETTLE_ROW.format(label=re.escape(label)), output) is not None, output
    for label in (ASSIGNED, SUBSCRIBED):
        row = re.search(GROUPS_THROUGHPUT_ROW.format(label=re.escape(label)), output)
        assert row is not None and int(row.group(1).replace(",", "")) > 0, output
    assert re.search(r"subscribe\(\) / assign\(\) \(median records/s\): [\d.]+, target >= 0.9: target (met|NOT met)", output), output
    assert re.search(r"groups: session 3 s: run 1 of 1: settled [\d,]+ ms after a member left, [\d,]+ ms after one joined", output), output


def test_replication_throughput_benchmark_measures_both_workloads_and_their_ratio(stack_file: Path) -> None:
    output = run_scenario(stack_file, "replication-throughput", "--runs", "1", "--records", "3000")
    for label in ("RF=1 acks=1", "RF=3 acks=all", "RF=1 acks=1 (librdkafka)", "RF=3 acks=all (librdkafka)"):
        row = re.search(REPLICATION_ROW.format(label=re.escape(label)), output)
        assert row is not None, output
        assert int(row.group(1).replace(",", "")) > 0
    assert re.search(r"RF=3 acks=all / RF=1 acks=1 \(median records/s\): [\d.]+, target >= 0.4: target (met|NOT met)", output), output
    assert re.search(r"RF=3 acks=all / RF=1 acks=1 \(librdkafka\) \(median records/s\): [\d.]+, target >= 0.4: target (met|NOT met)", output), output
    assert re.search(r"RF=3 acks=all through librdkafka: [\d,]+ records/s \(median\), issue 14 target >= 421,823: target (met|NOT met)", output), output


def test_transactions_benchmark_measures_every_row_and_the_ratio(stack_file: Path) -> None:
    output = run_scenario(stack_file, "transactions", "--quick")
    for label in (IDEMPOTENT.label, TRANSACTIONAL_100.label, TRANSACTIONAL_1000.label, E2E_LABEL):
        row = re.search(TRANSACTIONS_ROW.format(label=re.escape(label)), output)
        assert row is not None, output
        assert row.group(1) == "1" and int(row.group(2).replace(",", "")) > 0, output
    assert "python -m bench transactions --runs 1 --records 3000 --record-bytes 100" in output
    for client in ("librdkafka", "sdk"):  # both clients by default, each against its own idempotent row
        assert re.search(
            rf"{client}: transactional \(1,000 records/txn\) / idempotent \(median records/s\): [\d.]+, target >= 0.8: target (met|NOT met)", output
        ), output
    assert "Machine: " in output


def test_control_plane_benchmark_creates_ready_topics_and_measures_the_api(stack_file: Path) -> None:
    output = run_scenario(stack_file, "control-plane", "--runs", "1", "--topics", "2", "--rate", "20", "--seconds", "1")
    row = CONTROL_PLANE_ROW.search(output)
    assert row is not None, output
    ready, created, requests, _p50, p99, _maximum, failures = row.groups()
    assert (ready, created) == ("2", "2")
    assert int(requests.replace(",", "")) == 20
    assert float(p99.replace(",", "")) > 0
    assert failures == "0"
    assert "Celery uses" in output
    assert re.search(
        r"topic ready \(median of run medians\): [\d,]+ ms; issue 3 target < 1,000 ms: (met|NOT met); issue 19 goal <= 100 ms at 1,000 topics per tenant: not judged \(0 topics per tenant here\)",
        output,
    ), output
    assert re.search(
        r"API p99 \(median of runs\): [\d.,]+ ms; issue 3 target < 100 ms at 50 requests/s: (met|NOT met); issue 19 goal <= 50 ms at 200 requests/s on PostgreSQL: not judged \(20 requests/s on SQLite here\)",
        output,
    ), output
