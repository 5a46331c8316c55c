"""Real broker processes for tests: started on a random loopback port, ended by the test.

A broker is ``python -m broker_nodes --node-id N --listen 127.0.0.1:PORT --data-dir DIR``;
it is ready when its gRPC health service reports SERVING (log recovery finished).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from server_runtime.lifeline import spawn

# free_port is imported from here by many tests; tests/support/ports.py says why it is safe under xdist.
from tests.support.ports import free_port

LOOPBACK = "127.0.0.1"
# A process that takes long to start refuses many connections; gRPC's default reconnect backoff
# (1 s growing by 1.6x to 120 s) would then leave the channel idle for seconds after it serves.
READINESS_CHANNEL_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 500),
]
PORT_MOVES = 3  # new ports a first start tries when another program took the chosen one


def wait_until_serving(address: str, timeout: float = 30.0, process: subprocess.Popen[bytes] | None = None) -> None:
    """Block until the gRPC health service at ``address`` answers SERVING; TimeoutError otherwise.

    With ``process`` given, raise RuntimeError as soon as it exits instead of waiting out the timeout.
    """
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    with grpc.insecure_channel(address, options=READINESS_CHANNEL_OPTIONS) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"the process serving {address} exited with code {process.returncode}")
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1.0)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError as error:
                last_error = error
            time.sleep(0.05)
    raise TimeoutError(f"broker at {address} not serving after {timeout}s (last error: {last_error})")


class BrokerProcess:
    """One broker subprocess. ``configs`` become ``--config key=value`` arguments."""

    def __init__(
        self,
        data_dir: Path,
        *,
        node_id: int = 1,
        port: int | None = None,
        configs: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        kafka_port: int | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.node_id = node_id
        self.port = port or free_port()
        self.kafka_port = kafka_port or free_port()  # every test broker also speaks Kafka's protocol (--kafka-listen)
        # A port this object chose may be taken before the broker binds it: the first start then
        # moves to another (a restart keeps its port, since other brokers and clients know it).
        self._port_moves_left = 0 if port else PORT_MOVES
        self.configs = dict(configs or {})
        self.env = dict(env or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = self.data_dir.parent / f"broker-{node_id}-{self.port}.log"

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def kafka_address(self) -> str:
        return f"{LOOPBACK}:{self.kafka_port}"

    def command(self) -> list[str]:
        command = [sys.executable, "-m", "broker_nodes", "--node-id", str(self.node_id), "--listen", self.address, "--data-dir", str(self.data_dir)]
        command += ["--kafka-listen", self.kafka_address]
        for key, value in self.configs.items():
            command += ["--config", f"{key}={value}"]
        return command

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        environment = {**os.environ, **self.env}
        # spawn: the broker ends with this process (the test run), even after a kill -9 of pytest.
        with open(self.log_path, "ab") as log:
            self.process = spawn(self.command(), stdout=log, stderr=subprocess.STDOUT, env=environment)
        try:
            wait_until_serving(self.address, timeout, self.process)
        except (TimeoutError, RuntimeError) as error:
            self.stop()
            if self._port_moves_left > 0 and self._port_was_taken():
                self._port_moves_left -= 1
                self.port = free_port()
                self.kafka_port = free_port()
                self.log_path = self.data_dir.parent / f"broker-{self.node_id}-{self.port}.log"
                return self.start(timeout)
            raise RuntimeError(f"broker {self.node_id} did not start ({error}); its log:\n{self.read_log()[-4000:]}") from None
        self._port_moves_left = 0
        return self

    def _port_was_taken(self) -> bool:
        """Whether the broker's log says it could not bind its port (gRPC's words, or the broker's)."""
        log = self.read_log()
        return (
            f"Failed to bind to address {self.address}" in log
            or f"cannot listen on {self.address}" in log
            or f"cannot listen for Kafka clients on {self.kafka_address}" in log
        )

    def read_log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        """kill -9: no chance to flush or close anything."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM and wait for a clean shutdown; SIGKILL after ``timeout``."""
        if not self.process:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        return self.process.returncode

    def restart(self, timeout: float = 30.0) -> BrokerProcess:
        self.stop()
        return self.start(timeout)

    def is_running(self) -> bool:
        return bool(self.process and self.process.poll() is None)
