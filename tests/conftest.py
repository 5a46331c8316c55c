"""Shared fixtures: real broker processes on random loopback ports; the control plane's
test database (PostgreSQL when it answers on 127.0.0.1:5432, as in CI; SQLite otherwise)."""

from __future__ import annotations

import os
import socket
import sys
import tempfile


def _postgres_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=0.5):
            return True
    except OSError:
        return False


# Settings are read when pytest-django configures Django, after this module is imported.
os.environ.setdefault("WEIR_DATA_DIR", tempfile.mkdtemp(prefix="weir-test-data-"))
if "DATABASE_URL" not in os.environ:
    if _postgres_answers():
        os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/test"
    else:
        print("weir tests: no PostgreSQL on 127.0.0.1:5432; the control plane tests run on SQLite", file=sys.stderr)

from pathlib import Path
from typing import Iterator

import pytest

from tests.support.processes import BrokerProcess


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A running standalone broker with its own data directory; stopped after the test."""
    process = BrokerProcess(tmp_path / "broker-data").start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator:
    """Start brokers with custom configs: ``broker_factory(configs={...})``; all stopped after the test."""
    started: list[BrokerProcess] = []

    def start(**options: object) -> BrokerProcess:
        process = BrokerProcess(tmp_path / f"broker-data-{len(started)}", **options)  # type: ignore[arg-type]
        started.append(process)
        return process.start()

    yield start
    for process in started:
        process.stop()
