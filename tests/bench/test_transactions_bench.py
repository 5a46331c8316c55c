"""`python -m bench transactions`: run order, ratio, verdict, the table's rows and the dispatch on
their own, then the whole benchmark, small (`--quick`: one run of a few thousand records on a real
`make up` stack). No timing assertion on the figures: the machine running the suite may be busy."""

from __future__ import annotations

import io
import re
import sys
import types
from array import array
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import bench
from bench.__main__ import main as bench_main
from bench.measurements import LatencySample, LatencySummary, ThroughputSample
from bench.transactions import (
    E2E_LABEL,
    IDEMPOTENT,
    TRANSACTIONAL_100,
    TRANSACTIONAL_1000,
    WORKLOADS,
    RunSample,
    TransactionsRunError,
    _warm_up,
    parse_clients,
    results_table,
    run_order,
    throughput_ratio,
    verdict,
)

REPOSITORY = Path(__file__).resolve().parents[2]
# A row: "│ transactional, 1,000 records/txn │    1 │  12,345 │  1.2 │  0.93 │  12.0 │  30.1 │"
ROW = r"│ {client}\s+│ {label}\s+│\s+(\d+) │\s+([\d,]+) │\s+([\d.,]+) │\s+([\d.]+|-) │\s+([\d.,]+|-) │\s+([\d.,]+|-) │"


def runs_at(*records_per_second: int, commit_ms: float | None = None) -> list[RunSample]:
    latency = LatencySummary(count=10, p50_ms=commit_ms, p99_ms=commit_ms * 2, p999_ms=commit_ms * 2, max_ms=commit_ms * 3) if commit_ms else None
    return [RunSample(ThroughputSample(records=rate, record_size=100, seconds=1.0), latency) for rate in records_per_second]


def rendered(table: Any) -> str:
    console = Console(width=220, record=True, file=io.StringIO())
    console.print(table)
    return console.export_text()


def test_runs_alternate_which_workload_goes_first() -> None:
    assert run_order(1) == WORKLOADS == (IDEMPOTENT, TRANSACTIONAL_100, TRANSACTIONAL_1000)
    assert run_order(2) == (TRANSACTIONAL_1000, TRANSACTIONAL_100, IDEMPOTENT)


def test_ratio_is_of_the_medians_over_runs_against_the_idempotent_baseline() -> None:
    samples = {IDEMPOTENT: runs_at(100_000, 200_000, 300_000), TRANSACTIONAL_1000: runs_at(50_000, 180_000, 900_000), TRANSACTIONAL_100: runs_at(20_000)}
    assert throughput_ratio(samples) == 0.9
    assert throughput_ratio(samples, TRANSACTIONAL_100) == 0.1
    assert throughput_ratio({TRANSACTIONAL_1000: runs_at(1)}) is None


def test_verdict_says_met_at_the_target_and_not_met_below_or_unmeasured() -> None:
    assert verdict(0.8).endswith("target >= 0.8: target met")
    assert verdict(0.79).endswith("target NOT met")
    assert verdict(None).endswith("not measured, target >= 0.8: target NOT met")


def test_the_table_has_a_row_per_workload_and_the_end_to_end_row() -> None:
    samples = {IDEMPOTENT: runs_at(200_000), TRANSACTIONAL_100: runs_at(100_000, commit_ms=5.0), TRANSACTIONAL_1000: runs_at(180_000, commit_ms=20.0)}
    end_to_end = [LatencySample(record_size=100, target_rate=1000, seconds=1.0, latencies_ns=array("q", [30_000_000] * 1000))]
    sdk = {IDEMPOTENT: runs_at(100_000), TRANSACTIONAL_1000: runs_at(30_000, commit_ms=25.0)}
    text = rendered(results_table({"librdkafka": samples, "sdk": sdk}, end_to_end, 1000, 100, "python -m bench transactions --runs 1"))
    assert "python -m bench transactions --runs 1" in text
    idempotent = re.search(ROW.format(client="librdkafka", label=re.escape(IDEMPOTENT.label)), text)
    assert idempotent is not None and idempotent.group(2) == "200,000" and idempotent.group(4) == "1.00" and idempotent.group(5) == "-", text
    thousand = re.search(ROW.format(client="librdkafka", label=re.escape(TRANSACTIONAL_1000.label)), text)
    assert thousand is not None and thousand.groups()[3:] == ("0.90", "20.0", "40.0"), text
    # each client's ratio is against its own idempotent row
    sdk_thousand = re.search(ROW.format(client="sdk", label=re.escape(TRANSACTIONAL_1000.label)), text)
    assert sdk_thousand is not None and sdk_thousand.group(2) == "30,000" and sdk_thousand.groups()[3:] == ("0.30", "25.0", "50.0"), text
    e2e = re.search(ROW.format(client="librdkafka", label=re.escape(E2E_LABEL)), text)
    assert e2e is not None and e2e.group(5) == "30.0", text


