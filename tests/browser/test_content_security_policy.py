"""In a real browser, under the Content-Security-Policy and with every other origin blocked:
the dashboard's pages (charts, live tables, copy buttons) and ``/api/docs/`` (Swagger UI from
the project's own files) load without a single policy violation, and Swagger UI renders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.browser.test_dashboard_flow import CHROMIUM, CHROMIUM_ARGS, STEP_TIMEOUT_MS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing: install Debian's chromium to run the browser test"),
]

PASSWORD = "a long enough password 42"


@pytest.fixture
def live_server(transactional_db: None) -> Iterator[object]:  # type: ignore[no-untyped-def]
    from tests.support.live_server import running_live_server

    with running_live_server() as server:
        yield server


@pytest.fixture
def browser_page(live_server, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[object, list[str], list[str]]]:  # type: ignore[no-untyped-def]
    """A page whose requests to any other origin are aborted (as without internet access);
    yields it with the console's policy violations and the blocked foreign requests."""
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    own_origin = urlparse(live_server.url).netloc
    violations: list[str] = []
    foreign: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.set_default_timeout(STEP_TIMEOUT_MS)

            def only_own_origin(route) -> None:  # type: ignore[no-untyped-def]
                url = urlparse(route.request.url)
                if url.scheme in ("data", "blob") or url.netloc == own_origin:
                    route.continue_()
                else:
                    foreign.append(route.request.url)
                    route.abort()

            context.route("**/*", only_own_origin)
            page = context.new_page()
            page.on("console", lambda message: violations.append(message.text) if "Content Security Policy" in message.text else None)
            yield page, violations, foreign
        finally:
            browser.close()


def test_dashboard_pages_load_without_policy_violations(live_server, browser_page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from django.db import connection

    from webapp.accounts.actions.signup import do_sign_up
    from webapp.fleet.models import BrokerNode, BrokerState

    # Test bodies next to the browser fixture keep their own Django connection from one test to
    # the next, and a live server's teardown ends every other session of the test database:
    # start on a new connection (see test_live_replication.py).
    connection.close()
    page, violations, foreign = browser_page
    BrokerNode.objects.create(node_id=1, host="127.0.0.1", port=1, state=BrokerState.ONLINE)
    do_sign_up("alice", "alice@acme.example", PASSWORD, "Acme")
    page.goto(f"{live_server.url}/sign-in/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Acme')")
    for path in ("/", "/topics/", "/brokers/", "/usage/", "/api-keys/", "/service-accounts/", "/jobs/", "/no-such-page/"):
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("load")
    # The stylesheet applied (no inline style needed): the sidebar has its dark background.
    page.goto(f"{live_server.url}/")
    background = page.eval_on_selector(".sidebar", "element => getComputedStyle(element).backgroundColor")
    assert background == "rgb(18, 24, 38)"
    page.screenshot(path=str(tmp_path / "overview.png"), full_page=True)
    assert violations == [] and foreign == []


def test_api_docs_render_swagger_ui_offline_without_policy_violations(live_server, browser_page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page, violations, foreign = browser_page
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title:has-text('Weir API')")
    page.wait_for_selector(".opblock-tag-section")
    page.screenshot(path=str(tmp_path / "api-docs.png"), full_page=False)
    assert violations == [] and foreign == []
