"""``python manage.py run_controller --listen HOST:PORT``: the gRPC Controller service.

Waits as a standby until it holds the controller lock (``webapp.controller.leadership``),
takes the next controller epoch (``webapp.controller.epoch``), then serves brokers'
registrations, heartbeats, ISR changes and controlled shutdowns. Every second it checks broker
sessions and that its epoch is still the current one; every
WEIR_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS it runs the preferred-leader election
(``webapp.controller.rebalance``). SIGTERM or SIGINT stops it and releases the lock.

When a newer controller epoch exists (this controller lost its lock without noticing, e.g.
with its database connection), it steps down: it stops serving, releases the lock and exits
with status 1, and its supervisor restarts it as a standby.

With ``--tls-cert`` and ``--tls-key`` the Controller service speaks TLS only; brokers then
verify it against their ``--tls-ca``.

The port listens from the start, standby included: gRPC health says SERVING for "" while the
process runs and SERVING for "weir.v1.Controller" only while it is the active controller; a
standby answers Controller calls with NOT_CONTROLLER, so brokers move on to the next address.
``--metrics-port`` (default: environment WEIR_CONTROLLER_METRICS_PORT, 0 = off) serves
Prometheus metrics (``webapp.controller.metrics``) on the listen host.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections

from server_runtime.stop_signals import StopSignals
from webapp.controller.epoch import ControllerFencedError, become_active
from webapp.controller.leadership import ControllerLock
from webapp.controller.metrics import MetricsEndpoint
from webapp.controller.rebalance import RebalanceConfig, RebalanceConfigError, RebalanceSchedule
from webapp.controller.service import ControllerService, disconnect_grace_ms, session_timeout_ms
from webapp.controller.servicer import ControllerServer, start_controller_server

logger = logging.getLogger(__name__)

SESSION_CHECK_INTERVAL_SECONDS = 1.0  # how often expired broker sessions and the controller epoch are checked
STANDBY_POLL_SECONDS = 1.0  # how often a standby tries to take the lock
SHUTDOWN_GRACE_SECONDS = 5.0  # in-flight calls get this long to finish


class Command(BaseCommand):
    help = "Run the cluster controller (gRPC Controller service); one instance is active at a time."

    def add_arguments(self, parser) -> None:  # type: ignore[no-untyped-def]
        parser.add_argument("--listen", required=True, help="HOST:PORT to serve the Controller service on")
        parser.add_argument("--tls-cert", default=None, help="PEM certificate chain: serve TLS only (needs --tls-key)")
        parser.add_argument("--tls-key", default=None, help="PEM private key of --tls-cert")
        parser.add_argument(
            "--metrics-port",
            type=int,
            default=None,
            help="serve Prometheus /metrics on this port of the listen host (default: WEIR_CONTROLLER_METRICS_PORT; 0: off)",
        )

    def handle(self, *args: object, **options: object) -> None:
        try:
            rebalance = RebalanceConfig.from_settings()
        except RebalanceConfigError as error:
            raise CommandError(str(error)) from None
        tls = self._tls_files(options.get("tls_cert"), options.get("tls_key"))
        listen = str(options["listen"])
        metrics_port = self._metrics_port(options.get("metrics_port"))
        stopping = threading.Event()
        # Not stopping.set() in the handler itself: see server_runtime.stop_signals.
        StopSignals(on_first=lambda _number: stopping.set(), on_again=lambda _number: None).install()
        try:
            endpoint = MetricsEndpoint(listen.rpartition(":")[0].strip("[]"), metrics_port) if metrics_port else None
        except OSError as error:
            raise CommandError(f"cannot serve metrics on port {metrics_port}: {error.strerror or error}") from None
        service: ControllerService | None = None
        try:
            server = start_controller_server(listen, tls=tls)
            try:
                logger.info("controller listening on port %d as a standby, waiting for the controller lock", server.port)
                lock = ControllerLock()
                if not lock.acquire(poll_seconds=STANDBY_POLL_SECONDS, should_stop=stopping.is_set):
                    return
                try:
                    service = self._serve_while_active(server, rebalance, stopping)
                finally:
                    if service is not None:
                        service.stop()
                    lock.release()
            finally:
                server.stop(SHUTDOWN_GRACE_SECONDS)
        finally:
            if endpoint is not None:
                endpoint.close()
        if service is not None and service.fenced:
            logger.error(
                "controller at epoch %d stepped down: a newer controller is active; exiting so that a supervisor restarts it as a standby",
                service.controller_epoch,
            )
            raise CommandError(f"controller epoch {service.controller_epoch} was superseded by a newer controller")
        logger.info("controller stopped")

    def _serve_while_active(self, server: ControllerServer, rebalance: RebalanceConfig, stopping: threading.Event) -> ControllerService:
        """Become the active controller (the lock is held) and serve until stopped or fenced, then
        stop the server; returns the service."""
        controller_epoch = become_active()
        service = ControllerService(session_timeout_ms=session_timeout_ms(), controller_epoch=controller_epoch, disconnect_grace_ms=disconnect_grace_ms())
        try:
            adopted = service.adopt_online_brokers()
            service.ensure_internal_topics()  # before serving: brokers may already be registered
            server.activate(service)
            logger.info(
                "controller active on port %d at controller epoch %d; %d brokers adopted from the database", server.port, controller_epoch, len(adopted)
            )
            checker = threading.Thread(target=self._check_periodically, args=(service, rebalance, stopping), name="controller-checks", daemon=True)
            checker.start()
            while not stopping.wait(SESSION_CHECK_INTERVAL_SECONDS) and not service.fenced:
                pass
            # Running calls finish before the lock is released; the process exits after this.
            server.stop(SHUTDOWN_GRACE_SECONDS)
            stopping.set()
            checker.join(SHUTDOWN_GRACE_SECONDS)
        except BaseException:
            service.stop()
            raise
        return service

    @staticmethod
    def _metrics_port(option: object) -> int:
        """--metrics-port, else WEIR_CONTROLLER_METRICS_PORT, else 0 (off); CommandError for a bad value."""
        raw = str(option) if option is not None else os.environ.get("WEIR_CONTROLLER_METRICS_PORT", "0")
        if not raw.strip().isdigit() or int(raw) > 65535:
            raise CommandError(f"the metrics port must be a number from 0 to 65535, not {raw!r}")
        return int(raw)

    @staticmethod
    def _tls_files(certificate: object, private_key: object) -> tuple[Path, Path] | None:
        """(certificate, key) to serve TLS with, None for plaintext; checked before waiting for the lock."""
        if certificate is None and private_key is None:
            return None
        if certificate is None or private_key is None:
            raise CommandError("--tls-cert and --tls-key go together: give the certificate and its private key, or neither")
        files = (Path(str(certificate)), Path(str(private_key)))
        for path in files:
            if not path.is_file():
                raise CommandError(f"TLS: {path} is not a readable file")
        return files

    @staticmethod
    def _check_periodically(service: ControllerService, rebalance: RebalanceConfig, stopping: threading.Event) -> None:
        """Sessions and the controller epoch every second; the preferred-leader election when due."""
        schedule = RebalanceSchedule(rebalance, time.monotonic)
        while not stopping.wait(SESSION_CHECK_INTERVAL_SECONDS):
            try:
                service.check_still_active()
                service.check_sessions()
                if schedule.due():
                    moves = service.elect_preferred_leaders(imbalance_percentage=rebalance.imbalance_percentage)
                    if moves:
                        logger.info("leader rebalance: %d partitions back on their preferred leader", len(moves))
            except ControllerFencedError:
                return  # the main thread sees service.fenced and steps down
            except Exception:
                logger.exception("controller check failed; trying again in %.0f s", SESSION_CHECK_INTERVAL_SECONDS)
            finally:
                # This thread's connection must not outlive a database restart.
                close_old_connections()
