"""``webapp.common.postgresql``: timestamptz values read with psycopg's own loader in UTC, exactly
as Django's loader gives them, and Django's loader kept in any other zone."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from zoneinfo import ZoneInfo

import pytest
from django.db import connection, connections
from psycopg.pq import Format

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the PostgreSQL backend only"),
]

VALUE_SQL = "SELECT '2024-01-02 03:04:05.123456+02'::timestamptz, NULL::timestamptz"


def _timestamptz_loader(cursor: object) -> object:
    from webapp.common.postgresql.base import TIMESTAMPTZ_OID

    return cursor.cursor.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT)  # type: ignore[attr-defined]


@pytest.fixture
def paris_connection() -> Iterator[None]:
    """The connection with Django's database zone set to Europe/Paris for one test."""
    wrapper = connections["default"]  # not the proxy ``connection``: its own attributes
    wrapper.ensure_connection()
    wrapper.__dict__["timezone"] = ZoneInfo("Europe/Paris")
    try:
        yield
    finally:
        del wrapper.__dict__["timezone"]


def test_settings_pick_the_backend_for_postgresql() -> None:
    from webapp.common.postgresql.base import DatabaseWrapper

    assert isinstance(connections["default"], DatabaseWrapper)


def test_utc_cursor_reads_timestamptz_with_psycopgs_loader() -> None:
    from webapp.common.postgresql.base import DEFAULT_TIMESTAMPTZ_LOADER

    with connection.cursor() as cursor:
        assert _timestamptz_loader(cursor) is DEFAULT_TIMESTAMPTZ_LOADER
        cursor.execute(VALUE_SQL)
        value, missing = cursor.fetchone()
    assert value == datetime.datetime(2024, 1, 2, 1, 4, 5, 123456, tzinfo=datetime.UTC)
    assert value.tzinfo is datetime.UTC  # what Django's own loader gives in UTC
    assert missing is None


def test_model_datetimes_are_aware_utc() -> None:
    from webapp.accounts.models import Tenant

    Tenant.objects.create(name="Clock", slug="clock")
    created_at = Tenant.objects.values_list("created_at", flat=True).get(slug="clock")
    assert created_at.tzinfo is datetime.UTC


def test_cursor_outside_utc_keeps_djangos_loader(paris_connection: None) -> None:
    from webapp.common.postgresql.base import DEFAULT_TIMESTAMPTZ_LOADER

    with connection.cursor() as cursor:
        assert _timestamptz_loader(cursor) is not DEFAULT_TIMESTAMPTZ_LOADER
        cursor.execute(VALUE_SQL)
        value, _ = cursor.fetchone()
    # Django's loader labels the session's (UTC) wall time with its own zone.
    assert value == datetime.datetime(2024, 1, 2, 1, 4, 5, 123456, tzinfo=ZoneInfo("Europe/Paris"))
