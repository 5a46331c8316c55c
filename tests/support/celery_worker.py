"""A real Celery worker process of the ``webapp`` application, for tests that need one outside
the test process (its own logging, signals, exit code).

The worker runs as ``make up`` runs it (prefork pool) with one child, consumes only the queue
the test names, and also loads ``tests.support.celery_test_tasks``. It is ready once it logs
that it is ready; :meth:`CeleryWorkerProcess.terminate` sends SIGTERM (a warm shutdown) and
returns the exit code. Every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from server_runtime.lifeline import spawn

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
START_SECONDS = 60.0
STOP_SECONDS = 30.0


class CeleryWorkerProcess:
    """``python -m celery -A webapp worker -Q <queue>`` writing to ``log_path``."""

    def __init__(self, queue: str, log_path: Path, environment: dict[str, str]) -> None:
        self.queue = queue
        self.log_path = log_path
        self.environment = {**os.environ, **environment, "WEIR_CELERY_QUEUE": queue, "PYTHONUNBUFFERED": "1"}
        self.process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "celery", "-A", "webapp", "worker",
            "--loglevel", "INFO", "--concurrency", "1", "--queues", self.queue,
            "--hostname", f"test-{uuid.uuid4().hex[:8]}@%h",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
            "--include", "tests.support.celery_test_tasks",
        ]  # fmt: skip

    def start(self, timeout: float = START_SECONDS) -> CeleryWorkerProcess:
        with open(self.log_path, "ab") as log:
            # Its own process group (spawn's), so that teardown can end the pool's children with it;
            # it ends with the test run, even after a kill -9 of pytest.
            self.process = spawn(self.command(), cwd=REPOSITORY_ROOT, env=self.environment, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Celery worker exited with code {self.process.returncode}:\n{self.read_log()[-3000:]}")
            if " ready." in self.read_log():
                return self
            time.sleep(0.1)
        self.kill()
        raise TimeoutError(f"the Celery worker was not ready after {timeout:.0f} s:\n{self.read_log()[-3000:]}")

    def read_log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def terminate(self, timeout: float = STOP_SECONDS) -> int:
        """SIGTERM, then the exit code; SIGKILL (and AssertionError) when it has not exited within ``timeout``."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the Celery worker did not exit within {timeout:.0f} s of SIGTERM:\n{self.read_log()[-3000:]}") from None

    def kill(self) -> None:
        """End the worker and its pool children at once (test teardown)."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # the worker and its children are gone already
        if self.process.poll() is None:
            self.process.wait(timeout=10)
