"""SIGTERM on the Celery processes as `make up` and the manifests run them: the worker finishes
the task it is running, leaves the messages it holds in the queue and exits 0; beat exits 0.

The worker and beat are real processes on Redis consuming a queue of this test alone; the
tasks (``tests.support.celery_test_tasks``) mark files, so nothing needs the database.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings
from kombu import Queue

from tests.support.celery_test_tasks import MARK, SLEEP_THEN_MARK
from tests.support.celery_worker import REPOSITORY_ROOT, CeleryWorkerProcess
from webapp.celery import app
from webapp.runtime import redis_answers

pytestmark = [pytest.mark.skipif(not redis_answers(settings.REDIS_URL), reason="needs Redis at REDIS_URL"), pytest.mark.slow]

WAIT_SECONDS = 30.0
RUNNING_TASK_SECONDS = 3.0  # long enough for SIGTERM to arrive while it runs


def wait_for(condition: Callable[[], bool], what: str, log: Callable[[], str]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {WAIT_SECONDS:.0f} s: {what}\n{log()[-3000:]}")


@pytest.fixture
def queue() -> Iterator[str]:
    """A queue no other test or stack uses; deleted afterwards."""
    name = f"weir-test-shutdown-{uuid.uuid4().hex[:12]}"
    yield name
    with app.connection_for_write() as connection:
        Queue(name, routing_key=name).bind(connection).delete()


def process_environment(tmp_path: Path, queue: str) -> dict[str, str]:
    # The control plane's own settings; the tasks here never open the (unused) database.
    return {
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'unused.sqlite3'}",
        "WEIR_DATA_DIR": str(tmp_path / "data"),
        "REDIS_URL": settings.REDIS_URL,
        "WEIR_CELERY_QUEUE": queue,
        "WEIR_QUIET_TRANSPORT_NOTICE": "1",
        "WEIR_PIPELINES_ENABLED": "false",
    }


def test_sigterm_lets_the_running_task_finish_and_leaves_held_messages_queued(tmp_path: Path, queue: str) -> None:
    worker = CeleryWorkerProcess(queue, tmp_path / "worker.log", process_environment(tmp_path, queue)).start()
    try:
        # A retry waiting for its countdown is a message the worker holds unacknowledged.
        held = app.send_task(MARK, args=[str(tmp_path), "held"], queue=queue, countdown=300)
        wait_for(lambda: f"[{held.id}] received" in worker.read_log(), "the worker holds the delayed message", worker.read_log)
        app.send_task(SLEEP_THEN_MARK, args=[str(tmp_path), "running", RUNNING_TASK_SECONDS], queue=queue)
        wait_for((tmp_path / "running.started").exists, "the long task started", worker.read_log)
        exit_code = worker.terminate()
    finally:
        worker.kill()
    assert exit_code == 0, worker.read_log()[-3000:]
    assert (tmp_path / "running.finished").exists(), "the task running at SIGTERM was cut short"
    assert not (tmp_path / "held.finished").exists()
    with app.connection_for_write() as connection:
        message = Queue(queue, routing_key=queue).bind(connection).get(no_ack=True)
    assert message is not None, "the held message was lost with the worker"
    assert message.headers["id"] == held.id


def test_beat_exits_zero_on_sigterm(tmp_path: Path, queue: str) -> None:
    log_path = tmp_path / "beat.log"
    command = [sys.executable, "-m", "celery", "-A", "webapp", "beat", "--loglevel", "INFO", "--schedule", str(tmp_path / "beat-schedule")]
    with log_path.open("wb") as log:
        beat = subprocess.Popen(command, cwd=REPOSITORY_ROOT, env={**os.environ, **process_environment(tmp_path, queue)}, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "beat: Starting..." in log_path.read_text(), "beat started", log_path.read_text)
        beat.send_signal(signal.SIGTERM)
        exit_code = beat.wait(timeout=WAIT_SECONDS)
    finally:
        if beat.poll() is None:
            beat.kill()
            beat.wait(timeout=10)
    assert exit_code == 0, log_path.read_text()[-3000:]
