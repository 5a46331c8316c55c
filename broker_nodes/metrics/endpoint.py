"""One broker's metrics registry and its HTTP endpoint (``GET /metrics`` on ``metrics.port``).

``BrokerMetrics`` is made before the gRPC server (its interceptor counts the calls) and the
endpoint starts listening at once, so that a broker still recovering its logs can already be
scraped (``weir_broker_ready`` 0). Port 0 in the config means no endpoint; the registry still
exists, so tests read it with :meth:`BrokerMetrics.exposition` without a port.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, disable_created_metrics, generate_latest, start_http_server

from broker_nodes.metrics.requests import MetricsInterceptor, RequestMetrics
from broker_nodes.metrics.state import BrokerStateCollector
from broker_nodes.server.broker import Broker

logger = logging.getLogger(__name__)

# No ``*_created`` series beside every counter and histogram: they double the series and no
# rule or dashboard reads them (a process-wide switch of prometheus_client).
disable_created_metrics()


class MetricsEndpointError(OSError):
    """The metrics port cannot be listened on (taken, or not allowed); the broker does not start."""

    retriable = False

    def __init__(self, host: str, port: int, reason: str) -> None:
        super().__init__(f"cannot serve metrics on {host}:{port} (metrics.port): {reason}")
        self.host = host
        self.port = port


class BrokerMetrics:
    """The registry of one broker: request metrics (the interceptor) and its state collector."""

    def __init__(self, broker: Broker, *, ready: Callable[[], bool]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = RequestMetrics(self.registry)
        self.interceptor = MetricsInterceptor(self.requests)
        self.registry.register(BrokerStateCollector(broker, ready=ready))
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    def exposition(self) -> bytes:
        """Everything, in the Prometheus text format (what ``GET /metrics`` answers)."""
        return generate_latest(self.registry)

    def serve(self, host: str, port: int) -> int:
        """Listen for scrapes on ``host:port`` (0: any free port) in a daemon thread; the bound port.

        Raises MetricsEndpointError when the port cannot be bound.
        """
        try:
            self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)
        except OSError as error:
            raise MetricsEndpointError(host, port, error.strerror or str(error)) from None
        self.port = int(self._server.server_port)
        logger.info("metrics served at http://%s:%d/metrics", host, self.port)
        return self.port

    def close(self) -> None:
        """Stop the endpoint (idempotent)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None
