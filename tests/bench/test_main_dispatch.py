"""``python -m bench <stack scenario>`` runs that scenario's main() with its options: given, else --quick's, else the default."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

import bench
from bench.__main__ import STACK_RUNNERS, STACK_SCENARIOS, main

# Stand-in constants: the dispatch must take them from the scenario's module.
CONSTANTS = {
    "DEFAULT_RUNS": 9,
    "QUICK_RECORDS": 11,
    "DEFAULT_RECORDS": 99,
    "QUICK_ROWS": 12,
    "DEFAULT_ROWS": 120,
    "QUICK_READ_ROWS": 13,
    "DEFAULT_READ_ROWS": 130,
    "QUICK_SECONDS": 0.5,
    "DEFAULT_SECONDS": 5.0,
}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, Any]]:
    """Replace every stack scenario's module by one whose main() records its arguments."""
    recorded: dict[str, dict[str, Any]] = {}
    for name in ("control_plane", "failover", "replication_throughput", "usage_job", "lag_latency", "flood", "groups", "partition_scale"):

        def fake_main(*, _name: str = name, **options: Any) -> int:
            options.pop("console")
            recorded[_name] = options
            return 3

        module = types.SimpleNamespace(main=fake_main, **CONSTANTS)
        monkeypatch.setitem(sys.modules, f"bench.{name}", module)
        monkeypatch.setattr(bench, name, module, raising=False)
    return recorded


def test_every_stack_scenario_has_a_runner() -> None:
    assert set(STACK_RUNNERS) == set(STACK_SCENARIOS)


@pytest.mark.parametrize(
    ("argv", "module", "expected"),
    [
        (["control-plane"], "control_plane", {"runs": 3, "topics": 20, "rate": 50, "seconds": 20.0, "database": "sqlite", "topics_per_tenant": 0}),
        (
            ["control-plane", "--quick", "--topics", "4"],
            "control_plane",
            {"runs": 1, "topics": 4, "rate": 50, "seconds": 20.0, "database": "sqlite", "topics_per_tenant": 0},
        ),
        (
            ["control-plane", "--database", "postgres", "--topics-per-tenant", "1000", "--rate", "200"],
            "control_plane",
            {"runs": 3, "topics": 20, "rate": 200, "seconds": 20.0, "database": "postgres", "topics_per_tenant": 1000},
        ),
        (["failover", "--failover-config", "tuned"], "failover", {"runs": 5, "configuration_names": ("tuned",)}),
        (["replication-throughput", "--quick"], "replication_throughput", {"runs": 1, "records": 11, "record_bytes": 100, "delivery": "every"}),
        (
            ["replication-throughput", "--records", "7", "--runs", "2"],
            "replication_throughput",
            {"runs": 2, "records": 7, "record_bytes": 100, "delivery": "every"},
        ),
        (["usage-job", "--rows", "5"], "usage_job", {"rows": 5, "read_rows": 130, "runs": 9, "scale": False}),
        (["usage-job", "--quick"], "usage_job", {"rows": 12, "read_rows": 13, "runs": 1, "scale": False}),
        (["usage-job", "--quick", "--usage-scale"], "usage_job", {"rows": 12, "read_rows": 13, "runs": 1, "scale": True}),
        (["lag-latency"], "lag_latency", {"runs": 9}),
        (["flood", "--quick", "--broker-config", "a=b"], "flood", {"runs": 1, "seconds": 0.5, "threads": 4, "broker_configs": {"a": "b"}}),
        (["flood", "--flood-seconds", "3"], "flood", {"runs": 9, "seconds": 3.0, "threads": 4, "broker_configs": {}}),
        (["groups", "--records", "8", "--record-bytes", "64"], "groups", {"runs": 9, "records": 8, "record_bytes": 64}),
        (["partition-scale", "--quick"], "partition_scale", {"runs": 1, "records": 11, "idle_stack": False}),
        (["partition-scale", "--idle-stack"], "partition_scale", {"runs": 9, "records": 99, "idle_stack": True}),
    ],
)
def test_a_stack_scenario_runs_its_main_with_its_options(calls: dict[str, dict[str, Any]], argv: list[str], module: str, expected: dict[str, Any]) -> None:
    assert main(argv) == 3
    assert calls == {module: expected}
