"""The whole `make up` stack as a child process, for the benchmarks that need a real deployment.

``python -m deploy.local`` runs in a temporary data directory on free loopback ports: SQLite,
two controllers (active and standby), brokers with security on that register with the
controller, gunicorn, a Celery worker and beat. Credentials come from ``manage.py demo
--json``, whose service account may produce to topics starting with ``demo``.

The benchmarks reach the stack only over HTTP, through the SDK, through those two commands
and through the files deploy.local documents: ``<data dir>/run/<name>.pid`` holds the process
id of each child (``broker-2.pid``), which is how a benchmark kills a broker. The benchmark
stays a client of Weir, never a part of it (bench imports weir, never deploy or webapp).
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from server_runtime.lifeline import spawn

REPOSITORY = Path(__file__).resolve().parents[1]
LOOPBACK = "127.0.0.1"
DEFAULT_BROKER_COUNT = 3  # as `make up` by default
CONTROLLER_COUNT = 2  # deploy.local starts an active controller and its standby
METRICS_PORTS_BEYOND_BROKERS = 11  # deploy.local's metrics block: base .. base + 10 + broker count
DEMO_TENANT = "bench"
SECURITY_PROTOCOL = "sasl_plaintext"  # the stack runs with security on, without TLS

STACK_START_TIMEOUT_SECONDS = 240.0  # migrate, controllers, brokers, web, worker, beat, demo
STACK_STOP_TIMEOUT_SECONDS = 30.0  # deploy.local stops its children on SIGTERM
DEMO_TIMEOUT_SECONDS = 120.0  # `manage.py demo --json` waits for its own jobs
HTTP_TIMEOUT_SECONDS = 10.0
READY_LINE = "Logs:"  # deploy.local prints it once the stack serves and the demo is set up
LOWEST_PORT = 10_000  # stacks start above the well-known and registered ports other services use
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL_LOW = 32_768  # Linux's default first ephemeral port
_random = random.Random()  # seeded from the OS, independent of the global generator
TRANSPORT_LINE = "weir: Celery uses "  # deploy.local's notice of Celery's transport
# Names a file written by :meth:`LocalStack.attach_file`: a scenario that would start a default stack uses that
# running stack instead (the test suite runs several scenarios on one stack; each start costs ~45 s of CPU).
ATTACH_VARIABLE = "WEIR_BENCH_STACK"
OUTPUT_LINES_KEPT = 500  # of deploy.local's output, to explain a failure


class StackError(Exception):
    """The stack could not be started or used; the message says what failed and where."""

    retriable = False


@dataclass(frozen=True)
class Credentials:
    """What ``manage.py demo --json`` hands out that the benchmarks use."""

    api_url: str
    bootstrap_servers: str
    cloud_api_key: str
    cloud_api_secret: str
    cluster_api_key: str
    cluster_api_secret: str
    service_account: str  # its public id; the principal of the cluster key is User:<id>
    kafka_bootstrap_servers: str = ""  # the brokers' Kafka-protocol listeners

    @classmethod
    def from_demo_json(cls, text: str) -> Credentials:
        data = json.loads(text)
        return cls(**{name: str(data[name]) for name in cls.__dataclass_fields__ if name in data})

    def security_config(self) -> dict[str, Any]:
        """The SDK settings that authenticate with the demo's cluster key."""
        return {
            "security.protocol": SECURITY_PROTOCOL,
            "sasl.username": self.cluster_api_key,
            "sasl.password": self.cluster_api_secret,
        }

    def client_config(self) -> dict[str, Any]:
        """The SDK settings that reach the stack's brokers as the demo's service account."""
        return {"bootstrap.servers": self.bootstrap_servers, **self.security_config()}

    def kafka_security_config(self) -> dict[str, Any]:
        """A stock Kafka client's settings that authenticate with the demo's cluster key (SASL/PLAIN)."""
        return {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": self.cluster_api_key,
            "sasl.password": self.cluster_api_secret,
        }


