"""`manage.py demo` run beside a stack prints that stack's web URL: the one `make up` recorded in
the data directory, else WEIR_HTTP_PORT's, never a default port the stack does not use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from deploy.local import StackSettings
from tests.support.processes import free_port
from webapp.runtime import WEB_URL_FILE, stack_web_url

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
ADD_A_BROKER = "from webapp.fleet.models import BrokerNode; BrokerNode.objects.create(node_id=1, host='127.0.0.1', port=1, state='ONLINE')"


def _manage(data_dir: Path, *arguments: str, **environment: str) -> str:
    base = {name: value for name, value in os.environ.items() if name not in ("DATABASE_URL", "WEIR_PUBLIC_API_URL", "WEIR_HTTP_PORT")}
    completed = subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=REPOSITORY_ROOT, capture_output=True, text=True, timeout=180,
        env={
            **base, "DJANGO_SETTINGS_MODULE": "webapp.settings", "WEIR_DATA_DIR": str(data_dir),
            "DJANGO_SECRET_KEY": "demo-url-test-secret-key-0123456789", "REDIS_URL": "redis://127.0.0.1:1/0", **environment,
        },
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr + completed.stdout
    return completed.stdout


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stack's data directory: its database migrated, one broker registered."""
    directory = tmp_path_factory.mktemp("stack")
    _manage(directory, "migrate", "--noinput", "-v0")
    _manage(directory, "shell", "-c", ADD_A_BROKER)
    return directory


def _urls(output: str) -> list[str]:
    return [word for line in output.splitlines() for word in line.split() if word.startswith("http")]


@pytest.mark.slow
def test_demo_prints_the_url_of_the_stack_on_another_http_port(data_dir: Path) -> None:
    port = free_port()
    output = _manage(data_dir, "demo", "--wait-seconds", "0", WEIR_HTTP_PORT=str(port))
    urls = _urls(output)
    assert urls and all(url.startswith(f"http://127.0.0.1:{port}/") for url in urls), output


@pytest.mark.slow
def test_demo_prints_the_url_make_up_recorded_in_the_data_directory(data_dir: Path) -> None:
    port = free_port()
    settings = StackSettings.from_environment({"WEIR_DATA_DIR": str(data_dir), "WEIR_HTTP_PORT": str(port)})
    assert settings.web_url_file == data_dir / WEB_URL_FILE
    settings.web_url_file.parent.mkdir(parents=True, exist_ok=True)
    settings.web_url_file.write_text(settings.web_url + "\n")
    try:
        urls = _urls(_manage(data_dir, "demo", "--wait-seconds", "0"))
    finally:
        settings.web_url_file.unlink()
    assert urls and all(url.startswith(f"http://127.0.0.1:{port}/") for url in urls), urls


def test_an_explicit_public_url_wins(tmp_path: Path) -> None:
    (tmp_path / WEB_URL_FILE).parent.mkdir(parents=True)
    (tmp_path / WEB_URL_FILE).write_text("http://127.0.0.1:18001\n")
    assert stack_web_url(tmp_path, {"WEIR_PUBLIC_API_URL": "https://weir.example.com/"}) == "https://weir.example.com"
    assert stack_web_url(tmp_path, {"WEIR_HTTP_PORT": "18002"}) == "http://127.0.0.1:18001"
    assert stack_web_url(tmp_path / "none", {"WEIR_HTTP_PORT": "18002"}) == "http://127.0.0.1:18002"
    assert stack_web_url(tmp_path / "none", {}) == "http://127.0.0.1:8000"
