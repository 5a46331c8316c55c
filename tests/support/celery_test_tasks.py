"""Tasks that only the tests' Celery worker processes load, on the real application:
``python -m celery -A webapp worker -I tests.support.celery_test_tasks ...``.

They touch marker files in a directory the test names, so that the test can tell from the
outside that a task started and that it ran to its end.
"""

from __future__ import annotations

import time
from pathlib import Path

from webapp.celery import app

SLEEP_THEN_MARK = "tests.support.celery_test_tasks.sleep_then_mark"
MARK = "tests.support.celery_test_tasks.mark"


@app.task(name=SLEEP_THEN_MARK)
def sleep_then_mark(directory: str, name: str, seconds: float) -> str:
    """Touch ``<name>.started``, sleep ``seconds``, touch ``<name>.finished``."""
    Path(directory, f"{name}.started").touch()
    time.sleep(seconds)
    Path(directory, f"{name}.finished").touch()
    return name


@app.task(name=MARK)
def mark(directory: str, name: str) -> str:
    """Touch ``<name>.finished`` at once."""
    Path(directory, f"{name}.finished").touch()
    return name
