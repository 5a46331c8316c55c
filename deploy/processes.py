"""Supervised child processes for ``make up``: start, wait until ready, restart with backoff, stop.

Each child writes stdout and stderr to its own log file in the data directory and, when asked,
its process id to a pid file (so that a person can ``kill -9 $(cat broker-2.pid)`` and watch
the failover). A child that exits while supervised is restarted after its restart delay, which
doubles (up to a maximum) while it keeps failing and resets once it has started successfully;
the other children keep running. Its death and its return are announced in one line each.

Every child is started with :func:`server_runtime.lifeline.spawn`: in a session of its own, signalled by
the kernel when the supervisor dies, and ended with its whole process group by the supervisor's
guardian, so that even ``kill -9`` of ``make up`` leaves no broker, gunicorn worker, Celery pool
child or Spark JVM behind. Stopping signals the child's process group for the same reason.
"""

from __future__ import annotations

import os
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

from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc
from server_runtime.lifeline import signal_group, spawn
from weir.backoff import exponential_backoff

# A child that keeps dying is restarted no faster than this, doubling up to the maximum.
RESTART_BACKOFF_SECONDS = 1.0
RESTART_BACKOFF_MAX_SECONDS = 30.0
# How long a child may take to become ready, and how long it gets to stop on SIGTERM.
STARTUP_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 20.0
# Once a second stop signal asks for a faster stop: the grace every child still gets before SIGKILL.
HURRIED_STOP_TIMEOUT_SECONDS = 3.0
# How often a stopping child is looked at (whether it exited, whether to hurry).
STOP_POLL_SECONDS = 0.1
# How often readiness is polled while a child starts, and how long one probe may take.
READY_POLL_SECONDS = 0.1
PROBE_TIMEOUT_SECONDS = 1.0
# How often a supervisor looks whether its child is still running.
SUPERVISE_POLL_SECONDS = 0.5
# The metadata key of the internal credential on Admin calls (as webapp.provisioning.broker_client
# sends it; that module needs Django settings, which `make up` itself does not load).
INTERNAL_TOKEN_METADATA = "x-weir-internal-token"

ReadyCheck = Callable[[], bool]


def say(message: str) -> None:
    """Print one line for the person running ``make up`` (its own output, not a child's log)."""
    print(f"weir: {message}", flush=True)


def _channel(address: str, ca_certificate: Path | None) -> grpc.Channel:
    if ca_certificate is None:
        return grpc.insecure_channel(address)
    return grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=ca_certificate.read_bytes()))


def grpc_listening(address: str, *, ca_certificate: Path | None = None) -> ReadyCheck:
    """Ready when a gRPC server accepts a connection at ``address`` (a TLS handshake trusting
    ``ca_certificate`` when given). For servers without a health service."""

    def check() -> bool:
        with _channel(address, ca_certificate) as channel:
            try:
                grpc.channel_ready_future(channel).result(timeout=PROBE_TIMEOUT_SECONDS)
            except grpc.FutureTimeoutError:
                return False
            return True

    return check


def grpc_health_serving(address: str, service: str = "", *, ca_certificate: Path | None = None) -> ReadyCheck:
    """Ready when the gRPC health service at ``address`` says SERVING for ``service``
    ("weir.v1.Controller": the active controller; a standby answers NOT_SERVING)."""

    def check() -> bool:
        with _channel(address, ca_certificate) as channel:
            try:
                reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service), timeout=PROBE_TIMEOUT_SECONDS)
            except grpc.RpcError:
                return False
            return reply.status == health_pb2.HealthCheckResponse.SERVING

    return check


def any_ready(*checks: ReadyCheck) -> ReadyCheck:
    """Ready when one of ``checks`` is (tried in order)."""
    if not checks:
        raise ValueError("any_ready needs at least one check")
    return lambda: any(check() for check in checks)


def broker_registered(address: str, *, internal_token: Callable[[], str], ca_certificate: Path | None = None) -> ReadyCheck:
    """Ready when the broker at ``address`` reports a session with the controller: its Admin
    ``DescribeState`` answers a broker epoch other than 0. The controller records a broker as
    online before it answers the registration, so a ready broker is one placement counts.

    ``internal_token`` is called on every probe: the file it reads may appear only once the
    control plane's settings have made it.
    """

    def check() -> bool:
        with _channel(address, ca_certificate) as channel:
            try:
                state = admin_pb2_grpc.AdminStub(channel).DescribeState(
                    admin_pb2.DescribeStateRequest(), timeout=PROBE_TIMEOUT_SECONDS, metadata=[(INTERNAL_TOKEN_METADATA, internal_token())]
                )
            except (grpc.RpcError, OSError):
                return False
            return state.broker_epoch != 0

    return check


def http_ok(url: str, *, context: ssl.SSLContext | None = None) -> ReadyCheck:
    """Ready when ``url`` answers HTTP 200; an https URL is checked with ``context`` (default: system trust)."""

    def check() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_SECONDS, context=context) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    return check


def exit_description(returncode: int | None) -> str:
    """``exited with code 3`` or ``was killed by SIGKILL`` (Popen gives a signal as its negative)."""
    if returncode is None:
        return "is gone"
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


