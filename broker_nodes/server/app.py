"""Build and start the gRPC server of one broker: ``create_server(config) -> (server, port, broker)``.

The server listens before the logs are recovered so that health checks can answer: the
health service says NOT_SERVING for "" and "weir.v1.Broker" until ``Broker.start`` has
finished and, with a controller, the broker has registered (``server.readiness``), then
SERVING; Broker calls arriving before the logs are recovered are refused with UNAVAILABLE.
Every call is counted by the metrics interceptor (``broker_nodes.metrics``), served on
``metrics.port`` when it is set. Server
reflection is on. The ``Admin`` service (control plane -> broker) and the ``Replication``
service (follower -> leader) are served beside ``Broker``. With a TLS certificate and key in the config the port speaks TLS only.

What one call can cost is bounded before its handler runs (``server.admission``): no message
larger than ``max.request.size`` plus framing is received, on any service; a Broker call is
authenticated from its metadata before its message is read; and the bytes of Broker requests
being handled are held within ``queued.max.request.bytes`` (``server.request_budget``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from broker_nodes.clock import SYSTEM_CLOCK, Clock
from broker_nodes.config import BrokerConfig, largest_request_bytes
from broker_nodes.kafka_protocol.server import KafkaServer
from broker_nodes.metrics.endpoint import BrokerMetrics
from broker_nodes.metrics.kafka import KafkaMetrics
from broker_nodes.metrics.request_budget import RequestBudgetCollector
from broker_nodes.security.tls import server_credentials
from broker_nodes.server.admin_servicer import AdminServicer
from broker_nodes.server.admission import AuthenticationInterceptor, RequestBudgetInterceptor
from broker_nodes.server.broker import Broker, request_thread_count
from broker_nodes.server.readiness import Readiness
from broker_nodes.server.replication_servicer import ReplicationServicer
from broker_nodes.server.request_budget import RequestBudget
from broker_nodes.server.servicer import BrokerServicer
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc, broker_pb2, broker_pb2_grpc, replication_pb2, replication_pb2_grpc
from server_runtime.request_ids import RequestIdServerInterceptor

BROKER_SERVICE_NAME = broker_pb2.DESCRIPTOR.services_by_name["Broker"].full_name  # "weir.v1.Broker"
ADMIN_SERVICE_NAME = admin_pb2.DESCRIPTOR.services_by_name["Admin"].full_name  # "weir.v1.Admin"
REPLICATION_SERVICE_NAME = replication_pb2.DESCRIPTOR.services_by_name["Replication"].full_name  # "weir.v1.Replication"
HEALTH_SERVICE_NAMES = ("", BROKER_SERVICE_NAME)  # the names whose status health checks report
# Calls one client connection may have open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS;
# gRPC's default is unlimited). Far above what one process's clients use, although they share a
# connection (each SDK client: max.in.flight.requests.per.connection produces, a long-poll fetch
# and a heartbeat per broker); a client that opens more waits for a free stream on its side
# instead of queueing unbounded numbers of calls in the broker.
MAX_CONCURRENT_STREAMS_PER_CONNECTION = 1000
# HTTP/2 flow-control window of each call before its handler asks for the message (gRPC's
# default; once a handler reads, the transport opens the window to the message's size).
# gRPC's bandwidth-delay probing, switched off here, grows windows to megabytes, and the
# transport then reads that much ahead even for a call refused before its message is read
# (unauthenticated) or one waiting for a request thread: 16 refused 7 MiB requests cost 42 MB
# of RSS with probing and none without. Through a 20 ms round trip, five pipelined 1 MB
# produces ran at about 50 MB/s either way (the window opens per message being read).
LOOKAHEAD_BYTES = 64 * 1024


class BrokerServer:
    """A running gRPC server with its broker and health service. Not thread-safe (one owner)."""

    def __init__(self, server: grpc.Server, port: int, broker: Broker, readiness: Readiness, metrics: BrokerMetrics) -> None:
        self.server = server
        self.port = port
        self.broker = broker
        self.readiness = readiness
        self.metrics = metrics
        self.kafka: KafkaServer | None = None  # the Kafka-protocol listener, with kafka.listen set

    @property
    def kafka_port(self) -> int:
        """The bound port of the Kafka-protocol listener; 0 without one."""
        return self.kafka.port if self.kafka is not None else 0

    def stop(self, grace_seconds: float = 5.0) -> None:
        """Graceful stop: hand leaderships to other replicas (controlled shutdown, while still
        serving so followers catch up and the new map arrives), refuse new calls, let running
        ones finish (up to the grace), close the logs. Health says NOT_SERVING from the start."""
        self.readiness.stop()
        # The open usage window goes to __usage while this broker still serves and leads.
        self.broker.metering.flush()
        self.broker.controlled_shutdown()
        stopped = self.server.stop(grace_seconds)
        # Open streams never finish by themselves: end them rather than wait out the grace.
        self.broker.streams.close()
        if self.kafka is not None:
            self.kafka.close_listener()
        # Parked long polls answer at once instead of holding the shutdown for max_wait_ms.
        self.broker.purgatory.close()
        stopped.wait(grace_seconds + 1.0)
        if self.kafka is not None:
            self.kafka.stop(grace_seconds)
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
    budget = request_budget(config)
    metrics.registry.register(RequestBudgetCollector(budget))
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=request_thread_count(config), thread_name_prefix="request"),
        options=[
            # One limit for every service of the port: gRPC has no per-service receive limit.
            # The internal services' requests are small (a follower's ReplicaFetch) or fit
            # easily (the control plane's cluster maps); their large answers are sends.
            ("grpc.max_receive_message_length", largest_request_bytes(config)),
            ("grpc.max_send_message_length", config.integer("socket.request.max.bytes")),
            ("grpc.max_concurrent_streams", MAX_CONCURRENT_STREAMS_PER_CONNECTION),
            ("grpc.http2.bdp_probe", 0),
            ("grpc.http2.lookahead_bytes", LOOKAHEAD_BYTES),
            ("grpc.so_reuseport", 0),
            # A frozen or vanished client's open calls (streams hold a request thread each) end once
            # its connection misses a ping; pings go only while calls are open, as often as needed.
            ("grpc.keepalive_time_ms", config.integer("connections.keepalive.time.ms")),
            ("grpc.keepalive_timeout_ms", config.integer("connections.keepalive.timeout.ms")),
            # gRPC core closes the connection on an unanswered ping after this (60 s by default,
            # whatever keepalive_timeout_ms says).
            ("grpc.http2.ping_timeout_ms", config.integer("connections.keepalive.timeout.ms")),
            ("grpc.keepalive_permit_without_calls", 0),
            ("grpc.http2.max_pings_without_data", 0),
        ],
        # Outermost first. The budget wraps the others, so that the metrics and request id
        # interceptors see parsed requests; authentication is innermost, so that refusals are
        # counted by the metrics and never read the message (see server.admission). The request
        # id interceptor (x-weir-request-id -> server_runtime.request_ids) makes the call's log lines carry it.
        interceptors=[RequestBudgetInterceptor(budget), metrics.interceptor, RequestIdServerInterceptor(), AuthenticationInterceptor(broker.authenticator)],
    )
    servicer = BrokerServicer(broker, sleep=sleep)
    broker_pb2_grpc.add_BrokerServicer_to_server(servicer, server)
    admin_pb2_grpc.add_AdminServicer_to_server(AdminServicer(broker), server)
    replication_pb2_grpc.add_ReplicationServicer_to_server(ReplicationServicer(broker), server)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (BROKER_SERVICE_NAME, ADMIN_SERVICE_NAME, REPLICATION_SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    host = config.listen.host
    address = f"[{host}]:{config.listen.port}" if ":" in host else f"{host}:{config.listen.port}"
    if config.tls_cert is not None and config.tls_key is not None:
        port = server.add_secure_port(address, server_credentials(config.tls_cert, config.tls_key))
    else:
        port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    servicer.set_port(port)
    metrics_port = config.integer("metrics.port")
    if metrics_port:
        metrics.serve(host, metrics_port)
    server.start()
    running = BrokerServer(server, port, broker, readiness, metrics)
    try:
        broker.start()
        kafka_listen = config.kafka_listen
        if kafka_listen is not None:
            # The same request budget as the gRPC port: together they hold queued.max.request.bytes at most.
            running.kafka = KafkaServer(broker, kafka_listen, budget=budget, metrics=KafkaMetrics(metrics.registry))
            running.kafka.start()
    except BaseException:
        server.stop(0)
        if running.kafka is not None:
            running.kafka.stop(0)
        broker.shutdown()
        metrics.close()
        raise
    broker.connect_controller(port, running.kafka.listener.port if running.kafka is not None and running.kafka.listener is not None else 0)
    broker.metering.start(port)
    if broker.controller is None:
        readiness.serve()
    else:
        readiness.serve_once_registered(broker.controller.registered, alive=lambda: broker.ready)
    return running


def request_budget(config: BrokerConfig) -> RequestBudget:
    """The broker's budget of Broker-request bytes in flight (``queued.max.request.bytes``).

    At most half of ``num.io.threads`` requests wait for room at once: a waiting request holds
    a request thread, and the other half stay free for requests that fit.
    """
    io_threads = config.integer("num.io.threads")
    return RequestBudget(
        config.integer("queued.max.request.bytes"),
        max_wait_seconds=config.integer("queued.max.request.wait.ms") / 1000.0,
        max_waiters=max(io_threads // 2, 1),
    )
