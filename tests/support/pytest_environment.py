"""The test environment, set before Django reads its settings (see tests/settings.py): a temporary WEIR_DATA_DIR, and PostgreSQL when it answers on
127.0.0.1:5432 (as in CI), SQLite otherwise (said once, on stderr)."""

from __future__ import annotations

import os
import socket
import sys
import tempfile

POSTGRES_TEST_URL = "postgres://postgres@127.0.0.1:5432/test"


def _postgres_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=0.5):
            return True
    except OSError:
        return False


def configure_environment() -> None:
    """Set WEIR_DATA_DIR and DATABASE_URL unless the caller already did."""
    os.environ.setdefault("WEIR_DATA_DIR", tempfile.mkdtemp(prefix="weir-test-data-"))
    if "DATABASE_URL" not in os.environ:
        if _postgres_answers():
            os.environ["DATABASE_URL"] = POSTGRES_TEST_URL
        else:
            print("weir tests: no PostgreSQL on 127.0.0.1:5432; the control plane tests run on SQLite", file=sys.stderr)
