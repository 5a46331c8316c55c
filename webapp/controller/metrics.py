"""The controller's Prometheus metrics, served by ``run_controller --metrics-port`` at ``/metrics``.

Events are counted where they happen, in module-level metrics of one registry of their own
(:data:`REGISTRY`), so that other processes importing the controller's modules (the web
process, tests) never expose ``weir_controller_*`` samples they do not own:

* ``weir_controller_requests_total{method, outcome}``: calls of the Controller service by
  the Kafka error name they were answered with (NO_ERROR, NOT_CONTROLLER,
  STALE_BROKER_EPOCH, FENCED_LEADER_EPOCH...) or the gRPC status of a refused call;
* ``weir_controller_alter_partition_total{outcome}``: leaders' ISR changes: ``stored``,
  ``unchanged`` (already the ISR) or the error name;
* ``weir_controller_partition_changes_total{reason}``: partitions whose leader or ISR the
  controller changed, by why (``broker_registered``, ``broker_fenced``,
  ``controlled_shutdown``, ``preferred_election``, ``alter_partition``);
* ``weir_controller_registrations_total``, ``weir_controller_sessions_expired_total``,
  ``weir_controller_leases_lost_total`` (brokers' lease streams that closed from their end) and
  ``weir_controller_sessions_disconnected_total`` (brokers fenced because theirs closed);
* ``weir_controller_pushes_total{outcome}`` and ``weir_controller_push_duration_seconds``:
  cluster maps pushed to brokers.

State is read at scrape time (:class:`ControllerStateCollector`): whether this process is the
active controller and its epoch, live broker sessions, and, only on the active controller
(a standby's view of the catalog would double-count), the partitions without a leader.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Protocol
from wsgiref.simple_server import WSGIServer

import grpc
from django.db import close_old_connections
from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

# No ``*_created`` series beside counters and histograms: they double the series for nothing read.
disable_created_metrics()
REGISTRY = CollectorRegistry(auto_describe=True)

REQUESTS = Counter(
    "weir_controller_requests", "Controller service calls by method and the error name (or gRPC status) answered.", ["method", "outcome"], registry=REGISTRY
)
ALTER_PARTITIONS = Counter("weir_controller_alter_partition", "AlterPartition requests (leaders' ISR changes) by outcome.", ["outcome"], registry=REGISTRY)
PARTITION_CHANGES = Counter(
    "weir_controller_partition_changes", "Partitions whose leader or ISR the controller changed, by reason.", ["reason"], registry=REGISTRY
)
REGISTRATIONS = Counter("weir_controller_registrations", "Broker registrations accepted (new sessions).", registry=REGISTRY)
SESSIONS_EXPIRED = Counter("weir_controller_sessions_expired", "Broker sessions expired without a heartbeat (brokers fenced).", registry=REGISTRY)
LEASES_LOST = Counter("weir_controller_leases_lost", "Broker lease streams that closed from the broker's end.", registry=REGISTRY)
SESSIONS_DISCONNECTED = Counter(
    "weir_controller_sessions_disconnected",
    "Broker sessions ended because the lease closed and the broker's address refused (brokers fenced).",
    registry=REGISTRY,
)
PUSHES = Counter("weir_controller_pushes", "Cluster-map pushes to brokers by outcome (ok, failed).", ["outcome"], registry=REGISTRY)
PUSH_DURATION = Histogram(
    "weir_controller_push_duration_seconds",
    "Time of one cluster-map push to one broker.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
    registry=REGISTRY,
)


class ActiveController(Protocol):
    """What the collector reads of the active controller (``ControllerService``)."""

    controller_epoch: int

    def live_broker_count(self) -> int: ...


def offline_partition_count() -> int:
    """Partitions of the catalog without a leader (every replica down, or none eligible)."""
    from webapp.catalog.facade import Partition

    try:
        return Partition.objects.filter(leader=-1).count()
    finally:
        close_old_connections()


class ControllerStateCollector(Collector):
    """Scrape-time gauges; ``active()`` is the service while this process is the active controller, else None."""

    def __init__(self, active: Callable[[], ActiveController | None], *, offline_partitions: Callable[[], int] = offline_partition_count) -> None:
        self._active = active
        self._offline_partitions = offline_partitions

    def collect(self) -> Iterator[GaugeMetricFamily]:
        service = self._active()
        yield GaugeMetricFamily("weir_controller_active", "1 while this process is the active controller, 0 as a standby.", value=int(service is not None))
        if service is None:
            return
        yield GaugeMetricFamily("weir_controller_epoch", "The controller epoch this controller won.", value=service.controller_epoch)
        yield GaugeMetricFamily("weir_controller_broker_sessions", "Brokers with a live session.", value=service.live_broker_count())
        try:
            offline = self._offline_partitions()
        except Exception:  # noqa: BLE001 - a scrape must answer even while the database is away
            logger.warning("metrics: cannot count offline partitions", exc_info=True)
            return
        yield GaugeMetricFamily("weir_controller_offline_partitions", "Partitions without a leader in the catalog.", value=offline)


class MetricsEndpoint:
    """``GET /metrics`` of :data:`REGISTRY` on ``host:port`` in a daemon thread."""

    def __init__(self, host: str, port: int) -> None:
        self._server: WSGIServer
        self._server, self._thread = start_http_server(port, addr=host, registry=REGISTRY)
        self.port = int(self._server.server_port)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)


class ActiveServiceSlot:
    """The service the collector reports on: set while active, cleared when stepping down. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._service: ActiveController | None = None

    def set(self, service: ActiveController | None) -> None:
        with self._lock:
            self._service = service

    def get(self) -> ActiveController | None:
        with self._lock:
            return self._service


ACTIVE = ActiveServiceSlot()  # run_controller sets the service while this process is active
REGISTRY.register(ControllerStateCollector(ACTIVE.get))


def call_outcome(response: object) -> str:
    """The error name a Controller response answered with; forwarded topic requests answer per
    entry, and count as NOT_CONTROLLER when any entry was refused as such."""
    from weir.errors import ErrorCode, error_name

    code = getattr(response, "error_code", None)
    if code is None:
        entries = [*getattr(response, "topics", ()), *getattr(response, "resources", ())]
        code = ErrorCode.NOT_CONTROLLER if any(entry.error_code == ErrorCode.NOT_CONTROLLER for entry in entries) else ErrorCode.NO_ERROR
    return error_name(code) if code else "NO_ERROR"


class RequestCounter(grpc.ServerInterceptor):
    """Counts the Controller service's calls by method and outcome (health checks are not counted)."""

    SERVICE_PREFIX = "/weir.v1.Controller/"

    def intercept_service(self, continuation, handler_call_details):  # type: ignore[no-untyped-def]
        handler = continuation(handler_call_details)
        full_method = handler_call_details.method
        if handler is None or handler.unary_unary is None or not full_method.startswith(self.SERVICE_PREFIX):
            return handler
        method = full_method[len(self.SERVICE_PREFIX) :]
        inner = handler.unary_unary

        def counted(request: object, context: grpc.ServicerContext) -> object:
            try:
                response = inner(request, context)
            except Exception:
                code = context.code()  # type: ignore[attr-defined]
                REQUESTS.labels(method, code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN").inc()
                raise
            REQUESTS.labels(method, call_outcome(response)).inc()
            return response

        return grpc.unary_unary_rpc_method_handler(counted, request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer)
