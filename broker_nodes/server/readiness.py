"""What a broker's gRPC health service reports for "" and "weir.v1.Broker": whether it is ready.

NOT_SERVING from the moment the server listens until the logs are recovered (``Broker.start``)
and, for a broker started with a controller, until its first registration with the
controller has been answered: before that it holds a cluster map that may be stale (it may
have been fenced while it was down), and placement does not count it yet. Then SERVING. A
later loss of the controller session does not make it NOT_SERVING again: the broker keeps
serving its partitions through a controller failover, and taking every broker out of a load
balancer because the controller is briefly away would turn a control-plane hiccup into an
outage. NOT_SERVING again, for good, as soon as a controlled shutdown starts.

Thread-safety: one lock orders the registration watcher's SERVING against ``stop``'s
NOT_SERVING, so that a stopping broker never reports SERVING again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from grpc_health.v1 import health, health_pb2

logger = logging.getLogger(__name__)

REGISTRATION_POLL_SECONDS = 0.2  # how often the watcher checks whether it must give up (stop)


class Readiness:
    """Sets the statuses of ``names`` in ``health_servicer``; starts NOT_SERVING."""

    def __init__(self, health_servicer: health.HealthServicer, names: Sequence[str]) -> None:
        self._health = health_servicer
        self._names = tuple(names)
        self._lock = threading.Lock()
        self._ready = False
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None
        self._set(health_pb2.HealthCheckResponse.NOT_SERVING)

    @property
    def ready(self) -> bool:
        return self._ready

    def _set(self, status: int) -> None:
        for name in self._names:
            self._health.set(name, status)

    def serve(self) -> None:
        """SERVING now (unless the broker is already stopping)."""
        with self._lock:
            if self._stopping.is_set():
                return
            self._ready = True
            self._set(health_pb2.HealthCheckResponse.SERVING)

    def serve_once_registered(self, registered: threading.Event, *, alive: Callable[[], bool] = lambda: True) -> None:
        """SERVING once ``registered`` is set (the controller answered a registration), from a
        watcher thread that gives up when :meth:`stop` is called or ``alive()`` turns False."""
        if registered.is_set():
            self.serve()
            return

        def watch() -> None:
            while not self._stopping.is_set() and alive():
                if registered.wait(REGISTRATION_POLL_SECONDS):
                    self.serve()
                    logger.info("registered with the controller: the broker reports SERVING")
                    return

        logger.info("logs recovered; the broker reports NOT_SERVING until the controller answers its registration")
        self._watcher = threading.Thread(target=watch, name="readiness", daemon=True)
        self._watcher.start()

    def stop(self) -> None:
        """NOT_SERVING for good (a controlled shutdown or stop begins)."""
        with self._lock:
            self._stopping.set()
            self._ready = False
            self._set(health_pb2.HealthCheckResponse.NOT_SERVING)
        if self._watcher is not None:
            self._watcher.join(REGISTRATION_POLL_SECONDS * 5)
