"""SIGTERM on the active ``run_controller``: it stops serving, releases the controller lock and
exits 0, and its standby becomes the active controller without waiting for any timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from django.conf import settings
from django.db import connection
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.support.processes import LOOPBACK, free_port
from tests.support.real_cluster import REPOSITORY_ROOT, UNREACHABLE_REDIS_URL, ControllerProcess, database_url_for_subprocesses

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

WAIT_SECONDS = 30.0


def _active(address: str) -> bool:
    """The controller at ``address`` reports "weir.v1.Controller" SERVING (a standby listens too)."""
    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service="weir.v1.Controller"), timeout=1.0)
        except grpc.RpcError:
            return False
        return reply.status == health_pb2.HealthCheckResponse.SERVING


def _wait_for(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {WAIT_SECONDS:.0f} s: {what}")


def test_sigterm_releases_the_lock_and_the_standby_takes_over(tmp_path: Path) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the controller processes share the test database only on PostgreSQL")
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "DATABASE_URL": database_url_for_subprocesses(),
        "WEIR_INTERNAL_TOKEN": settings.WEIR_INTERNAL_TOKEN,
        "REDIS_URL": UNREACHABLE_REDIS_URL,
        "WEIR_QUIET_TRANSPORT_NOTICE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    active = ControllerProcess(tmp_path / "active", environment)
    active.start()
    standby_address = f"{LOOPBACK}:{free_port()}"
    standby_log = tmp_path / "standby.log"
    with standby_log.open("wb") as log:
        standby = subprocess.Popen(
            [sys.executable, "manage.py", "run_controller", "--listen", standby_address],
            cwd=REPOSITORY_ROOT, env={**environment, "WEIR_DATA_DIR": str(tmp_path / "standby")}, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        _wait_for(lambda: "waiting for the controller lock" in standby_log.read_text(), "the standby waits for the lock")
        assert not _active(standby_address)
        assert active.process is not None
        active.process.send_signal(signal.SIGTERM)
        assert active.process.wait(timeout=WAIT_SECONDS) == 0, active.log_tail()
        assert "controller stopped" in active.log_path.read_text()
        _wait_for(lambda: _active(standby_address), f"the standby is active\n{standby_log.read_text()[-2000:]}")
        standby.send_signal(signal.SIGTERM)
        assert standby.wait(timeout=WAIT_SECONDS) == 0, standby_log.read_text()[-2000:]
    finally:
        active.stop()
        if standby.poll() is None:
            standby.kill()
            standby.wait(timeout=10)
