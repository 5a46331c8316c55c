import threading
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from broker_nodes.config import load_broker_config
from broker_nodes.server.app import create_server
from broker_nodes.server.broker import Broker
from broker_nodes.server.servicer import BrokerServicer
from grpc_protos.weir.v1 import broker_pb2
from tests.broker_nodes.server.helpers import create_topic, fetch


def test_health_reports_serving_for_the_server_and_the_broker_service(server):
    health = health_pb2_grpc.HealthStub(server.channel)
    for service in ("", "weir.v1.Broker"):
        assert health.Check(health_pb2.HealthCheckRequest(service=service)).status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_the_broker_service(server):
    reflection = reflection_pb2_grpc.ServerReflectionStub(server.channel)
    (reply,) = reflection.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
    assert "weir.v1.Broker" in {service.name for service in reply.list_services_response.service}


def test_create_server_returns_a_started_server_on_the_bound_port(tmp_path):
    config = load_broker_config(node_id=3, listen="127.0.0.1:0", data_dir=tmp_path, configs=["offsets.topic.num.partitions=1"])
    server, port, broker = create_server(config)
    try:
        assert port > 0 and broker.ready
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            reply = channel.unary_unary(
                "/weir.v1.Broker/Metadata",
                request_serializer=broker_pb2.MetadataRequest.SerializeToString,
                response_deserializer=broker_pb2.MetadataResponse.FromString,
            )(broker_pb2.MetadataRequest())
        assert (reply.brokers[0].node_id, reply.brokers[0].port, reply.controller_id) == (3, port, 3)
    finally:
        server.stop(None).wait()
        broker.shutdown()


class AbortingContext:
    def abort(self, code, details):
        raise RuntimeError((code, details))


def test_calls_before_the_broker_is_ready_are_unavailable(tmp_path):
    broker = Broker(load_broker_config(node_id=1, listen="127.0.0.1:0", data_dir=tmp_path))
    servicer = BrokerServicer(broker)
    with pytest.raises(RuntimeError) as raised:
        servicer.Metadata(broker_pb2.MetadataRequest(), AbortingContext())
    code, details = raised.value.args[0]
    assert code == grpc.StatusCode.UNAVAILABLE
    assert "recovering" in details


def test_data_directory_of_another_node_is_refused(tmp_path):
    Broker(load_broker_config(node_id=1, listen="127.0.0.1:0", data_dir=tmp_path))
    with pytest.raises(RuntimeError, match="belongs to node 1"):
        Broker(load_broker_config(node_id=2, listen="127.0.0.1:0", data_dir=tmp_path))


def test_graceful_stop_answers_a_parked_long_poll_at_once(broker_server_factory):
    server = broker_server_factory()
    create_topic(server.stub, "orders")
    replies = []
    poller = threading.Thread(target=lambda: replies.append(fetch(server.stub, "orders", 0, max_wait_ms=30_000, min_bytes=1, timeout=60)))
    poller.start()
    deadline = time.monotonic() + 10
    while server.broker.purgatory.parked == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    server.running.stop(grace_seconds=5.0)
    server.running = None
    poller.join(30)
    assert replies and replies[0].error_code == 0
    assert time.monotonic() - started < 5.0
