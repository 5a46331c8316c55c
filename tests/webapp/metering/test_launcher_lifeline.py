"""A pipeline job never outlives its launcher: kill -9 of the launcher (a Celery pool child, a
`run_pipeline` command) ends the job and everything it started (as Spark's JVM), and a SIGTERM
to the launcher stops the job's whole process group before the launcher goes on stopping."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.deploy.stack_process import wait_until

REPOSITORY_ROOT = Path(__file__).resolve().parents[3]
# The job: starts a grandchild in its own process group (as pyspark starts its JVM), writes both
# process ids, and waits.
JOB = (
    "import os, subprocess, sys, time; "
    "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
    "open(sys.argv[1], 'w').write(f'{os.getpid()} {grandchild.pid}'); "
    "time.sleep(600)"
)
LAUNCHER = (
    "import sys, django; django.setup(); "
    "from webapp.metering.launcher import run_job_process; "
    "run_job_process([sys.executable, '-c', sys.argv[1], sys.argv[2]], 600)"
)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _start_launcher(tmp_path: Path) -> tuple[subprocess.Popen[bytes], list[int]]:
    pids_file = tmp_path / "pids"
    # The brokers given: the launcher then needs no control-plane database to find them.
    environment = {
        **os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings", "WEIR_DATA_DIR": str(tmp_path / "data"),
        "WEIR_BOOTSTRAP_SERVERS": "127.0.0.1:1", "DJANGO_SECRET_KEY": "launcher-lifeline-test-secret-key-0123",
    }  # fmt: skip
    environment.pop("DATABASE_URL", None)
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, JOB, str(pids_file)], cwd=REPOSITORY_ROOT, env=environment)
    assert wait_until(lambda: pids_file.exists() and len(pids_file.read_text().split()) == 2, 60.0), "the job never started"
    pids = [int(pid) for pid in pids_file.read_text().split()]
    assert all(_alive(pid) for pid in pids)
    return launcher, pids


def test_kill_9_of_the_launcher_ends_the_job_and_what_the_job_started(tmp_path: Path) -> None:
    launcher, pids = _start_launcher(tmp_path)
    try:
        launcher.kill()
        launcher.wait(timeout=10)
        assert wait_until(lambda: not any(_alive(pid) for pid in pids), 10.0), f"outlived the launcher: {[pid for pid in pids if _alive(pid)]}"
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_sigterm_to_the_launcher_stops_the_jobs_process_group_first(tmp_path: Path) -> None:
    launcher, pids = _start_launcher(tmp_path)
    try:
        launcher.send_signal(signal.SIGTERM)
        started = time.monotonic()
        # The launcher stops the job (SIGTERM to its group) and then ends with LauncherStopped.
        assert launcher.wait(timeout=30) != 0
        assert not any(_alive(pid) for pid in pids), f"still running after the launcher stopped: {[pid for pid in pids if _alive(pid)]}"
        assert time.monotonic() - started < 15
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