def test_an_unmeasured_workload_shows_an_empty_row() -> None:
    text = rendered(results_table({"sdk": {}}, [], 1000, 100, "cmd"))
    assert re.search(rf"│ sdk\s+│ {re.escape(TRANSACTIONAL_100.label)}\s+│\s+0 │\s+- │", text), text
    assert re.search(rf"│ librdkafka\s+│ {re.escape(E2E_LABEL)}\s+│\s+0 │\s+- │", text), text


def test_verdict_names_its_client() -> None:
    assert verdict(0.5, "sdk") == "sdk: transactional (1,000 records/txn) / idempotent (median records/s): 0.50, target >= 0.8: target NOT met"


def test_clients_are_named_comma_separated_each_once() -> None:
    assert parse_clients("sdk") == ("sdk",)
    assert parse_clients("sdk, librdkafka") == ("sdk", "librdkafka")
    with pytest.raises(ValueError, match="unknown client 'java': choose from librdkafka, sdk"):
        parse_clients("sdk,java")
    with pytest.raises(ValueError, match="named twice"):
        parse_clients("sdk,sdk")


def test_an_unknown_client_is_refused_by_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench_main(["transactions", "--client", "kafkajs"])
    assert "unknown client 'kafkajs'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["transactions", "--quick"], {"runs": 1, "records": 3_000, "record_bytes": 100, "e2e_seconds": 2.0, "clients": ("librdkafka", "sdk")}),
        (
            ["transactions", "--records", "7", "--runs", "2", "--e2e-seconds", "4", "--client", "sdk"],
            {"runs": 2, "records": 7, "record_bytes": 100, "e2e_seconds": 4.0, "clients": ("sdk",)},
        ),
        (["transactions"], {"runs": 3, "records": 100_000, "record_bytes": 100, "e2e_seconds": 10.0, "clients": ("librdkafka", "sdk")}),
    ],
)
def test_the_scenario_runs_with_its_options(monkeypatch: pytest.MonkeyPatch, argv: list[str], expected: dict[str, Any]) -> None:
    from bench import transactions

    recorded: dict[str, Any] = {}

    def fake_main(**options: Any) -> int:
        options.pop("console")
        recorded.update(options)
        return 3

    module = types.SimpleNamespace(
        **{name: getattr(transactions, name) for name in dir(transactions) if name.isupper()}, main=fake_main, parse_clients=transactions.parse_clients
    )
    monkeypatch.setitem(sys.modules, "bench.transactions", module)
    monkeypatch.setattr(bench, "transactions", module, raising=False)
    assert bench_main(argv) == 3
    assert recorded == expected


class _WarmUpProducer:
    """Records what was produced; ``flush`` reports each record with ``error`` and leaves ``left`` records queued."""

    def __init__(self, error: object = None, left: int = 0) -> None:
        self.produced: list[tuple[str, bytes]] = []
        self._reports: list[Any] = []
        self._error = error
        self._left = left

    def produce(self, topic: str, value: bytes, on_delivery: Any) -> None:
        self.produced.append((topic, value))
        self._reports.append(on_delivery)

    def flush(self, timeout: float) -> int:
        for report in self._reports:
            report(self._error, None)
        return self._left


def test_the_idempotent_run_delivers_a_warm_up_record_before_its_clock_starts() -> None:
    producer = _WarmUpProducer()
    _warm_up(producer, "demo-bench-txn-idempotent-run1")
    assert [topic for topic, _ in producer.produced] == ["demo-bench-txn-idempotent-run1"]
    for failing in (_WarmUpProducer(error="broker down"), _WarmUpProducer(left=1)):
        with pytest.raises(TransactionsRunError):
            _warm_up(failing, "demo-bench-txn-idempotent-run1")
