"""A named daemon thread that runs one function on a fixed interval until stopped."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

logger = logging.getLogger(__name__)


class PeriodicTask:
    """Calls ``action`` every ``interval_seconds`` on its own daemon thread.

    A failing call is logged with its traceback and the schedule goes on. ``stop`` wakes the
    thread at once and waits for a running call to finish. Thread-safe.
    """

    def __init__(self, name: str, interval_seconds: float, action: Callable[[], object]) -> None:
        self._name = name
        self._interval_seconds = interval_seconds
        self._action = action
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_seconds: float = 10.0) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout_seconds)

    def _run(self) -> None:
        while not self._stopping.wait(self._interval_seconds):
            try:
                self._action()
            except Exception:
                logger.exception("periodic task %s failed; it runs again in %.1f s", self._name, self._interval_seconds)
