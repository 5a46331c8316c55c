"""A real Celery worker (prefork pool, two children) with WEIR_WORKER_METRICS_PORT: its /metrics
merges the task counts of every pool process, and a restart starts the counts afresh."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from celery import Celery
from prometheus_client.parser import text_string_to_metric_families

from tests.support.processes import free_port
from webapp.runtime import celery_broker_url

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
QUEUE = "weir-worker-metrics-test"
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"  # the worker falls back to the filesystem transport
ACCUMULATE = "celery.accumulate"  # a task Celery itself defines: needs no database


def _tasks_done(url: str) -> float | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            text = response.read().decode("utf-8")
    except (urllib.error.URLError, OSError):
        return None
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "weir_celery_tasks_total" and sample.labels == {"task": ACCUMULATE, "state": "success"}:
                return sample.value
    return 0.0


def _start_worker(data_dir: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    environment = {
        **os.environ,
        "WEIR_DATA_DIR": str(data_dir),
        "DATABASE_URL": f"sqlite:///{data_dir / 'unused.sqlite3'}",
        "REDIS_URL": UNREACHABLE_REDIS,
        "WEIR_CELERY_QUEUE": QUEUE,
        "WEIR_WORKER_METRICS_PORT": str(port),
        "WEIR_WORKER_METRICS_HOST": "127.0.0.1",
        "WEIR_PIPELINES_ENABLED": "false",
        "WEIR_QUIET_TRANSPORT_NOTICE": "1",
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
    }
    environment.pop("PROMETHEUS_MULTIPROC_DIR", None)
    command = [sys.executable, "-m", "celery", "-A", "webapp", "worker", "--pool", "prefork", "--concurrency", "2", "--loglevel", "INFO"]
    with open(log, "ab") as output:
        return subprocess.Popen(command, cwd=REPOSITORY_ROOT, env=environment, stdout=output, stderr=subprocess.STDOUT)


def _wait_for(condition, seconds: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def _stop(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=10)


@pytest.mark.slow
def test_a_prefork_worker_serves_the_task_counts_of_all_its_processes(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    log = tmp_path / "worker.log"
    broker_url, options = celery_broker_url(UNREACHABLE_REDIS, data_dir.resolve())
    sender = Celery("sender", broker=broker_url, broker_transport_options=options)
    worker = _start_worker(data_dir, port, log)
    try:
        assert _wait_for(lambda: _tasks_done(url) is not None, 60), log.read_text(errors="replace")[-3000:]
        for value in range(6):
            sender.send_task(ACCUMULATE, args=(value,), queue=QUEUE)
        assert _wait_for(lambda: _tasks_done(url) == 6, 30), log.read_text(errors="replace")[-3000:]
        # The tasks ran in pool processes (which of the two took them is the pool's choice: all six may go to one).
        assert re.search(r"ForkPoolWorker-\d+\] Task celery\.accumulate", log.read_text(errors="replace"))
        _stop(worker)
        worker = _start_worker(data_dir, port, log)
        assert _wait_for(lambda: _tasks_done(url) == 0, 60), "a restarted worker must not count the previous run's tasks"
    finally:
        _stop(worker)