def free_port_block(count: int, attempts: int = 50) -> int:
    """The first of ``count`` consecutive loopback ports that were all free a moment ago.

    Drawn at random from below the kernel's ephemeral range: a port there is not handed to an
    outgoing connection (or to another bind(0)) between this check and the stack binding it,
    which on a busy machine running tests side by side otherwise happens.
    """
    low, high = LOWEST_PORT, max(_ephemeral_low(), LOWEST_PORT + 1_000)
    for _attempt in range(attempts):
        first = _random.randrange(low, high - count)
        if all(_port_is_free(port) for port in range(first, first + count)):
            return first
    raise StackError(f"found no {count} consecutive free ports in {attempts} attempts")


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux's default when it cannot be read)."""
    try:
        return int(EPHEMERAL_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return DEFAULT_EPHEMERAL_LOW


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


class LocalStack:
    """``python -m deploy.local`` in a temporary data directory, on free ports; a context manager.

    ``settings`` are extra environment variables of the stack, such as
    ``WEIR_BROKER_SESSION_TIMEOUT_MS`` or ``WEIR_BROKER_<SETTING>`` for every broker. On entry
    the stack serves (its own readiness checks passed and its demo is set up) and
    ``credentials`` is set; on exit it gets SIGTERM, which stops every child, and the data
    directory is removed. ``transport`` is deploy.local's line naming Celery's transport.
    """

    def __init__(self, console: Console, label: str, broker_count: int = DEFAULT_BROKER_COUNT, settings: Mapping[str, str] | None = None) -> None:
        self._console = console
        self._label = label
        self._broker_count = broker_count
        self._settings = dict(settings or {})
        self._process: subprocess.Popen[str] | None = None
        self._lines: list[str] = []
        self._ready = threading.Event()
        self.transport = "unknown"
        self.credentials: Credentials | None = None
        self._demo_json = ""
        # A default stack (no settings of its own) attaches to the running one ATTACH_VARIABLE names, if any.
        attach_path = os.environ.get(ATTACH_VARIABLE, "").strip()
        self._attached: dict[str, Any] | None = None
        if attach_path and not self._settings and broker_count == DEFAULT_BROKER_COUNT:
            try:
                self._attached = json.loads(Path(attach_path).read_text(encoding="utf-8"))
            except (OSError, ValueError) as error:
                raise StackError(f"{ATTACH_VARIABLE}={attach_path} names no stack description: {error}") from None
        self.data_dir = Path(self._attached["data_dir"]) if self._attached else Path(tempfile.mkdtemp(prefix=f"weir-bench-{label}-"))

    @property
    def attached(self) -> bool:
        """True when this scenario runs on a stack started by someone else (ATTACH_VARIABLE), which it leaves running."""
        return self._attached is not None

    def attach_file(self, path: Path) -> Path:
        """Describe this running stack in ``path`` for scenarios started with ``ATTACH_VARIABLE=<path>``."""
        path.write_text(json.dumps({"data_dir": str(self.data_dir), "transport": self.transport, "demo_json": self._demo_json}), encoding="utf-8")
        return path

    def _environment(self) -> dict[str, str]:
        environment = dict(os.environ)
        # The embedded default: SQLite under the data directory, whatever the caller's shell
        # says. The settings module too: under pytest it is the test suite's, which picks the
        # suite's PostgreSQL database.
        environment.pop("DATABASE_URL", None)
        environment["DJANGO_SETTINGS_MODULE"] = "webapp.settings"
        environment.pop("WEIR_INTERNAL_TOKEN", None)
        # One block for every listener, so that no two of them can be given the same port:
        # the web process, then the controllers, then the brokers, then their Kafka listeners.
        http_port = free_port_block(1 + CONTROLLER_COUNT + 2 * self._broker_count)
        controller_base_port = http_port + 1
        broker_base_port = controller_base_port + CONTROLLER_COUNT
        kafka_base_port = broker_base_port + self._broker_count
        # The metrics endpoints (deploy.local: base + 1.. for controllers, + 9 worker, + 10 + N brokers).
        metrics_base_port = free_port_block(METRICS_PORTS_BEYOND_BROKERS + self._broker_count)
        environment.update(
            WEIR_DATA_DIR=str(self.data_dir),
            WEIR_HTTP_PORT=str(http_port),
            WEIR_CONTROLLER_BASE_PORT=str(controller_base_port),
            WEIR_BROKER_BASE_PORT=str(broker_base_port),
            WEIR_KAFKA_BASE_PORT=str(kafka_base_port),
            WEIR_METRICS_BASE_PORT=str(metrics_base_port),
            WEIR_BROKERS=str(self._broker_count),
            WEIR_DEMO_TENANT=DEMO_TENANT,
            # What deploy.local gives its own children; `demo --json`, run from here, prints them.
            WEIR_PUBLIC_API_URL=f"http://{LOOPBACK}:{http_port}",
            WEIR_BOOTSTRAP_SERVERS=",".join(f"{LOOPBACK}:{broker_base_port + offset}" for offset in range(self._broker_count)),
            PYTHONUNBUFFERED="1",
        )
        environment.update(self._settings)
        return environment

    def __enter__(self) -> LocalStack:
        if self._attached is not None:
            self._console.print(f"{self._label}: on the running stack in {self.data_dir}", markup=False)
            self.transport = str(self._attached["transport"])
            self._demo_json = str(self._attached["demo_json"])
            self.credentials = Credentials.from_demo_json(self._demo_json)
            return self
        environment = self._environment()
        self._console.print(f"{self._label}: starting the stack in {self.data_dir} ...", markup=False)
        # spawn: its own process group, so that a failed stop can end all of it, and the whole
        # stack ends with the benchmark, even after a kill -9 of it.
        self._process = spawn(
            [sys.executable, "-m", "deploy.local"], cwd=REPOSITORY, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        threading.Thread(target=self._read_output, name="deploy.local output", daemon=True).start()
        try:
            self._wait_until_ready()
            self.credentials = self._demo_credentials(environment)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _read_output(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            self._lines.append(line.rstrip("\n"))
            del self._lines[:-OUTPUT_LINES_KEPT]
            if line.startswith(TRANSPORT_LINE):
                self.transport = line[len("weir: ") :].strip()
            if line.startswith(READY_LINE):
                self._ready.set()
        self._ready.set()  # the process ended: the waiter sees that it is gone

    def _wait_until_ready(self) -> None:
        assert self._process is not None
        if not self._ready.wait(STACK_START_TIMEOUT_SECONDS) or self._process.poll() is not None:
            tail = "\n".join(self._lines[-30:])
            raise StackError(f"the stack did not come up within {STACK_START_TIMEOUT_SECONDS:g} s; its output ended with:\n{tail}")

    def _demo_credentials(self, environment: dict[str, str]) -> Credentials:
        # `demo` again, for machine-readable output: it reuses the tenant and issues new keys.
        completed = subprocess.run(
            [sys.executable, "manage.py", "demo", "--tenant", DEMO_TENANT, "--json"],
            cwd=REPOSITORY,
            env=environment,
            capture_output=True,
            text=True,
            timeout=DEMO_TIMEOUT_SECONDS,
        )
        if completed.returncode != 0:
            raise StackError(f"`manage.py demo --json` failed: {completed.stderr.strip() or completed.stdout.strip()}")
        self._demo_json = completed.stdout
        return Credentials.from_demo_json(completed.stdout)

    @property
    def supervisor_pid(self) -> int:
        """The process id of deploy.local, the parent of every process of the stack; only once started here."""
        if self._process is None:
            raise StackError("this stack was not started here (attached, or not entered)")
        return self._process.pid

    def broker_pid(self, node_id: int) -> int:
        """The process id of broker ``node_id`` now (deploy.local rewrites it on every restart)."""
        path = self.data_dir / "run" / f"broker-{node_id}.pid"
        try:
            return int(path.read_text().strip())
        except (OSError, ValueError) as error:
            raise StackError(f"cannot read broker {node_id}'s process id from {path}: {error}") from None

    def kill_broker(self, node_id: int) -> None:
        """SIGKILL broker ``node_id``: no controlled shutdown, as a crash or a pulled plug."""
        pid = self.broker_pid(node_id)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            raise StackError(f"broker {node_id} (pid {pid}) is not running") from None

    def log_tails(self, lines: int = 15) -> str:
        """The last ``lines`` lines of each process's log and of deploy.local's output, to
        explain failures before the data directory goes away."""
        parts = ["--- deploy.local output\n" + "\n".join(self._lines[-lines:])]
        for log in sorted(self.data_dir.glob("*.log")):
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log.name}\n" + "\n".join(tail))
        return "\n".join(parts)

    def __exit__(self, *_: object) -> None:
        if self._attached is not None:
            return  # whoever started it stops it
        process = self._process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STACK_STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(STACK_STOP_TIMEOUT_SECONDS)
        shutil.rmtree(self.data_dir, ignore_errors=True)


class ApiClient:
    """The REST API (``base_url`` ends in ``/api/v1``) with a cloud key (HTTP Basic), over
    urllib. Thread-safe: no shared state."""

    def __init__(self, base_url: str, key: str, secret: str) -> None:
        self._base_url = base_url.rstrip("/")
        token = base64.b64encode(f"{key}:{secret}".encode()).decode()
        self._headers = {"Authorization": f"Basic {token}", "Accept": "application/json"}

    @classmethod
    def for_stack(cls, credentials: Credentials) -> ApiClient:
        """The REST API of a stack with the demo's cloud key."""
        return cls(credentials.api_url, credentials.cloud_api_key, credentials.cloud_api_secret)

    def request(self, method: str, path: str, body: object | None = None) -> tuple[int, object]:
        """Send one request; (status, decoded JSON body, or the start of a body that is not JSON,
        or None). HTTP errors are returned, not raised; a connection failure raises OSError."""
        data = None if body is None else json.dumps(body).encode()
        headers = dict(self._headers)
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self._base_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_SECONDS) as response:
                status, payload = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, payload = error.code, error.read()
        if not payload:
            return status, None
        try:
            return status, json.loads(payload)
        except ValueError:
            # An HTML error page (a proxy, a crash page): kept short, for the failure message.
            return status, payload[:200].decode(errors="replace")
