"""The Django project frame loads and passes Django's system checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]


def test_manage_py_check_passes(tmp_path: Path) -> None:
    environment = {**os.environ, "WEIR_DATA_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=REPOSITORY_ROOT, env=environment, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout
