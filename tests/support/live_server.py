"""A live Django server over HTTP for one test (pytest-django's ``live_server`` is
session-scoped and would keep its database connection past the test database's teardown)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def running_live_server() -> Iterator[object]:
    """Serve the project on a free loopback port until the block ends. Needs a transactional
    database (the server's threads only see committed data)."""
    from pytest_django.live_server_helper import LiveServer

    server = LiveServer("127.0.0.1:0")
    try:
        yield server
    finally:
        server.stop()
        _end_orphaned_database_sessions()


def _end_orphaned_database_sessions() -> None:
    """The live server's request threads can exit without closing their database connection
    (Django closes it when the client closes its keep-alive socket, which may come after the
    thread is gone); the test database cannot be dropped while such a session lingers."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
