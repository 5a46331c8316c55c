"""The dashboard end to end in a real browser: Debian's Chromium driven by Playwright against
a live Django server and a real broker process (security required, provisioned by the jobs).

Signs in, creates a topic, a service account, an ACL and a cluster key (the secret is seen
once), produces a record with the form and reads it back in the message browser. Provisioning
runs inline (Celery eager) so the test needs no worker. Screenshots go to ``tmp_path``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Longest wait for one page or element, in milliseconds.
STEP_TIMEOUT_MS = 15_000

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing: install Debian's chromium to run the browser test"),
]


@pytest.fixture
def managed_broker(tmp_path: Path, settings, transactional_db: None) -> Iterator[object]:  # type: ignore[no-untyped-def]
    """A broker that requires credentials and knows the control plane's internal token,
    registered in the fleet, with Celery running provisioning jobs inline."""
    from tests.support.processes import BrokerProcess
    from webapp.celery import app
    from webapp.fleet.models import BrokerNode, BrokerState

    broker = BrokerProcess(tmp_path / "broker", configs={"security.required": "true"}, env={"WEIR_INTERNAL_TOKEN": settings.WEIR_INTERNAL_TOKEN}).start()
    BrokerNode.objects.create(node_id=broker.node_id, host="127.0.0.1", port=broker.port, state=BrokerState.ONLINE)
    settings.WEIR_BOOTSTRAP_SERVERS = broker.address
    eager_before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield broker
    finally:
        app.conf.task_always_eager = eager_before
        broker.stop()


@pytest.fixture
def live_server(transactional_db: None) -> Iterator[object]:  # type: ignore[no-untyped-def]
    from tests.support.live_server import running_live_server

    with running_live_server() as server:
        yield server


@pytest.fixture
def page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the test's own database calls
    # are synchronous and safe, so Django's async guard is lifted for this test only.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.set_default_timeout(STEP_TIMEOUT_MS)
            yield context.new_page()
        finally:
            browser.close()


def test_sign_in_create_topic_acl_key_then_produce_and_browse(live_server, managed_broker, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from django.db import connection

    from webapp.accounts.actions.signup import do_sign_up

    # Test bodies next to the browser fixture keep their own Django connection from one test to
    # the next, and a live server's teardown ends every other session of the test database:
    # start on a new connection (see test_live_replication.py).
    connection.close()
    do_sign_up("alice", "alice@acme.example", "a long enough password 42", "Acme")
    shots = tmp_path / "screenshots"
    shots.mkdir()

    def snap(name: str) -> None:
        page.screenshot(path=str(shots / f"{name}.png"), full_page=True)

    # Sign in.
    page.goto(f"{live_server.url}/sign-in/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "a long enough password 42")
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Acme')")
    snap("01-overview")

    # Create a topic; its page follows the job until the broker has it.
    page.click("nav >> text=Topics")
    page.click("text=Create topic")
    page.fill("#id_name", "orders")
    page.fill("#id_partitions", "2")
    page.click("button:has-text('Create topic')")
    page.wait_for_selector("text=Applied on the brokers")
    snap("02-topic-created")

    # A service account, an ACL for it, and a cluster key whose secret is shown once.
    page.click("nav >> text=Service accounts")
    page.click("text=Create service account")
    page.fill("#id_name", "orders-app")
    page.click("button:has-text('Create service account')")
    page.click("text=Add ACL")
    page.select_option("#id_operation", "WRITE")
    page.fill("#id_resource_name", "orders")
    page.click("button:has-text('Add ACL')")
    page.wait_for_selector("text=Applied on the brokers")
    assert page.is_visible("td:has-text('WRITE')")
    snap("03-acl-created")
    page.click("nav >> text=Service accounts")
    page.click("text=orders-app")
    page.click("text=Create API key")
    page.click("button:has-text('Create API key')")
    secret = page.inner_text("#new-key-secret")
    assert re.fullmatch(r"weir_cluster_[A-Za-z0-9_-]{43}", secret)
    snap("04-key-secret-once")
    page.click("text=Done")
    assert secret not in page.content()

    # Produce with the form, then see the record in the message browser as pretty JSON.
    page.click("nav >> text=Topics")
    page.click("td >> text=orders")
    page.click("text=Produce")
    page.fill("#id_key", "customer-7")
    page.fill("#id_value", '{"order": 42, "total": "9.99"}')
    page.fill("#id_headers", "source: browser-test")
    page.click("button:has-text('Produce')")
    page.wait_for_selector("text=/Produced to partition \\d at offset 0/")
    page.select_option("#id_format", "json")
    page.click("button:has-text('Read')")
    records = page.inner_text("#records")
    snap("05-message-browser")
    assert "customer-7" in records
    assert '"order": 42' in records
    assert "browser-test" in records
