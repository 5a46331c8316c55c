#!/usr/bin/env python
"""Django's command-line utility for the Weir control plane."""

import os
import sys
from pathlib import Path

# The virtualenv `make` creates beside this file.
VENV_PYTHON = Path(__file__).resolve().parent / ".venv" / "bin" / "python"


def use_the_virtualenv() -> None:
    """Run again under the repository's virtualenv when started by another Python (``python
    manage.py ...`` without activating it): every command, and what it spawns with
    ``sys.executable`` (a pipeline job, a Spark driver), then has the project's libraries."""
    if not VENV_PYTHON.exists() or Path(sys.prefix).resolve() == VENV_PYTHON.parent.parent.resolve():
        return
    os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), *sys.argv])


def main() -> None:
    use_the_virtualenv()
    # The control plane's files (database, queue, secrets) are its owner's only (server_runtime.private_files).
    from server_runtime.private_files import make_new_files_private

    make_new_files_private()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
