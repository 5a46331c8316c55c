"""An unexpected error shows no secret anywhere: not on the debug page (DEBUG on, HTML and
text), not in the admin mail or log report, and with DEBUG off the answer is the plain 500
page (or the API's JSON body) with the request id only."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from django.core import mail
from django.test import Client
from django.utils.log import AdminEmailHandler

from tests.webapp.security.error_urls import EXCEPTION_TEXT, secret_values

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.webapp.security.error_urls")]

SUBSTITUTE = "********************"


def _assert_no_secret(text: str) -> None:
    for value in secret_values():
        assert value not in text, f"{value[:6]}... appears in the report"


@pytest.fixture
def debug(settings) -> None:  # type: ignore[no-untyped-def]
    settings.DEBUG = True


def test_debug_page_hides_client_configs_metadata_dataclass_fields_and_settings(debug: None) -> None:
    response = Client(raise_request_exception=False).get("/fails/", HTTP_ACCEPT="text/html")
    page = response.content.decode()
    assert response.status_code == 500
    # The technical page it is: the exception and the frame's variables are there...
    assert EXCEPTION_TEXT in page and "failing_view" in page and "sasl.username" not in page
    # Names stay readable (only values are hidden), so a developer still sees what was there.
    assert "weir.internal.token" in page and "ssl.key.password" in page and "sasl.password" in page and SUBSTITUTE in page
    # ...but no value of a secret, whether in a dict, a (name, value) pair, a dataclass, a
    # string that contains one, or the settings list.
    _assert_no_secret(page)


def test_debug_text_report_hides_the_same(debug: None) -> None:
    response = Client(raise_request_exception=False).get("/fails/", HTTP_ACCEPT="text/plain")
    text = response.content.decode()
    assert response.status_code == 500 and response["Content-Type"].startswith("text/plain")
    assert EXCEPTION_TEXT in text and "WEIR_INTERNAL_TOKEN" in text
    _assert_no_secret(text)


@pytest.fixture
def admin_mail(settings) -> Iterator[None]:  # type: ignore[no-untyped-def]
    settings.ADMINS = [("Operator", "ops@weir.example")]
    handler = AdminEmailHandler(include_html=True)
    handler.setLevel(logging.ERROR)
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def test_admin_mail_report_with_debug_off_hides_every_secret(admin_mail: None) -> None:
    Client(raise_request_exception=False).get("/fails/")
    with_html = [message for message in mail.outbox if message.alternatives]
    assert with_html, "no report with the frames' variables was mailed"
    html = str(with_html[0].alternatives[0][0])
    assert "failing_view" in html and "weir.tenant.token" in html and SUBSTITUTE in html
    for message in mail.outbox:
        _assert_no_secret(message.body)
        _assert_no_secret(" ".join(str(alternative[0]) for alternative in message.alternatives))


def test_with_debug_off_the_page_shows_the_request_id_only() -> None:
    response = Client(raise_request_exception=False).get("/fails/", HTTP_X_REQUEST_ID="req-abc-123")
    page = response.content.decode()
    assert response.status_code == 500
    assert response["X-Request-ID"] == "req-abc-123"
    assert "req-abc-123" in page and "Something went wrong" in page
    assert EXCEPTION_TEXT not in page and "RuntimeError" not in page and "Traceback" not in page
    _assert_no_secret(page)


def test_with_debug_off_the_api_answers_json_with_the_request_id_only() -> None:
    response = Client(raise_request_exception=False).get("/api/v1/fails")
    body = response.json()
    assert response.status_code == 500
    request_id = response["X-Request-ID"]
    assert body == {"error_code": 500, "message": f"Internal server error. Quote request id {request_id} when reporting it.", "request_id": request_id}


def test_debug_is_off_unless_asked_for() -> None:
    import subprocess
    import sys
    from pathlib import Path

    script = "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"
    import os

    base = {key: value for key, value in os.environ.items() if key != "DJANGO_DEBUG"}
    base["DJANGO_SETTINGS_MODULE"] = "webapp.settings"
    root = Path(__file__).resolve().parents[3]
    default = subprocess.run([sys.executable, "-c", script], cwd=root, env=base, capture_output=True, text=True, timeout=120)
    asked = subprocess.run([sys.executable, "-c", script], cwd=root, env={**base, "DJANGO_DEBUG": "true"}, capture_output=True, text=True, timeout=120)
    assert default.stdout.strip() == "False", default.stderr
    assert asked.stdout.strip() == "True", asked.stderr
