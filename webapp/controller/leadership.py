"""One active controller at a time, held by a database-wide lock.

PostgreSQL: a session-level advisory lock (``pg_try_advisory_lock``) on the connection of the
thread that took it; it is released when that connection ends, so a controller that dies
hands over to a standby at once. SQLite (one machine): an exclusive ``flock`` on a file under
``WEIR_DATA_DIR``, released by the kernel when the process dies.

Not thread-safe: take and hold the lock from one thread (the command's main thread), whose
database connection must stay open for as long as the lock is held.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import connection

# Advisory lock key of the controller role: "weirctl" read as a big-endian integer.
CONTROLLER_LOCK_KEY = int.from_bytes(b"weirctl", "big")
LOCK_FILE_NAME = "controller.lock"  # under WEIR_DATA_DIR, for SQLite deployments


class ControllerLock:
    """The controller role; :meth:`acquire` waits until it is ours (or ``should_stop`` says so)."""

    def __init__(self) -> None:
        self._file: int | None = None
        self.held = False

    def try_acquire(self) -> bool:
        """Take the role if nobody holds it; True when it is ours."""
        if self.held:
            return True
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_lock(%s)", [CONTROLLER_LOCK_KEY])
                self.held = bool(cursor.fetchone()[0])
            return self.held
        path = Path(settings.DATA_DIR) / LOCK_FILE_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            return False
        self._file = descriptor
        self.held = True
        return True

    def acquire(self, *, poll_seconds: float, should_stop: Callable[[], bool]) -> bool:
        """Wait as a standby until the role is ours; False when ``should_stop`` ended the wait."""
        while not should_stop():
            if self.try_acquire():
                return True
            time.sleep(poll_seconds)
        return False

    def release(self) -> None:
        if not self.held:
            return
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            os.close(self._file)
            self._file = None
        else:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [CONTROLLER_LOCK_KEY])
        self.held = False
