"""Django's PostgreSQL backend, reading ``timestamptz`` values with psycopg's own loader when both
ends are in UTC (``ENGINE = "webapp.common.postgresql"``; ``webapp.settings`` picks it for any
PostgreSQL URL).

Django 5 registers its own ``timestamptz`` loader on every connection, a Python subclass of
psycopg's pure-Python loader that parses the text and then replaces the zone with the
connection's. That is about 30 us per value; psycopg's default loader (C, with psycopg[binary])
takes about 1.4 us. A page of 50 provisioning jobs holds 250 such values, so Django's loader was
the largest single cost of ``GET /api/v1/jobs`` (issue 19 goal 6).

When Django's zone for the database is UTC and the session's ``TimeZone`` is UTC (Django sets it
so when it connects), psycopg's loader returns exactly what Django's does: an aware datetime
with ``datetime.timezone.utc``. Each cursor then gets psycopg's loader back. In any other zone
the cursor keeps Django's loader, so values stay as Django defines them.
"""

from __future__ import annotations

import datetime
from typing import Any

import psycopg
from django.db.backends.postgresql import base
from psycopg.pq import Format

# psycopg's default text loader of timestamptz: its C implementation when one is installed.
TIMESTAMPTZ_OID = psycopg.adapters.types["timestamptz"].oid
DEFAULT_TIMESTAMPTZ_LOADER = psycopg.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT)


class DatabaseWrapper(base.DatabaseWrapper):
    """See the module docstring."""

    def create_cursor(self, name: str | None = None) -> Any:
        cursor = super().create_cursor(name)
        if self.timezone is datetime.UTC and self.connection.info.timezone is datetime.UTC:
            cursor.adapters.register_loader(TIMESTAMPTZ_OID, DEFAULT_TIMESTAMPTZ_LOADER)
        return cursor
