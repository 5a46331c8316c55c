"""`make up`: run Weir on this machine from embedded defaults and say how to reach it.

Starts one standalone broker (the control plane, Celery and more brokers join in later
issues), creates the demo topic, prints connection details, and then supervises: when the
broker dies it is restarted with backoff (its log recovery runs on the way up). Ctrl-C or
SIGTERM stops everything cleanly.

Configuration (environment, twelve-factor):

==========================  ===========================  ==================================
variable                    default                      meaning
==========================  ===========================  ==================================
WEIR_DATA_DIR               ./.weir-data                 all state: one directory per broker
WEIR_HOST                   127.0.0.1                    interface the broker listens on
WEIR_BROKER_BASE_PORT       9092                         broker N listens on base + N - 1
WEIR_DEMO_TOPIC             demo                         topic created at start (3 partitions)
WEIR_BROKER_<SETTING>       see broker_nodes/config.py   any broker setting, e.g.
                                                         WEIR_BROKER_AUTO_CREATE_TOPICS_ENABLE
==========================  ===========================  ==================================

Two stacks run side by side when they differ in WEIR_DATA_DIR and WEIR_BROKER_BASE_PORT.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

LOG = logging.getLogger("weir.up")

# A broker that keeps dying is restarted no faster than this, doubling up to the maximum.
RESTART_BACKOFF_SECONDS = 1.0
RESTART_BACKOFF_MAX_SECONDS = 30.0
STARTUP_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class StackSettings:
    data_dir: Path
    host: str
    broker_base_port: int
    demo_topic: str

    @classmethod
    def from_environment(cls, environment: dict[str, str]) -> "StackSettings":
        try:
            base_port = int(environment.get("WEIR_BROKER_BASE_PORT", "9092"))
        except ValueError:
            raise SystemExit(f"WEIR_BROKER_BASE_PORT must be a port number, not {environment['WEIR_BROKER_BASE_PORT']!r}") from None
        if not 1 <= base_port <= 65535:
            raise SystemExit(f"WEIR_BROKER_BASE_PORT must be between 1 and 65535, not {base_port}")
        return cls(
            data_dir=Path(environment.get("WEIR_DATA_DIR", ".weir-data")).resolve(),
            host=environment.get("WEIR_HOST", "127.0.0.1"),
            broker_base_port=base_port,
            demo_topic=environment.get("WEIR_DEMO_TOPIC", "demo"),
        )

    def broker_address(self, node_id: int) -> str:
        return f"{self.host}:{self.broker_base_port + node_id - 1}"


def wait_until_serving(address: str, timeout: float, process: subprocess.Popen[bytes]) -> None:
    """Block until the gRPC health service at ``address`` says SERVING; raise if the process exits first."""
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"the broker exited with code {process.returncode} while starting")
            try:
                if stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1.0).status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.1)
    raise TimeoutError(f"the broker at {address} was not serving after {timeout:.0f}s")


class SupervisedBroker:
    """One broker subprocess, restarted with backoff when it dies until ``stop()``."""

    def __init__(self, settings: StackSettings, node_id: int) -> None:
        self.settings = settings
        self.node_id = node_id
        self.address = settings.broker_address(node_id)
        self.data_dir = settings.data_dir / f"broker-{node_id}"
        self.log_path = settings.data_dir / f"broker-{node_id}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "broker_nodes", "--node-id", str(self.node_id), "--listen", self.address, "--data-dir", str(self.data_dir)]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        wait_until_serving(self.address, STARTUP_TIMEOUT_SECONDS, self.process)

    def supervise(self) -> None:
        """Restart the broker whenever it exits, until ``stop()`` is called."""
        backoff = RESTART_BACKOFF_SECONDS
        while not self._stopping.is_set():
            assert self.process is not None
            if self.process.poll() is None:
                self._stopping.wait(0.5)
                continue
            LOG.warning("broker %d exited with code %s; restarting in %.0fs (log: %s)", self.node_id, self.process.returncode, backoff, self.log_path)
            if self._stopping.wait(backoff):
                return
            try:
                self.start()
                LOG.warning("broker %d is serving again at %s", self.node_id, self.address)
                backoff = RESTART_BACKOFF_SECONDS
            except (RuntimeError, TimeoutError) as error:
                LOG.error("broker %d failed to restart: %s", self.node_id, error)
                backoff = min(backoff * 2, RESTART_BACKOFF_MAX_SECONDS)

    def stop(self) -> None:
        self._stopping.set()
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def ensure_demo_topic(bootstrap: str, topic: str) -> None:
    """Create the demo topic unless it exists (idempotent across restarts of `make up`)."""
    from weir.admin import AdminClient, NewTopic
    from weir.errors import KafkaError, KafkaException

    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic]
    try:
        future.result(timeout=30)
    except KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def print_banner(settings: StackSettings, bootstrap: str) -> None:
    print(
        f"""
Weir is up.
  broker (gRPC)       {bootstrap}        data: {settings.data_dir}
  demo topic          {settings.demo_topic} (3 partitions)

Try it (in another terminal, from this directory):
  .venv/bin/weir --bootstrap-server {bootstrap} topics list
  seq 1 5 | .venv/bin/weir --bootstrap-server {bootstrap} produce {settings.demo_topic}
  .venv/bin/weir --bootstrap-server {bootstrap} consume {settings.demo_topic} --from-beginning --max-messages 5

  .venv/bin/python -c "from weir import Producer; p = Producer({{'bootstrap.servers': '{bootstrap}'}}); p.produce('{settings.demo_topic}', b'hello'); p.flush()"

Logs: {settings.data_dir}/broker-*.log      Stop: Ctrl-C
""",
        flush=True,
    )


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = StackSettings.from_environment(dict(os.environ))
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    broker = SupervisedBroker(settings, node_id=1)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        try:
            broker.start()
        except (RuntimeError, TimeoutError) as error:
            print(f"weir: could not start the broker at {broker.address}: {error}. See {broker.log_path}", file=sys.stderr)
            return 1
        ensure_demo_topic(broker.address, settings.demo_topic)
        print_banner(settings, broker.address)
        supervisor = threading.Thread(target=broker.supervise, name="supervisor", daemon=True)
        supervisor.start()
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        print("\nStopping Weir...", flush=True)
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
