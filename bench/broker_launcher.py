"""Start a throw-away Weir broker for a benchmark, as an operator would start one.

The broker runs as ``python -m broker_nodes --node-id 1 --listen 127.0.0.1:PORT --data-dir DIR``
in its own process (so that it has its own interpreter lock, as in production), with the
allocator settings of ``server_runtime.malloc_tuning`` in its environment, and is ready once its gRPC health
service answers SERVING.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.stack import free_port_block
from server_runtime.lifeline import spawn
from server_runtime.malloc_tuning import tuned_environment

LOOPBACK = "127.0.0.1"
# Characters of the broker's log shown when it fails to start.
LOG_TAIL_CHARACTERS = 4000


class BrokerStartError(RuntimeError):
    """The broker exited or did not report SERVING in time; ``log_tail`` says why."""

    retriable = False

    def __init__(self, message: str, log_tail: str) -> None:
        super().__init__(f"{message}; broker log:\n{log_tail}")
        self.log_tail = log_tail


def free_loopback_port() -> int:
    """A loopback TCP port that was free a moment ago, from below the ephemeral range (see
    :func:`bench.stack.free_port_block`)."""
    return free_port_block(1)


def health_status(address: str, timeout: float) -> int | None:
    """The gRPC health status of the whole server at ``address``; None when it does not answer."""
    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout)
        except grpc.RpcError:
            return None
    return reply.status


class LocalBroker:
    """One broker subprocess in a temporary data directory, removed on ``stop``.

    Use as a context manager. Not thread-safe: one benchmark owns it.
    """

    def __init__(self, start_timeout: float = 30.0) -> None:
        self.start_timeout = start_timeout
        self.port = free_loopback_port()
        self.kafka_port = free_loopback_port()  # its Kafka-protocol listener, measured beside the SDK
        self.directory = Path(tempfile.mkdtemp(prefix="weir-bench-"))
        self.data_directory = self.directory / "data"
        self.log_path = self.directory / "broker.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def kafka_address(self) -> str:
        return f"{LOOPBACK}:{self.kafka_port}"

    @property
    def pid(self) -> int:
        """The broker's process id, for a profiler to attach to; only once started."""
        if self._process is None:
            raise RuntimeError("the broker has not been started")
        return self._process.pid

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "broker_nodes",
            "--node-id",
            "1",
            "--listen",
            self.address,
            "--kafka-listen",
            self.kafka_address,
            "--data-dir",
            str(self.data_directory),
        ]

    def start(self) -> LocalBroker:
        self.data_directory.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            # spawn: the broker ends with the benchmark, even after a kill -9 of it.
            self._process = spawn(self.command(), stdout=log, stderr=subprocess.STDOUT, env=tuned_environment())
        deadline = time.monotonic() + self.start_timeout
        # Bounded by the deadline: one health check per iteration, each with its own timeout.
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                tail = self.log_tail()
                self.stop()
                raise BrokerStartError(f"broker exited with status {self._process.returncode}", tail)
            if health_status(self.address, timeout=1.0) == health_pb2.HealthCheckResponse.SERVING:
                return self
            time.sleep(0.05)
        tail = self.log_tail()
        self.stop()
        raise BrokerStartError(f"broker not SERVING after {self.start_timeout}s", tail)

    def log_tail(self) -> str:
        if not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-LOG_TAIL_CHARACTERS:]

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM, SIGKILL after ``timeout``; then remove the data directory."""
        process = self._process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None) -> None:
        self.stop()
