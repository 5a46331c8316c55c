"""Shared fixtures: real broker processes on random loopback ports. The test database and
data directory are chosen in ``tests/support/pytest_environment.py`` (loaded with ``-p``)."""

from __future__ import annotations

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
