"""`make up` itself (``python -m deploy.local``) as a test fixture: a small stack on free loopback
ports in a temporary data directory, its output read line by line, and the processes it made
found in /proc (every one carries the stack's WEIR_DATA_DIR in its environment, so a process
that escaped the tree is found too)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.stack import free_port_block
from server_runtime.lifeline import spawn

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"
# deploy.local's lines: the control plane runs (web, Celery worker and beat), and the whole stack serves.
CONTROL_PLANE_LINE = "weir: web at "
READY_LINE = "Logs:"
UNREACHABLE_REDIS_URL = "redis://127.0.0.1:1/0"
CONTROLLER_COUNT = 2


def processes_with_environment(name: str, value: str) -> dict[int, str]:
    """Process id -> command line of every process of ours whose environment has ``name=value``."""
    wanted = f"{name}={value}".encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environment = (entry / "environ").read_bytes().split(b"\0")
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue  # gone meanwhile, or not ours
        if wanted in environment and command:  # a zombie has an empty command line: it holds nothing
            found[int(entry.name)] = command
    return found


def descendants(pid: int) -> dict[int, str]:
    """Process id -> command line of every living descendant of ``pid``, from /proc."""
    children: dict[int, list[int]] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        # The fields after the command name, which may itself hold spaces and parentheses.
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] == "Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        commands[int(entry.name)] = command
    found: dict[int, str] = {}
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found[child] = commands[child]
            pending.append(child)
    return found


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As a server binds (gunicorn, gRPC): a closed connection in TIME_WAIT does not count, a listener does.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOOPBACK, port))
            probe.listen()
        except OSError:
            return False
    return True


class StackProcess:
    """``python -m deploy.local`` with WEIR_BROKERS=``broker_count``; ``stop()`` ends whatever is left."""

    def __init__(self, data_dir: Path, broker_count: int = 1) -> None:
        self.data_dir = data_dir
        self.broker_count = broker_count
        # The web, the controllers, the brokers' gRPC ports, then their Kafka listeners.
        self.http_port = free_port_block(1 + CONTROLLER_COUNT + 2 * broker_count)
        self.ports = list(range(self.http_port, self.http_port + 1 + CONTROLLER_COUNT + 2 * broker_count))
        self.lines: list[str] = []
        self._new_line = threading.Condition()
        self.process: subprocess.Popen[str] | None = None

    def environment(self) -> dict[str, str]:
        environment = dict(os.environ)
        # The embedded default (SQLite in the data directory), not the test suite's database.
        for name in ("DATABASE_URL", "WEIR_INTERNAL_TOKEN", "WEIR_BOOTSTRAP_SERVERS", "WEIR_PUBLIC_API_URL"):
            environment.pop(name, None)
        environment.update(
            DJANGO_SETTINGS_MODULE="webapp.settings",
            WEIR_DATA_DIR=str(self.data_dir),
            WEIR_HTTP_PORT=str(self.http_port),
            WEIR_CONTROLLER_BASE_PORT=str(self.http_port + 1),
            WEIR_BROKER_BASE_PORT=str(self.http_port + 1 + CONTROLLER_COUNT),
            WEIR_KAFKA_BASE_PORT=str(self.http_port + 1 + CONTROLLER_COUNT + self.broker_count),
            WEIR_METRICS_BASE_PORT="0",
            WEIR_BROKERS=str(self.broker_count),
            REDIS_URL=UNREACHABLE_REDIS_URL,
            PYTHONUNBUFFERED="1",
            # Internal topics of 3 partitions instead of Kafka's 50 each: a stack starts in about two
            # thirds of the time, and nothing these tests check depends on the counts.
            WEIR_OFFSETS_TOPIC_NUM_PARTITIONS="3",
            WEIR_TRANSACTION_STATE_TOPIC_NUM_PARTITIONS="3",
        )
        return environment

    def start(self) -> StackProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.process = spawn(
            [sys.executable, "-m", "deploy.local"], cwd=REPOSITORY_ROOT, env=self.environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        threading.Thread(target=self._read_output, name="deploy.local output", daemon=True).start()
        return self

    def _read_output(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            with self._new_line:
                self.lines.append(line.rstrip("\n"))
                self._new_line.notify_all()
        with self._new_line:
            self.lines.append("")  # the end: wakes a waiter
            self._new_line.notify_all()

    def wait_for_line(self, prefix: str, timeout: float) -> None:
        """Until deploy.local printed a line starting with ``prefix``; AssertionError with its output otherwise."""
        deadline = time.monotonic() + timeout
        with self._new_line:
            while not any(line.startswith(prefix) for line in self.lines):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (self.process is not None and self.process.poll() is not None):
                    raise AssertionError(f"deploy.local never printed {prefix!r}:\n{self.output_tail()}")
                self._new_line.wait(min(remaining, 1.0))

    def output_tail(self, count: int = 40) -> str:
        logs = []
        for log in sorted(self.data_dir.glob("*.log")):
            logs.append(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-10:]))
        return "\n".join(self.lines[-count:] + logs)

    def stack_processes(self) -> dict[int, str]:
        """Every process carrying this stack's data directory in its environment (the supervisor included)."""
        return processes_with_environment("WEIR_DATA_DIR", str(self.data_dir))

    def stop(self) -> None:
        if self.process is None:
            return
        for pid in self.stack_processes():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


def wait_until(condition, timeout: float, poll: float = 0.2) -> bool:  # type: ignore[no-untyped-def]
    """Poll ``condition`` until it is true or ``timeout`` passed; its last answer."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)
