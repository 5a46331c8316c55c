"""One linter and one formatter for the whole repository, checked by the suite: ``ruff check`` (the
rules in pyproject.toml's [tool.ruff.lint]) and ``ruff format --check`` pass on every commit.

Fix what they report with ``.venv/bin/ruff check --fix .`` and ``.venv/bin/ruff format .``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parents[1]
RUFF = Path(sys.executable).parent / "ruff"
# ruff reads the whole tree in about a second; this bounds a wedged run.
TIMEOUT_SECONDS = 120


def _ruff(*arguments: str) -> subprocess.CompletedProcess[str]:
    assert RUFF.exists(), "ruff is not installed: make install"
    # --no-cache: nothing is written into the repository.
    return subprocess.run([str(RUFF), *arguments, "--no-cache", "."], cwd=REPOSITORY_ROOT, capture_output=True, text=True, timeout=TIMEOUT_SECONDS)


def test_ruff_finds_nothing() -> None:
    result = _ruff("check", "--output-format", "concise")
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_file_is_formatted() -> None:
    result = _ruff("format", "--check")
    assert result.returncode == 0, "run .venv/bin/ruff format .\n" + result.stdout + result.stderr
