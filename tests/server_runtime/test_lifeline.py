"""server_runtime.lifeline: a child started with spawn() ends with the process that started it, however that
process ends, and so does what the child started (in its group, or through spawn() again); a
child started from a thread that has ended lives on while its parent does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from server_runtime.lifeline import spawn

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
SLEEPER = "import time; time.sleep(600)"
# The parent under test: spawns children as the test asks, writes their ids, then waits.
PARENT = """
import subprocess, sys, threading, time
from server_runtime.lifeline import spawn
kind, pids_file = sys.argv[1], sys.argv[2]
sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
pids = []
if kind == "group":
    # The child starts a grandchild in its own process group, as pyspark starts its JVM.
    child = spawn([sys.executable, "-c", "import subprocess, sys, time; print(subprocess.Popen(sys.argv[1:]).pid, flush=True); time.sleep(600)", *sleeper], stdout=subprocess.PIPE, text=True)
    pids = [child.pid, int(child.stdout.readline())]
elif kind == "thread":
    # Started from a thread that then ends: must live as long as this process, not that thread.
    started = []
    worker = threading.Thread(target=lambda: started.append(spawn(sleeper)))
    worker.start(); worker.join()
    pids = [started[0].pid]
elif kind == "nested":
    # The child spawns a grandchild of its own (a new session, out of the child's group).
    code = "import subprocess, sys, time; from server_runtime.lifeline import spawn; print(spawn(sys.argv[1:]).pid, flush=True); time.sleep(600)"
    child = spawn([sys.executable, "-c", code, *sleeper], stdout=subprocess.PIPE, text=True)
    pids = [child.pid, int(child.stdout.readline())]
open(pids_file, "w").write(" ".join(map(str, pids)))
time.sleep(600)
"""
# The kernel's signal, or the guardian's SIGTERM then SIGKILL after its grace, and a poll.
ENDED_WITHIN_SECONDS = 10.0


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _wait_until_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.1)
    return [pid for pid in pids if _alive(pid)]


def _start_parent(tmp_path: Path, kind: str) -> tuple[subprocess.Popen[bytes], list[int]]:
    pids_file = tmp_path / "pids"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, kind, str(pids_file)], cwd=REPOSITORY_ROOT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (pids_file.exists() and pids_file.read_text()):
        time.sleep(0.05)
    pids = [int(pid) for pid in pids_file.read_text().split()]
    assert pids and all(_alive(pid) for pid in pids)
    return parent, pids


@pytest.mark.parametrize("kind", ["group", "nested", "thread"])
def test_kill_9_of_the_parent_ends_its_children_and_theirs(tmp_path: Path, kind: str) -> None:
    parent, pids = _start_parent(tmp_path, kind)
    try:
        parent.kill()
        parent.wait(timeout=10)
        assert _wait_until_gone(pids, ENDED_WITHIN_SECONDS) == []
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_child_spawned_from_a_thread_that_ended_lives_while_its_parent_does(tmp_path: Path) -> None:
    parent, pids = _start_parent(tmp_path, "thread")
    try:
        time.sleep(1.0)  # a pdeathsig tied to the ended thread would have fired at once
        assert all(_alive(pid) for pid in pids)
    finally:
        parent.kill()
        parent.wait(timeout=10)
        assert _wait_until_gone(pids, ENDED_WITHIN_SECONDS) == []


def test_spawn_refuses_to_keep_the_parents_session() -> None:
    with pytest.raises(ValueError, match="new session"):
        spawn([sys.executable, "-c", "pass"], start_new_session=False)
