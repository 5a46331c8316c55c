"""The Transactions page in a real browser (Debian's Chromium driven by Playwright) against a live
Django server and a real broker: an owner finds the open transaction from the navigation, opens its
abort page, types the transactional id to confirm, and sees the abort under way."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.test_dashboard_flow import CHROMIUM, live_server, page  # noqa: F401  (fixtures)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing: install Debian's chromium to run the browser test"),
]
PASSWORD = "a long enough password 42"


@pytest.fixture
def broker(tmp_path: Path, settings, transactional_db: None) -> Iterator[object]:  # type: ignore[no-untyped-def]
    from tests.webapp.group_broker import control_plane_broker

    with control_plane_broker(tmp_path / "broker", settings) as started:
        yield started


def test_an_owner_aborts_an_open_transaction_from_the_transactions_page(live_server, broker, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    from django.db import connection

    from tests.support.transaction_setup import open_transaction
    from tests.webapp.group_broker import provision_topic, tenant_client_config
    from webapp.accounts.actions.signup import do_sign_up
    from webapp.accounts.identity import actor_for_user

    connection.close()  # a new connection for this test's own database calls (see test_dashboard_flow.py)
    signed_up = do_sign_up("alice", "alice@acme.example", PASSWORD, "Acme")
    actor = actor_for_user(signed_up.user)
    assert actor is not None
    provision_topic(actor, "orders", partitions=1)
    open_transaction(tenant_client_config(actor), "billing-app", "orders", 0)

    page.goto(f"{live_server.url}/sign-in/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Acme')")
    page.click("nav >> text=Transactions")
    row = page.locator("#transactions tr", has_text="billing-app")
    assert "Ongoing" in row.inner_text()
    row.locator("text=Abort").click()
    page.wait_for_selector("h1:has-text('Abort the transaction of billing-app')")
    page.fill("#id_confirmation", "billing-app")
    page.click("button:has-text('Abort this transaction')")
    page.wait_for_selector("text=Aborting the transaction of billing-app")
    page.screenshot(path=str(tmp_path / "transactions-aborted.png"), full_page=True)
    assert page.url.endswith("/transactions/")
