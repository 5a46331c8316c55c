"""bench.rpc_floor: a bare gRPC server of each kind answers the calls and the report gives a row per run."""

from __future__ import annotations

import os

import pytest

from bench import rpc_floor


def test_each_server_kind_is_measured_and_reported_per_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert rpc_floor.main(["--calls", "20", "--runs", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines if line.startswith(("sync ", "aio "))]
    assert [(row[0], row[1], row[2]) for row in rows] == [("sync", "unary", "1"), ("sync", "unary", "2"), ("aio", "unary", "1"), ("aio", "unary", "2")]
    assert all(float(row[3]) >= 0 and float(row[4]) >= 0 for row in rows)
    assert lines[-1].startswith("load average at the end:")


@pytest.mark.parametrize("server", ["sync", "aio"])
def test_each_mode_is_measured_on_the_same_server_interleaved(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert rpc_floor.main(["--calls", "30", "--runs", "2", "--servers", server, "--modes", "unary,stream,pipelined", "--window", "3"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith(f"{server} ")]
    assert [(row[1], row[2]) for row in rows] == [(mode, run) for run in ("1", "2") for mode in ("unary", "stream", "pipelined")]
    assert all(float(row[3]) >= 0 and float(row[5]) >= 0 for row in rows)


def test_a_pipelined_exchange_receives_every_answer() -> None:
    class Stream:
        def __init__(self) -> None:
            self.sent = self.received = self.most_outstanding = 0

        def send(self, request: bytes) -> None:
            self.sent += 1
            self.most_outstanding = max(self.most_outstanding, self.sent - self.received)

        def receive(self) -> bytes:
            assert self.received < self.sent
            self.received += 1
            return rpc_floor.ANSWER

    stream = Stream()
    rpc_floor._exchange("pipelined", None, stream, 10, 4)  # type: ignore[arg-type]
    assert (stream.sent, stream.received, stream.most_outstanding) == (10, 10, 4)
    ping_pong = Stream()
    rpc_floor._exchange("stream", None, ping_pong, 10, 4)  # type: ignore[arg-type]
    assert (ping_pong.sent, ping_pong.received, ping_pong.most_outstanding) == (10, 10, 1)


def test_the_report_divides_by_the_calls() -> None:
    run = rpc_floor.FloorRun("sync", calls=1000, cpu_seconds=0.2, switches=15_000, wall_seconds=0.4, caller_cpu_seconds=0.3)
    assert (round(run.cpu_us_per_call), run.switches_per_call, round(run.caller_cpu_us_per_call), round(run.wall_us_per_call)) == (200, 15.0, 300, 400)
    assert rpc_floor.report([run]).splitlines()[2].split() == ["sync", "unary", "1", "200", "15.0", "300", "400"]


def test_context_switches_count_every_thread_of_a_process() -> None:
    assert rpc_floor.context_switches(os.getpid()) > 0


def test_an_unknown_server_kind_is_refused() -> None:
    with pytest.raises(SystemExit):
        rpc_floor.main(["--servers", "tornado"])
