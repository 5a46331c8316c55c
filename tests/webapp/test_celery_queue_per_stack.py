"""Two stacks on one machine share Redis database 0 (REDIS_URL's default) but never each other's
Celery jobs or cache entries: the queue and the cache's key prefix derive from the stack's
resolved data directory (webapp.settings), so two clones each running `make up` with the default
relative ``./.weir-data`` are two queues, and WEIR_CELERY_QUEUE names one explicitly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from unittest.mock import patch

import pytest

from deploy.local import announce_celery_transport
from webapp.runtime import stack_key

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
PRINT_SETTINGS = (
    "import json; from webapp import settings; "
    "print(json.dumps([settings.CELERY_TASK_DEFAULT_QUEUE, settings.CACHES['default']['KEY_PREFIX'], str(settings.DATA_DIR)]))"
)


def stack_settings(working_directory: Path, **environment: str) -> tuple[str, str, str]:
    """(queue, cache key prefix, data directory) of a process started in ``working_directory``."""
    base = {key: value for key, value in os.environ.items() if key not in ("WEIR_DATA_DIR", "WEIR_CELERY_QUEUE")}
    child = {**base, "PYTHONPATH": str(REPOSITORY_ROOT), "DJANGO_SECRET_KEY": "test-only", **environment}
    result = subprocess.run([sys.executable, "-c", PRINT_SETTINGS], cwd=working_directory, env=child, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    queue, prefix, data_dir = json.loads(result.stdout.strip().splitlines()[-1])
    return queue, prefix, data_dir


def test_each_data_directory_gets_its_own_queue_and_cache_prefix(tmp_path: Path) -> None:
    first, second = tmp_path / "clone-1", tmp_path / "clone-2"
    first.mkdir()
    second.mkdir()
    # The default `./.weir-data` of two clones: the same relative path, two directories.
    one = stack_settings(first)
    other = stack_settings(second)
    assert one[2] == str(first / ".weir-data") and other[2] == str(second / ".weir-data")
    assert one[0] != other[0] and one[1] != other[1]
    assert one[0].startswith("weir-") and other[0].startswith("weir-")
    # Every process of one stack (worker, beat, web, tools) agrees: same directory, same queue,
    # however it is named.
    assert stack_settings(second, WEIR_DATA_DIR=str(first / ".weir-data")) == one
    # WEIR_CELERY_QUEUE overrides the derived name (deploy/'s manifests share "weir").
    assert stack_settings(first, WEIR_CELERY_QUEUE="weir-custom")[0] == "weir-custom"


def test_make_up_names_the_queue_its_celery_processes_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_dir = tmp_path / ".weir-data"
    environment = {"WEIR_DATA_DIR": str(data_dir), "REDIS_URL": "redis://127.0.0.1:6379/0"}
    with patch("webapp.runtime.redis_answers", return_value=True):
        announce_celery_transport(environment)
    line = capsys.readouterr().out.strip()
    assert line == f"weir: Celery uses Redis at redis://127.0.0.1:6379/0, queue {stack_key(data_dir)} (this data directory's own)"
    assert stack_settings(tmp_path, WEIR_DATA_DIR=str(data_dir))[0] == stack_key(data_dir)
