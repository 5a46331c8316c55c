"""Readiness of the web process: can it reach what a request needs?

Two dependencies: the database (every page and API call) and the Celery broker (every
change queues a provisioning job): Redis, or kombu's filesystem transport in embedded mode,
whose queue directory must exist and be writable. Each check returns None when the
dependency answers, else one line saying what failed; :func:`failed_checks` runs both.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.db import connection

BROKER_TIMEOUT_SECONDS = 2.0  # a probe must answer well within a load balancer's probe timeout


def check_database() -> str | None:
    """None when ``SELECT 1`` answers on the default database."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:  # noqa: BLE001 - any failure means not ready; the message says which
        return f"{type(error).__name__}: {error}".strip()
    return None


def check_celery_broker() -> str | None:
    """None when the Celery broker accepts a connection (filesystem transport: its queue directory is writable)."""
    url = str(settings.CELERY_BROKER_URL)
    if url.startswith("filesystem://"):
        options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}) or {}
        for key in ("data_folder_in", "data_folder_out"):
            folder = Path(str(options.get(key, "")))
            if not folder.is_dir() or not os.access(folder, os.W_OK):
                return f"filesystem transport: {key} {folder} is not a writable directory"
        return None
    from webapp.celery import app

    try:
        with app.connection_for_write(connect_timeout=BROKER_TIMEOUT_SECONDS) as broker:
            broker.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=BROKER_TIMEOUT_SECONDS)
    except Exception as error:  # noqa: BLE001 - any failure means not ready; the message says which
        return f"{type(error).__name__}: {error}".strip()
    return None


def failed_checks() -> dict[str, str]:
    """Dependency name (``database``, ``celery_broker``) -> what failed; empty when ready."""
    results = {"database": check_database(), "celery_broker": check_celery_broker()}
    return {name: problem for name, problem in results.items() if problem is not None}
