"""One type checker for the SDK and the brokers, run by the suite: ``mypy`` with pyproject.toml's
[tool.mypy] (``files = ["weir", "broker_nodes"]``) finds no error. Its settings make every
``# type: ignore[code]`` checked too: an ignore that no longer hides an error is itself an error.

Run it by hand with ``.venv/bin/mypy`` from the repository root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parents[1]
MYPY = Path(sys.executable).parent / "mypy"
# A full check takes seconds; this bounds a wedged run.
TIMEOUT_SECONDS = 300


def test_mypy_finds_no_error() -> None:
    assert MYPY.exists(), "mypy is not installed: make install"
    # No cache is read (--no-incremental) or written (--cache-dir to the null device): nothing lands
    # in the repository, and no stale cache can hide an error.
    result = subprocess.run(
        [str(MYPY), "--no-incremental", "--cache-dir", os.devnull],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
    )
    assert result.returncode == 0, result.stdout + result.stderr
