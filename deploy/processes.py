"""Supervised child processes for ``make up``: start, wait until ready, restart with backoff, stop.

Each child writes stdout and stderr to its own log file in the data directory. A child that
exits while supervised is restarted after a delay that doubles (up to a maximum) while it
keeps failing, and resets once it has started successfully; the other children keep running.
"""

from __future__ import annotations

import logging
import signal
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

LOG = logging.getLogger("weir.up")

# A child that keeps dying is restarted no faster than this, doubling up to the maximum.
RESTART_BACKOFF_SECONDS = 1.0
RESTART_BACKOFF_MAX_SECONDS = 30.0
# How long a child may take to become ready, and how long it gets to stop on SIGTERM.
STARTUP_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 20.0
# How often readiness is polled while a child starts.
READY_POLL_SECONDS = 0.1

ReadyCheck = Callable[[], bool]


def grpc_serving(address: str, *, ca_certificate: Path | None = None) -> ReadyCheck:
    """Ready when the gRPC health service at ``address`` reports SERVING (over TLS trusting ``ca_certificate`` when given)."""
    credentials = grpc.ssl_channel_credentials(root_certificates=ca_certificate.read_bytes()) if ca_certificate is not None else None

    def check() -> bool:
        channel = grpc.secure_channel(address, credentials) if credentials is not None else grpc.insecure_channel(address)
        with channel:
            try:
                reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=1.0)
            except grpc.RpcError:
                return False
            return reply.status == health_pb2.HealthCheckResponse.SERVING

    return check


def http_ok(url: str, *, context: ssl.SSLContext | None = None) -> ReadyCheck:
    """Ready when ``url`` answers HTTP 200; an https URL is checked with ``context`` (default: system trust)."""

    def check() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=1.0, context=context) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    return check


class ChildFailedError(RuntimeError):
    """A child exited or did not become ready while starting."""

    def __init__(self, name: str, reason: str, log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        super().__init__(f"{name} {reason} (log: {log_path})")


class SupervisedProcess:
    """One child process, restarted with backoff when it dies until ``stop()``.

    Thread-safety: ``start`` and ``stop`` may be called from different threads; ``supervise``
    runs in its own thread.
    """

    def __init__(
        self,
        name: str,
        command: list[str],
        *,
        log_path: Path,
        environment: dict[str, str],
        ready: ReadyCheck | None = None,
        startup_timeout: float = STARTUP_TIMEOUT_SECONDS,
    ) -> None:
        self.name = name
        self.command = command
        self.log_path = log_path
        self.environment = environment
        self.ready = ready
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the child and wait until it is ready; ChildFailedError when it is not."""
        with self._lock:
            if self._stopping.is_set():
                return
            with open(self.log_path, "ab") as log:
                # A new session: Ctrl-C in the terminal reaches the supervisor only, which
                # then stops the children in order.
                self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT, env=self.environment, start_new_session=True)
        if self.ready is None:
            return
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ChildFailedError(self.name, f"exited with code {self.process.returncode} while starting", self.log_path)
            if self.ready():
                return
            if self._stopping.wait(READY_POLL_SECONDS):
                return
        raise ChildFailedError(self.name, f"was not ready after {self.startup_timeout:.0f} s", self.log_path)

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def supervise(self) -> None:
        """Restart the child whenever it exits, until ``stop()`` is called."""
        backoff = RESTART_BACKOFF_SECONDS
        while not self._stopping.is_set():
            if self.is_running():
                self._stopping.wait(0.5)
                continue
            code = self.process.returncode if self.process is not None else None
            LOG.warning("%s exited with code %s; restarting in %.0f s (log: %s)", self.name, code, backoff, self.log_path)
            if self._stopping.wait(backoff):
                return
            try:
                self.start()
                self.restarts += 1
                LOG.warning("%s is running again", self.name)
                backoff = RESTART_BACKOFF_SECONDS
            except ChildFailedError as error:
                LOG.error("%s", error)
                self._terminate()
                backoff = min(backoff * 2, RESTART_BACKOFF_MAX_SECONDS)

    def stop(self) -> None:
        """Stop supervising and end the child: SIGTERM, then SIGKILL after a grace period."""
        self._stopping.set()
        with self._lock:
            self._terminate()

    def _terminate(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
