"""``manage.py run_controller`` as a real process: it takes the next controller epoch when it
becomes active, and steps down (stops, releases the lock, exits 1) once a newer one exists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from webapp.controller.epoch import become_active, current_epoch
from webapp.controller.leadership import ControllerLock

REPOSITORY_ROOT = Path(__file__).resolve().parents[4]
ACTIVE_LINE = re.compile(r"controller active on port \d+ at controller epoch (\d+)")


def _database_url() -> str:
    database = connection.settings_dict
    credentials = database["USER"] + (f":{database['PASSWORD']}" if database["PASSWORD"] else "")
    return f"postgres://{credentials}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}/{database['NAME']}"


def _wait_for(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise TimeoutError(f"{what} within {timeout} s")


@pytest.mark.django_db(transaction=True)
def test_controller_takes_the_next_epoch_and_steps_down_when_superseded(tmp_path: Path) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the controller process shares the test database only on PostgreSQL")
    epoch_before = become_active("earlier-controller:1")
    log_path = tmp_path / "controller.log"
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "DATABASE_URL": _database_url(),
        "WEIR_DATA_DIR": str(tmp_path / "data"),
        "WEIR_INTERNAL_TOKEN": "controller-process-test",
    }
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "run_controller", "--listen", "127.0.0.1:0"],
            cwd=REPOSITORY_ROOT,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_for(lambda: ACTIVE_LINE.search(log_path.read_text()) or process.poll() is not None, 60.0, "controller active")
        active = ACTIVE_LINE.search(log_path.read_text())
        assert active, log_path.read_text()
        assert int(active.group(1)) == epoch_before + 1 == current_epoch()[0]

        become_active("successor:1")
        assert process.wait(timeout=30) == 1
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    output = log_path.read_text()
    assert f"controller at epoch {epoch_before + 1} stepped down: a newer controller is active" in output
    lock = ControllerLock()
    try:
        assert lock.try_acquire(), "the stepped-down controller still holds the controller lock"
    finally:
        lock.release()
