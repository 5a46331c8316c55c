"""Build and start the gRPC server of one broker: ``create_server(config) -> (server, port, broker)``.

The server listens before the logs are recovered so that health checks can answer: the
health service says NOT_SERVING for "" and "weir.v1.Broker" until ``Broker.start`` has
finished and, with a controller, the broker has registered (``server.readiness``), then
SERVING; Broker calls arriving before the logs are recovered are refused with UNAVAILABLE.
Every call is counted by the metrics interceptor (``broker_nodes.metrics``), served on
``metrics.port`` when it is set. Server
reflection is on. The ``Admin`` service (control plane -> broker) and the ``Replication``
service (follower -> leader) are served beside ``Broker``. With a TLS certificate and key in the config the port speaks TLS only.
"""

from __future__ import annotations

import time
from concurrent import futures
from typing import Callable

import grpc
from grpc_health.v1 import health, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from broker_nodes.clock import SYSTEM_CLOCK, Clock
from broker_nodes.config import BrokerConfig
from broker_nodes.metrics.endpoint import BrokerMetrics
from broker_nodes.security.tls import server_credentials
from broker_nodes.server.admin_servicer import AdminServicer
from broker_nodes.server.broker import Broker, request_thread_count
from broker_nodes.server.readiness import Readiness
from broker_nodes.server.replication_servicer import ReplicationServicer
from broker_nodes.server.servicer import BrokerServicer
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc, broker_pb2, broker_pb2_grpc, replication_pb2, replication_pb2_grpc
from weir.request_ids import RequestIdServerInterceptor

BROKER_SERVICE_NAME = broker_pb2.DESCRIPTOR.services_by_name["Broker"].full_name  # "weir.v1.Broker"
ADMIN_SERVICE_NAME = admin_pb2.DESCRIPTOR.services_by_name["Admin"].full_name  # "weir.v1.Admin"
REPLICATION_SERVICE_NAME = replication_pb2.DESCRIPTOR.services_by_name["Replication"].full_name  # "weir.v1.Replication"
HEALTH_SERVICE_NAMES = ("", BROKER_SERVICE_NAME)  # the names whose status health checks report


class BrokerServer:
    """A running gRPC server with its broker and health service. Not thread-safe (one owner)."""

    def __init__(self, server: grpc.Server, port: int, broker: Broker, readiness: Readiness, metrics: BrokerMetrics) -> None:
        self.server = server
        self.port = port
        self.broker = broker
        self.readiness = readiness
        self.metrics = metrics

    def stop(self, grace_seconds: float = 5.0) -> None:
        """Graceful stop: hand leaderships to other replicas (controlled shutdown, while still
        serving so followers catch up and the new map arrives), refuse new calls, let running
        ones finish (up to the grace), close the logs. Health says NOT_SERVING from the start."""
        self.readiness.stop()
        # The open usage window goes to __usage while this broker still serves and leads.
        self.broker.metering.flush()
        self.broker.controlled_shutdown()
        stopped = self.server.stop(grace_seconds)
        # Parked long polls answer at once instead of holding the shutdown for max_wait_ms.
        self.broker.purgatory.close()
        stopped.wait(grace_seconds + 1.0)
        self.broker.shutdown()
        self.metrics.close()


def create_server(config: BrokerConfig, *, clock: Clock = SYSTEM_CLOCK) -> tuple[grpc.Server, int, Broker]:
    """Start a broker and its gRPC server on ``config.listen``; returns when it serves.

    The port is the bound one (``config.listen.port`` 0 picks a free port). Stop with
    ``server.stop(grace).wait()`` and then ``broker.shutdown()``; :func:`start_broker_server`
    returns an object whose ``stop`` does both and also reports NOT_SERVING first.
    """
    running = start_broker_server(config, clock=clock)
    return running.server, running.port, running.broker


def start_broker_server(config: BrokerConfig, *, clock: Clock = SYSTEM_CLOCK, sleep: Callable[[float], None] = time.sleep) -> BrokerServer:
    """Like :func:`create_server`, returning a :class:`BrokerServer` that knows how to stop everything.

    ``sleep`` delays the responses of tenants over their quota (tests inject a recorder).
    """
    broker = Broker(config, clock=clock)
    health_servicer = health.HealthServicer()
    readiness = Readiness(health_servicer, HEALTH_SERVICE_NAMES)
    metrics = BrokerMetrics(broker, ready=lambda: readiness.ready)
    max_message_bytes = int(config["socket.request.max.bytes"])  # type: ignore[call-overload]
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=request_thread_count(config), thread_name_prefix="request"),
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.so_reuseport", 0),
        ],
        # The request id interceptor (x-weir-request-id -> weir.request_ids) makes the call's log lines carry it.
        interceptors=[metrics.interceptor, RequestIdServerInterceptor()],
    )
    servicer = BrokerServicer(broker, sleep=sleep)
    broker_pb2_grpc.add_BrokerServicer_to_server(servicer, server)
    admin_pb2_grpc.add_AdminServicer_to_server(AdminServicer(broker), server)
    replication_pb2_grpc.add_ReplicationServicer_to_server(ReplicationServicer(broker), server)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((BROKER_SERVICE_NAME, ADMIN_SERVICE_NAME, REPLICATION_SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    host = config.listen.host
    address = f"[{host}]:{config.listen.port}" if ":" in host else f"{host}:{config.listen.port}"
    if config.tls_cert is not None and config.tls_key is not None:
        port = server.add_secure_port(address, server_credentials(config.tls_cert, config.tls_key))
    else:
        port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    servicer.set_port(port)
    metrics_port = int(config["metrics.port"])  # type: ignore[call-overload]
    if metrics_port:
        metrics.serve(host, metrics_port)
    server.start()
    running = BrokerServer(server, port, broker, readiness, metrics)
    try:
        broker.start()
    except BaseException:
        server.stop(0)
        broker.shutdown()
        metrics.close()
        raise
    broker.connect_controller(port)
    broker.metering.start(port)
    if broker.controller is None:
        readiness.serve()
    else:
        readiness.serve_once_registered(broker.controller.registered, alive=lambda: broker.ready)
    return running
