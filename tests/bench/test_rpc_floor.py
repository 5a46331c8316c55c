"""bench.rpc_floor: a bare gRPC server of each kind answers the calls and the report gives a row per run."""

from __future__ import annotations

import os

import pytest

from bench import rpc_floor


def test_each_server_kind_is_measured_and_reported_per_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert rpc_floor.main(["--calls", "20", "--runs", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines if line.startswith(("sync ", "aio "))]
    assert [(row[0], row[1]) for row in rows] == [("sync", "1"), ("sync", "2"), ("aio", "1"), ("aio", "2")]
    assert all(float(row[2]) >= 0 and float(row[3]) >= 0 for row in rows)
    assert lines[-1].startswith("load average at the end:")


def test_the_report_divides_by_the_calls() -> None:
    run = rpc_floor.FloorRun("sync", calls=1000, cpu_seconds=0.2, switches=15_000, wall_seconds=0.4)
    assert (round(run.cpu_us_per_call), run.switches_per_call, round(run.wall_us_per_call)) == (200, 15.0, 400)
    assert "sync        1          200           15.0           400" in rpc_floor.report([run])


def test_context_switches_count_every_thread_of_a_process() -> None:
    assert rpc_floor.context_switches(os.getpid()) > 0


def test_an_unknown_server_kind_is_refused() -> None:
    with pytest.raises(SystemExit):
        rpc_floor.main(["--servers", "tornado"])
