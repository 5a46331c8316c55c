"""`make up`'s two controllers as real processes: one is active, the other waits as its standby,
and killing the active one hands the role over while the supervisor brings the dead one back.

The stack runs on its own SQLite database (the controller lock is then a file lock in the
test's data directory), so that it never contends with another run's controllers.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path

from deploy.local import StackSettings, child_environment, controller_processes, manage
from deploy.processes import grpc_health_serving
from tests.support.processes import LOOPBACK, free_port


def _two_free_ports() -> int:
    """A port whose successor is free too (WEIR_CONTROLLER_BASE_PORT for two controllers)."""
    for _ in range(20):
        base = free_port()
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((LOOPBACK, base + 1))
            except OSError:
                continue
        return base
    raise RuntimeError("found no two consecutive free loopback ports in 20 tries")


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def test_standby_controller_takes_over_and_the_killed_one_comes_back_as_standby(tmp_path: Path) -> None:
    settings = StackSettings.from_environment(
        # No metrics ports: the fixed defaults would collide with a stack running beside the test.
        {"WEIR_DATA_DIR": str(tmp_path), "WEIR_CONTROLLER_BASE_PORT": str(_two_free_ports()), "WEIR_HTTP_PORT": str(free_port()), "WEIR_METRICS_BASE_PORT": "0"}
    )
    environment = child_environment(settings, dict(os.environ))
    environment["DATABASE_URL"] = f"sqlite:///{tmp_path / 'control-plane.sqlite3'}"
    environment["DJANGO_SETTINGS_MODULE"] = "webapp.settings"
    manage(environment, "migrate", "--noinput")
    first, second = controller_processes(settings, environment)
    lines: list[str] = []
    first.restart_delay = 0.2
    first.announce = lines.append
    first_active = grpc_health_serving(settings.controller_address(1), "weir.v1.Controller")
    second_active = grpc_health_serving(settings.controller_address(2), "weir.v1.Controller")
    second_alive = grpc_health_serving(settings.controller_address(2))
    supervisors: list[threading.Thread] = []
    try:
        first.start()  # ready once it is active: it took the controller lock
        second.start()  # ready at once: the first one is active
        assert first_active()
        assert _wait_for(second_alive, 30)  # the standby listens and its process answers health checks ...
        assert not second_active()  # ... but it is not the active controller
        assert first.pid_file is not None and second.pid_file is not None
        assert int(second.pid_file.read_text()) == second.process.pid  # type: ignore[union-attr]

        supervisors = [threading.Thread(target=child.supervise, daemon=True) for child in (first, second)]
        for supervisor in supervisors:
            supervisor.start()
        os.kill(int(first.pid_file.read_text()), signal.SIGKILL)

        assert _wait_for(second_active, 30), "the standby did not take over"
        assert _wait_for(lambda: first.restarts == 1, 60), f"controller 1 was not restarted: {lines}"
        assert lines[0].startswith("controller 1 was killed by SIGKILL")
        assert lines[-1].startswith("controller 1 is back")
        assert first.is_running() and not first_active()  # back, as the new standby
    finally:
        for child in (first, second):
            child.stop()
        for supervisor in supervisors:
            supervisor.join(timeout=5)
    assert not first.pid_file.exists() and not second.pid_file.exists()
