"""The supervisor's pid files and one-line announcements, and the readiness probes of `make up`."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from deploy.processes import ChildFailedError, SupervisedProcess, any_ready, broker_registered, exit_description, grpc_listening
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc
from tests.support.processes import free_port

TOKEN = "processes-test-internal-token"
# A child that runs until it is killed (at most a minute, should a test forget it).
SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def _wait_for(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _pid_in(path: Path) -> int | None:
    try:
        return int(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


# ---------------------------------------------------------------------- supervision


def test_pid_file_names_the_running_child_and_is_removed_at_stop(tmp_path: Path) -> None:
    pid_file = tmp_path / "run" / "sleeper.pid"
    child = SupervisedProcess("sleeper", SLEEPER, log_path=tmp_path / "sleeper.log", environment={}, pid_file=pid_file)
    child.start()
    try:
        assert child.process is not None
        assert _pid_in(pid_file) == child.process.pid
    finally:
        child.stop()
    assert not pid_file.exists()
    assert not child.is_running()


def test_child_killed_with_sigkill_is_announced_restarted_and_announced_back(tmp_path: Path) -> None:
    pid_file = tmp_path / "run" / "broker-2.pid"
    lines: list[str] = []
    child = SupervisedProcess(
        "broker 2", SLEEPER, log_path=tmp_path / "broker-2.log", environment={}, pid_file=pid_file, restart_delay=0.2, announce=lines.append
    )
    child.start()
    supervisor = threading.Thread(target=child.supervise, daemon=True)
    supervisor.start()
    try:
        first_pid = _pid_in(pid_file)
        assert first_pid is not None
        os.kill(first_pid, signal.SIGKILL)  # what the banner tells a person to do

        assert _wait_for(lambda: child.restarts == 1 and len(lines) == 2)
        second_pid = _pid_in(pid_file)
        assert second_pid is not None and second_pid != first_pid and child.is_running()
    finally:
        child.stop()
        supervisor.join(timeout=5)
    assert lines == [
        f"broker 2 was killed by SIGKILL; restarting it in 0.2 s (log: {tmp_path / 'broker-2.log'})",
        f"broker 2 is back (pid {second_pid})",
    ]
    assert not supervisor.is_alive()


def test_restart_that_fails_to_become_ready_is_retried_with_a_longer_delay(tmp_path: Path) -> None:
    attempts = tmp_path / "attempts"
    # Exits at once on every start: each restart fails while starting.
    script = f"open({str(attempts)!r}, 'a').write('x\\n'); raise SystemExit(5)"
    lines: list[str] = []
    child = SupervisedProcess(
        "doomed",
        [sys.executable, "-c", script],
        log_path=tmp_path / "doomed.log",
        environment={},
        ready=lambda: False,
        restart_delay=0.1,
        announce=lines.append,
    )
    with pytest.raises(ChildFailedError, match="exited with code 5 while starting"):
        child.start()
    supervisor = threading.Thread(target=child.supervise, daemon=True)
    supervisor.start()
    try:
        assert _wait_for(lambda: len(lines) >= 2)
    finally:
        child.stop()
        supervisor.join(timeout=5)
    assert lines[0].startswith("doomed exited with code 5; restarting it in 0.1 s")
    assert "doomed exited with code 5 while starting" in lines[1] and lines[1].endswith("; trying again in 2 s")
    assert child.restarts == 0


@pytest.mark.parametrize(
    ("code", "described"), [(0, "exited with code 0"), (3, "exited with code 3"), (-9, "was killed by SIGKILL"), (-15, "was killed by SIGTERM")]
)
def test_exit_is_described_as_a_code_or_a_signal(code: int, described: str) -> None:
    assert exit_description(code) == described


def test_negative_restart_delay_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="restart_delay of sleeper"):
        SupervisedProcess("sleeper", SLEEPER, log_path=tmp_path / "log", environment={}, restart_delay=-1)


# ---------------------------------------------------------------------- readiness probes


class _FakeAdmin(admin_pb2_grpc.AdminServicer):
    """Answers DescribeState with ``broker_epoch`` to callers presenting TOKEN."""

    def __init__(self) -> None:
        self.broker_epoch = 0

    def DescribeState(self, request: admin_pb2.DescribeStateRequest, context: grpc.ServicerContext) -> admin_pb2.DescribeStateResponse:
        if dict(context.invocation_metadata()).get("x-weir-internal-token") != TOKEN:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "the Admin service needs the internal token")
        return admin_pb2.DescribeStateResponse(node_id=2, broker_epoch=self.broker_epoch)


@pytest.fixture
def fake_admin() -> Iterator[tuple[_FakeAdmin, str]]:
    servicer = _FakeAdmin()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    admin_pb2_grpc.add_AdminServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield servicer, f"127.0.0.1:{port}"
    finally:
        server.stop(0).wait()


def test_broker_is_ready_once_it_reports_a_session_with_the_controller(fake_admin: tuple[_FakeAdmin, str]) -> None:
    servicer, address = fake_admin
    ready = broker_registered(address, internal_token=lambda: TOKEN)
    assert not ready()  # serving, but broker epoch 0: not registered yet
    servicer.broker_epoch = 1_700_000_000_123
    assert ready()


def test_broker_probe_with_a_wrong_or_missing_token_is_not_ready(fake_admin: tuple[_FakeAdmin, str], tmp_path: Path) -> None:
    servicer, address = fake_admin
    servicer.broker_epoch = 7
    assert not broker_registered(address, internal_token=lambda: "wrong")()
    # The token file does not exist yet: not ready rather than an error.
    assert not broker_registered(address, internal_token=lambda: (tmp_path / "missing").read_text())()


def test_nothing_listening_is_not_ready() -> None:
    address = f"127.0.0.1:{free_port()}"
    assert not broker_registered(address, internal_token=lambda: TOKEN)()
    assert not grpc_listening(address)()


def test_any_controller_listening_makes_the_pair_ready(fake_admin: tuple[_FakeAdmin, str]) -> None:
    _, address = fake_admin
    silent = f"127.0.0.1:{free_port()}"
    assert grpc_listening(address)()
    assert any_ready(grpc_listening(silent), grpc_listening(address))()
    assert not any_ready(grpc_listening(silent))()