class ChildFailedError(RuntimeError):
    """A child exited or did not become ready while starting. Retriable: the supervisor tries
    again after its backoff; at ``make up``'s start it ends the run instead."""

    retriable = True

    def __init__(self, name: str, reason: str, log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        super().__init__(f"{name} {reason} (log: {log_path})")


class SupervisedProcess:
    """One child process, restarted with backoff when it dies until ``stop()``.

    ``pid_file``, when given, holds the running child's process id: written at every start,
    removed when the supervisor sees the child gone and at ``stop()``. ``restart_delay`` is
    the first wait before a restart. ``stop_timeout`` is how long ``stop()`` waits after
    SIGTERM before SIGKILL. ``announce`` receives the one-line messages about the child dying
    and coming back (default: printed).

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
        pid_file: Path | None = None,
        restart_delay: float = RESTART_BACKOFF_SECONDS,
        stop_timeout: float = STOP_TIMEOUT_SECONDS,
        announce: Callable[[str], None] = say,
    ) -> None:
        if restart_delay < 0:
            raise ValueError(f"restart_delay of {name} must not be negative, not {restart_delay}")
        self.name = name
        self.command = command
        self.log_path = log_path
        self.environment = environment
        self.ready = ready
        self.startup_timeout = startup_timeout
        self.pid_file = pid_file
        self.restart_delay = restart_delay
        self.stop_timeout = stop_timeout
        self.announce = announce
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self._stopping = threading.Event()
        self._hurry = threading.Event()
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the child and wait until it is ready; ChildFailedError when it is not."""
        with self._lock:
            if self._stopping.is_set():
                return
            with open(self.log_path, "ab") as log:
                # A new session (spawn's): Ctrl-C in the terminal reaches the supervisor only,
                # which then stops the children in order; the child's group is what stop() ends.
                self.process = spawn(self.command, stdout=log, stderr=subprocess.STDOUT, env=self.environment)
            self._write_pid_file(self.process.pid)
        if self.ready is None:
            return
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ChildFailedError(self.name, f"{exit_description(self.process.returncode)} while starting", self.log_path)
            if self.ready():
                return
            if self._stopping.wait(READY_POLL_SECONDS):
                return
        raise ChildFailedError(self.name, f"was not ready after {self.startup_timeout:.0f} s", self.log_path)

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def supervise(self) -> None:
        """Restart the child whenever it exits, until ``stop()`` is called."""
        while not self._stopping.is_set():
            if self.is_running():
                self._stopping.wait(SUPERVISE_POLL_SECONDS)
                continue
            self._remove_pid_file()
            code = self.process.returncode if self.process is not None else None
            self.announce(f"{self.name} {exit_description(code)}; restarting it in {self.restart_delay:g} s (log: {self.log_path})")
            if not self._restart():
                return
            self.restarts += 1
            pid = self.process.pid if self.process is not None else "?"
            self.announce(f"{self.name} is back (pid {pid})")

    def _restart(self) -> bool:
        """Start the child again after the restart delay, doubling the delay while it fails to
        start; False when ``stop()`` came first."""
        backoff = self.restart_delay
        first = max(self.restart_delay, RESTART_BACKOFF_SECONDS)
        longest = max(RESTART_BACKOFF_MAX_SECONDS, self.restart_delay)
        failures = 0
        while not self._stopping.wait(backoff):
            try:
                self.start()
            except ChildFailedError as error:
                self._terminate()
                self._remove_pid_file()
                failures += 1
                backoff = exponential_backoff(first, failures, longest)
                self.announce(f"{error}; trying again in {backoff:g} s")
                continue
            return not self._stopping.is_set()
        return False

    def request_stop(self) -> None:
        """Stop supervising and starting: a start waiting for readiness returns, no restart follows.
        Takes no lock, so that any thread may call it at any time; ``stop()`` then ends the child."""
        self._stopping.set()

    def hurry(self) -> None:
        """Shorten the grace of a stop (now or later) to HURRIED_STOP_TIMEOUT_SECONDS."""
        self._hurry.set()

    def stop(self) -> None:
        """Stop supervising and end the child's process group: SIGTERM, then SIGKILL after a grace period."""
        self._stopping.set()
        with self._lock:
            self._terminate()
            self._remove_pid_file()

    def _write_pid_file(self, pid: int) -> None:
        if self.pid_file is None:
            return
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        # Written aside and renamed, so a reader never sees half a number.
        partial = self.pid_file.with_name(self.pid_file.name + ".tmp")
        partial.write_text(f"{pid}\n")
        os.replace(partial, self.pid_file)

    def _remove_pid_file(self) -> None:
        if self.pid_file is not None:
            self.pid_file.unlink(missing_ok=True)

    def _terminate(self) -> None:
        """SIGTERM to the child's group, SIGKILL when the grace is over (or cut short by ``hurry``);
        then SIGKILL to whatever the child left in its group (a worker its master did not wait for)."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            signal_group(process, signal.SIGTERM)
            started = time.monotonic()
            while process.poll() is None:
                grace = HURRIED_STOP_TIMEOUT_SECONDS if self._hurry.is_set() else self.stop_timeout
                if time.monotonic() - started >= min(grace, self.stop_timeout):
                    break
                try:
                    process.wait(timeout=STOP_POLL_SECONDS)
                except subprocess.TimeoutExpired:
                    continue
        signal_group(process, signal.SIGKILL)
        process.wait(timeout=10)


def stop_all(tiers: list[list[SupervisedProcess]]) -> None:
    """Stop ``tiers`` one after another; the children of one tier at the same time, each in its
    own thread, so that the stack's stop takes the longest grace of a tier, not their sum."""
    for tier in tiers:
        stoppers = [threading.Thread(target=child.stop, name=f"stop {child.name}") for child in tier]
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join()
