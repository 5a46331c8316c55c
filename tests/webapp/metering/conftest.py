"""Fixtures of the metering tests: the REST API tests' tenants (made by the real sign-up
action) and small job scripts standing in for the Spark jobs in launcher tests."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.webapp.api.conftest import acme, fast_password_hashing, globex, tenant_factory  # noqa: F401  (fixtures)


@pytest.fixture
def job_script(tmp_path: Path) -> Callable[[str], list[str]]:
    """``job_script(body)``: the command running ``body`` as a Python script (a stand-in job)."""

    def make(body: str) -> list[str]:
        path = tmp_path / f"job_{len(list(tmp_path.glob('job_*.py')))}.py"
        path.write_text(body)
        return [sys.executable, str(path)]

    return make
