"""The web process is sized from the machine: one gunicorn worker per usable CPU (affinity and a
cgroup CPU quota), at most MAX_DEFAULT_WORKERS, unless WEIR_WEB_WORKERS / WEIR_WEB_THREADS say
otherwise; a bad value stops gunicorn with a message naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.ports import free_port
from webapp import gunicorn_config
from webapp.gunicorn_config import MAX_DEFAULT_WORKERS, WebSizingError, usable_cpus, web_threads, web_workers

REPOSITORY = Path(__file__).resolve().parents[2]
START_TIMEOUT_SECONDS = 30.0  # gunicorn forks its workers within this, even on a loaded machine


def test_workers_follow_the_cpus_up_to_a_cap_and_the_variables_override() -> None:
    assert web_workers({}, cpus=3) == 3
    assert web_workers({}, cpus=1) == 1
    assert web_workers({}, cpus=96) == MAX_DEFAULT_WORKERS
    assert web_workers({"WEIR_WEB_WORKERS": "12"}, cpus=2) == 12
    assert web_threads({}) == gunicorn_config.DEFAULT_THREADS
    assert web_threads({"WEIR_WEB_THREADS": " 2 "}) == 2


@pytest.mark.parametrize(("name", "value"), [("WEIR_WEB_WORKERS", "0"), ("WEIR_WEB_WORKERS", "two"), ("WEIR_WEB_WORKERS", "65"), ("WEIR_WEB_THREADS", "-1")])
def test_a_bad_value_is_refused_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(WebSizingError, match=f"{name} must be a whole number from 1 to 64, not '{value}'"):
        web_workers({name: value}, cpus=2) if name == "WEIR_WEB_WORKERS" else web_threads({name: value})


def test_a_cgroup_cpu_quota_lowers_the_cpu_count(tmp_path: Path) -> None:
    affinity = len(os.sched_getaffinity(0))
    cpu_max = tmp_path / "cpu.max"
    cpu_max.write_text("50000 100000\n")
    assert usable_cpus(cpu_max) == 1  # half a CPU rounds up to one worker
    cpu_max.write_text("max 100000\n")
    assert usable_cpus(cpu_max) == affinity
    assert usable_cpus(tmp_path / "absent") == affinity


def _gunicorn(environment: dict[str, str], port: int = 0) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "gunicorn", "tests.deploy.tiny_wsgi:application", "--config", "python:webapp.gunicorn_config"]
    command += ["--bind", f"127.0.0.1:{port or free_port()}"]
    inherited = {name: value for name, value in os.environ.items() if name != "PROMETHEUS_MULTIPROC_DIR"}
    return subprocess.Popen(command, cwd=REPOSITORY, env={**inherited, **environment}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _answer(port: int, server: subprocess.Popen[str]) -> str:
    """What the tiny application answers (its worker's metrics directory), once it listens."""
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
                return response.read().decode()
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def test_gunicorn_runs_the_configured_workers_which_share_a_metrics_directory_removed_at_exit() -> None:
    port = free_port()
    server = _gunicorn({"WEIR_WEB_WORKERS": "3", "WEIR_WEB_THREADS": "2"}, port)
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while len(_children(server.pid)) < 3 and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_children(server.pid)) == 3
        metrics_directory = Path(_answer(port, server))
        assert metrics_directory.name.startswith("weir-web-metrics-") and metrics_directory.is_dir()
    finally:
        server.terminate()
        output, _ = server.communicate(timeout=30)
    assert "Using worker: gthread" in output
    assert not metrics_directory.exists()


def test_one_worker_keeps_its_metrics_in_its_own_registry() -> None:
    port = free_port()
    server = _gunicorn({"WEIR_WEB_WORKERS": "1"}, port)
    try:
        assert _answer(port, server) == "none"
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_gunicorn_refuses_a_bad_worker_count_naming_the_variable() -> None:
    server = _gunicorn({"WEIR_WEB_WORKERS": "lots"})
    try:
        output, _ = server.communicate(timeout=START_TIMEOUT_SECONDS)
    finally:
        server.kill()
    assert server.returncode != 0
    assert "WEIR_WEB_WORKERS must be a whole number from 1 to 64, not 'lots'" in output
