"""The controller's gRPC health (a standby listens: "" SERVING, "weir.v1.Controller" only while
active, Controller calls answered NOT_CONTROLLER) and its Prometheus metrics."""

from __future__ import annotations

import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from grpc_protos.weir.v1 import controller_pb2, controller_pb2_grpc
from webapp.controller import metrics
from webapp.controller.service import ControllerService
from webapp.controller.servicer import start_controller_server
from weir.errors import ErrorCode

TOKEN = "controller-test-token"
METADATA = (("x-weir-internal-token", TOKEN),)
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def _health(channel: grpc.Channel, service: str) -> int:
    return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status


def _sample(name: str, labels: dict[str, str] | None = None) -> float:
    return metrics.REGISTRY.get_sample_value(name, labels or {}) or 0.0


@pytest.mark.django_db(transaction=True)
def test_a_standby_listens_refuses_as_not_controller_and_serves_once_activated() -> None:
    running = start_controller_server("127.0.0.1:0", internal_token=TOKEN)
    channel = grpc.insecure_channel(f"127.0.0.1:{running.port}")
    stub = controller_pb2_grpc.ControllerStub(channel)
    register = controller_pb2.RegisterBrokerRequest(node_id=1, host="127.0.0.1", port=9092)
    try:
        assert _health(channel, "") == SERVING
        assert _health(channel, "weir.v1.Controller") == NOT_SERVING
        refused_before = _sample("weir_controller_requests_total", {"method": "RegisterBroker", "outcome": "NOT_CONTROLLER"})
        assert stub.RegisterBroker(register, metadata=METADATA, timeout=10).error_code == ErrorCode.NOT_CONTROLLER
        assert _sample("weir_controller_requests_total", {"method": "RegisterBroker", "outcome": "NOT_CONTROLLER"}) == refused_before + 1
        assert _sample("weir_controller_active") == 0

        service = ControllerService(session_timeout_ms=9000, first_epoch=10, push=lambda: None)
        registrations_before = _sample("weir_controller_registrations_total")
        running.activate(service)
        assert _health(channel, "weir.v1.Controller") == SERVING
        assert stub.RegisterBroker(register, metadata=METADATA, timeout=10).error_code == ErrorCode.NO_ERROR
        assert _sample("weir_controller_registrations_total") == registrations_before + 1
        assert _sample("weir_controller_active") == 1
        assert _sample("weir_controller_epoch") == service.controller_epoch
        assert _sample("weir_controller_broker_sessions") == 1
        assert metrics.REGISTRY.get_sample_value("weir_controller_offline_partitions") == 0

        running.deactivate()
        assert _health(channel, "weir.v1.Controller") == NOT_SERVING
        assert stub.RegisterBroker(register, metadata=METADATA, timeout=10).error_code == ErrorCode.NOT_CONTROLLER
    finally:
        channel.close()
        running.stop(0)
    with grpc.insecure_channel(f"127.0.0.1:{running.port}") as closed, pytest.raises(grpc.RpcError):
        _health(closed, "")


@pytest.mark.django_db(transaction=True)
def test_alter_partition_outcomes_are_counted_by_error_name() -> None:
    running = start_controller_server("127.0.0.1:0", internal_token=TOKEN)
    running.activate(ControllerService(session_timeout_ms=9000, first_epoch=10, push=lambda: None))
    labels = {"outcome": "UNKNOWN_TOPIC_OR_PARTITION"}
    before = _sample("weir_controller_alter_partition_total", labels)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            answer = controller_pb2_grpc.ControllerStub(channel).AlterPartition(
                controller_pb2.AlterPartitionRequest(topic="tn-x~missing", partition=0, leader_id=1, leader_epoch=1, new_isr=[1]), metadata=METADATA, timeout=10
            )
        assert answer.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert _sample("weir_controller_alter_partition_total", labels) == before + 1
    finally:
        running.stop(0)


def test_the_metrics_endpoint_serves_the_controller_registry_as_text() -> None:
    endpoint = metrics.MetricsEndpoint("127.0.0.1", 0)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/metrics", timeout=5) as response:
            text = response.read().decode("utf-8")
    finally:
        endpoint.close()
    names = {family.name for family in text_string_to_metric_families(text)}
    assert {"weir_controller_active", "weir_controller_requests", "weir_controller_pushes", "weir_controller_partition_changes"} <= names
