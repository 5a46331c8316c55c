"""The test environment, set before Django reads its settings (see tests/settings.py): a temporary WEIR_DATA_DIR, and PostgreSQL when it answers on
127.0.0.1:5432 (as in CI), SQLite otherwise (said once, on stderr).

Under pytest-xdist every worker inherits the controller's environment, so each worker moves to a
directory of its own beneath the controller's WEIR_DATA_DIR: the Celery queue (named after the data
directory), the secrets and the controller lock file are then never shared between workers. The
worker's PostgreSQL test database is its own too (tests/settings.py names it by process id, and
pytest-django adds the worker id to it)."""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from pathlib import Path

POSTGRES_TEST_URL = "postgres://postgres@127.0.0.1:5432/test"


def _postgres_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=0.5):
            return True
    except OSError:
        return False


def _worker_data_dir(data_dir: str, worker: str) -> str:
    """``data_dir/worker-<id>`` (created), or ``data_dir`` when it is that worker's already (idempotent)."""
    path = Path(data_dir)
    name = f"worker-{worker}"
    if path.name == name:
        return data_dir
    (path / name).mkdir(parents=True, exist_ok=True)
    return str(path / name)


def configure_environment() -> None:
    """Set WEIR_DATA_DIR (per xdist worker) and DATABASE_URL unless the caller already did."""
    os.environ.setdefault("WEIR_DATA_DIR", tempfile.mkdtemp(prefix="weir-test-data-"))
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        os.environ["WEIR_DATA_DIR"] = _worker_data_dir(os.environ["WEIR_DATA_DIR"], worker)
    if "DATABASE_URL" not in os.environ:
        if _postgres_answers():
            os.environ["DATABASE_URL"] = POSTGRES_TEST_URL
        else:
            print("weir tests: no PostgreSQL on 127.0.0.1:5432; the control plane tests run on SQLite", file=sys.stderr)
