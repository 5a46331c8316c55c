"""Who may import whom (docs/architecture.md) is checked, not only written down: every contract in
.importlinter holds, and a broken one fails the suite with import-linter's report of the chain."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parents[1]
CONFIG = REPOSITORY_ROOT / ".importlinter"
# Building the import graph of every package takes about two seconds; this bounds a wedged run.
TIMEOUT_SECONDS = 120


def test_every_import_contract_is_kept() -> None:
    executable = Path(sys.executable).parent / "lint-imports"
    assert executable.exists(), "import-linter is not installed: pip install -e '.[dev]'"
    # --no-cache: nothing is written into the repository; run from the root so that its packages import.
    result = subprocess.run(
        [str(executable), "--no-cache", "--no-logo", str(CONFIG)], cwd=REPOSITORY_ROOT, capture_output=True, text=True, timeout=TIMEOUT_SECONDS
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
