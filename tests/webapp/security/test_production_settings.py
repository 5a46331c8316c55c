"""The documented production environment passes ``manage.py check --deploy`` with no warning;
a process without a secret key refuses to start, naming what to set; every answer carries a
Content-Security-Policy; ``/api/docs/`` needs nothing from another origin; there is a favicon."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest
from django.test import Client

REPOSITORY_ROOT = Path(__file__).resolve().parents[3]
OPERATIONS_DOC = REPOSITORY_ROOT / "docs" / "operations.md"


def documented_production_environment() -> dict[str, str]:
    """The variables of docs/operations.md's "Production settings" block, with placeholders filled."""
    text = OPERATIONS_DOC.read_text()
    block = re.search(r"<!-- production-environment -->\s*```sh\n(.*?)```", text, flags=re.DOTALL)
    assert block, "docs/operations.md has no production environment block"
    environment = {}
    for line in block.group(1).splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            environment[name] = value
    return environment


def _manage(arguments: list[str], environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "manage.py", *arguments], cwd=REPOSITORY_ROOT, env=environment, capture_output=True, text=True, timeout=300)


def _clean_environment(data_dir: Path) -> dict[str, str]:
    """This process's environment without any Django or Weir setting, on an empty data dir."""
    kept = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "WEIR_", "DATABASE_URL"))}
    return {**kept, "WEIR_DATA_DIR": str(data_dir), "WEIR_QUIET_TRANSPORT_NOTICE": "1", "REDIS_URL": "redis://127.0.0.1:1/0"}


def test_check_deploy_passes_with_the_documented_production_environment(tmp_path: Path) -> None:
    documented = documented_production_environment()
    assert {"DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS", "WEIR_HTTPS", "WEIR_INTERNAL_TOKEN"} <= set(documented)
    filled = {name: (secrets.token_urlsafe(48) if "$(" in value else value) for name, value in documented.items()}
    filled.pop("DATABASE_URL", None)  # SQLite under the test's data dir: check needs no server
    result = _manage(["check", "--deploy", "--fail-level", "WARNING"], {**_clean_environment(tmp_path), **filled})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_fails_without_them(tmp_path: Path) -> None:
    environment = {**_clean_environment(tmp_path), "DJANGO_SECRET_KEY": secrets.token_urlsafe(48)}
    result = _manage(["check", "--deploy", "--fail-level", "WARNING"], environment)
    assert result.returncode != 0
    assert "SECURE_HSTS_SECONDS" in result.stderr and "SESSION_COOKIE_SECURE" in result.stderr


def test_a_process_without_a_secret_key_refuses_to_start_and_says_what_to_set(tmp_path: Path) -> None:
    result = _manage(["check"], _clean_environment(tmp_path))
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is not set" in result.stderr and "DJANGO_DEBUG=true" in result.stderr


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/sign-in/", "/sign-up/", "/api/docs/", "/api/v1/topics", "/healthz", "/static/dashboard/dashboard.css", "/no-such-page/"])
def test_every_answer_carries_the_content_security_policy(path: str) -> None:
    response = Client().get(path)
    policy = response["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["default-src"] == "'self'" and directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'"


@pytest.mark.django_db
def test_api_docs_load_only_same_origin_assets() -> None:
    client = Client()
    page = client.get("/api/docs/")
    html = page.content.decode()
    assert page.status_code == 200
    references = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert references, html
    assert all(not urlparse(reference).netloc for reference in references), references
    assert "<script>" not in html and "<style>" not in html, "inline code the CSP would block"
    for reference in references:
        asset = client.get(reference)
        assert asset.status_code == 200, reference
        if reference.startswith("/static/"):
            body = b"".join(asset.streaming_content) if asset.streaming else asset.content
            assert body, reference
    # The start-up script is served by the project and points at the project's schema.
    script = client.get([reference for reference in references if "script" in reference][0])
    assert script["Content-Type"].startswith("application/javascript") and b"/api/schema/" in script.content


@pytest.mark.django_db
def test_the_dashboard_has_a_favicon() -> None:
    client = Client()
    page = client.get("/sign-in/").content.decode()
    icon = re.search(r'<link rel="icon" href="([^"]+)"', page)
    assert icon and icon.group(1).endswith(".svg")
    served = client.get(icon.group(1))
    assert served.status_code == 200 and served["Content-Type"].startswith("image/svg+xml")
    redirect = client.get("/favicon.ico")
    assert redirect.status_code == 301 and redirect["Location"] == icon.group(1)
