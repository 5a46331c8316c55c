"""gRPC health of a broker with a controller: NOT_SERVING until the controller has answered its
registration, SERVING after, NOT_SERVING again from the start of a controlled shutdown."""

from __future__ import annotations

import time
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from grpc_protos.weir.v1 import controller_pb2_grpc
from tests.broker_nodes.fake_controller import FakeController
from tests.broker_nodes.security.managed_cluster import INTERNAL_TOKEN
from tests.support.in_process_broker import InProcessBroker
from tests.support.processes import free_port
from tests.support.waiting import wait_until

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def _status(channel: grpc.Channel, service: str = "") -> int:
    return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status


def _wait_for(condition, seconds: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


class WatchingController(FakeController):
    """Records what the broker's health service says while its controlled shutdown is under way."""

    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.broker_address = ""
        self.status_during_shutdown: int | None = None

    def ControlledShutdown(self, request, context):  # type: ignore[no-untyped-def]
        with grpc.insecure_channel(self.broker_address) as channel:
            self.status_during_shutdown = _status(channel)
        return super().ControlledShutdown(request, context)


def _registration_failed(caplog: pytest.LogCaptureFixture) -> bool:
    """Whether the broker's controller session has logged a failed registration (it then retries)."""
    return any(record.name == "broker_nodes.controller_client" and record.getMessage().endswith("; retrying") for record in caplog.records)


def test_a_broker_serves_only_once_the_controller_answered_and_stops_serving_at_shutdown(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    controller_port = free_port()  # nothing answers here yet
    configs = {
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "broker.heartbeat.interval.ms": "50",
        "controlled.shutdown.timeout.ms": "2000",
        "offsets.topic.num.partitions": "1",
    }
    broker = InProcessBroker(tmp_path / "data", configs, environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN}).start()
    controller = WatchingController(INTERNAL_TOKEN)
    server: grpc.Server | None = None
    try:
        assert broker.broker.ready  # the logs are recovered ...
        wait_until(lambda: _registration_failed(caplog), "a failed registration with the absent controller")  # ... and registering failed
        for service in ("", "weir.v1.Broker"):
            assert _status(broker.channel, service) == NOT_SERVING
        assert broker.running.metrics.registry.get_sample_value("weir_broker_ready") == 0  # type: ignore[union-attr]

        controller.broker_address = f"127.0.0.1:{broker.port}"
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        controller_pb2_grpc.add_ControllerServicer_to_server(controller, server)
        assert server.add_insecure_port(f"127.0.0.1:{controller_port}") == controller_port
        server.start()
        assert _wait_for(lambda: _status(broker.channel) == SERVING), "the broker did not serve after registering"
        assert _status(broker.channel, "weir.v1.Broker") == SERVING
        assert len(controller.registrations) == 1
        assert broker.running.metrics.registry.get_sample_value("weir_broker_ready") == 1  # type: ignore[union-attr]
        assert broker.running.metrics.registry.get_sample_value("weir_broker_controller_registered") == 1  # type: ignore[union-attr]

        broker.stop()
        assert controller.status_during_shutdown == NOT_SERVING
    finally:
        broker.stop()
        if server is not None:
            server.stop(None)


def test_a_broker_answered_not_controller_keeps_reporting_not_serving(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    controller = FakeController(INTERNAL_TOKEN).start()
    controller.not_controller = True
    configs = {"controller.quorum.bootstrap.servers": controller.address, "broker.heartbeat.interval.ms": "50", "offsets.topic.num.partitions": "1"}
    broker = InProcessBroker(tmp_path / "data", configs, environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN}).start()
    try:
        wait_until(lambda: _registration_failed(caplog), "a registration answered NOT_CONTROLLER")
        assert _status(broker.channel) == NOT_SERVING
        controller.not_controller = False  # a standby became the active controller
        assert _wait_for(lambda: _status(broker.channel) == SERVING)
    finally:
        broker.stop()
        controller.stop()
