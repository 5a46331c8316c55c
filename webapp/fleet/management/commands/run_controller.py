"""``python manage.py run_controller --listen HOST:PORT``: the gRPC Controller service.

Waits as a standby until it holds the controller lock (``webapp.fleet.controller.leadership``),
then serves brokers' registrations, heartbeats and ISR changes, and checks sessions every
second. SIGTERM or SIGINT stops it and releases the lock.
"""

from __future__ import annotations

import logging
import signal
import threading

from django.core.management.base import BaseCommand
from django.db import close_old_connections

from webapp.fleet.controller.leadership import ControllerLock
from webapp.fleet.controller.servicer import create_controller_server
from webapp.fleet.controller.service import ControllerService, session_timeout_ms

logger = logging.getLogger(__name__)

SESSION_CHECK_INTERVAL_SECONDS = 1.0  # how often expired broker sessions are looked for
STANDBY_POLL_SECONDS = 1.0  # how often a standby tries to take the lock
SHUTDOWN_GRACE_SECONDS = 5.0  # in-flight calls get this long to finish


class Command(BaseCommand):
    help = "Run the cluster controller (gRPC Controller service); one instance is active at a time."

    def add_arguments(self, parser) -> None:  # type: ignore[no-untyped-def]
        parser.add_argument("--listen", required=True, help="HOST:PORT to serve the Controller service on")

    def handle(self, *args: object, **options: object) -> None:
        stopping = threading.Event()
        for signal_number in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signal_number, lambda _number, _frame: stopping.set())
        lock = ControllerLock()
        logger.info("controller waiting for the controller lock")
        if not lock.acquire(poll_seconds=STANDBY_POLL_SECONDS, should_stop=stopping.is_set):
            return
        try:
            service = ControllerService(session_timeout_ms=session_timeout_ms())
            adopted = service.adopt_online_brokers()
            server, port = create_controller_server(service, str(options["listen"]))
            logger.info("controller active on port %d; %d brokers adopted from the database", port, len(adopted))
            checker = threading.Thread(target=self._check_sessions, args=(service, stopping), name="session-check", daemon=True)
            checker.start()
            while not stopping.wait(SESSION_CHECK_INTERVAL_SECONDS):
                pass
            server.stop(SHUTDOWN_GRACE_SECONDS).wait()
            checker.join(SHUTDOWN_GRACE_SECONDS)
        finally:
            lock.release()
        logger.info("controller stopped")

    @staticmethod
    def _check_sessions(service: ControllerService, stopping: threading.Event) -> None:
        while not stopping.wait(SESSION_CHECK_INTERVAL_SECONDS):
            try:
                service.check_sessions()
            except Exception:
                logger.exception("session check failed; trying again in %.0f s", SESSION_CHECK_INTERVAL_SECONDS)
            finally:
                # This thread's connection must not outlive a database restart.
                close_old_connections()
