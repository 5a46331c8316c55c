"""A failover watched in a real browser: the topic page and the brokers page follow the
controller's records by themselves (the dashboard script refreshes their tables), with no
reload. The controller's writes are made directly on the rows; no broker process runs (the
registered brokers listen nowhere, so offsets show as unavailable)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

# ``page`` is the dashboard flow's browser fixture (Debian's Chromium through Playwright).
from tests.browser.test_dashboard_flow import CHROMIUM, page  # noqa: F401

PASSWORD = "a long enough password 42"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing: install Debian's chromium to run the browser test"),
]


@pytest.fixture
def live_server(transactional_db: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    from tests.support.live_server import running_live_server
    from webapp.provisioning import tasks

    # Jobs would be queued on commit; no worker or broker runs in this test.
    monkeypatch.setattr(tasks.run_job, "delay", lambda job_id: None)
    with running_live_server() as server:
        yield server


def test_topic_and_brokers_pages_follow_a_failover_without_reloading(live_server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from django.db import connection

    # Next to the browser fixture, test bodies keep their own Django connection from one test
    # to the next (not the fixtures' one), and a live server's teardown ends every other
    # session of the test database: start on a new connection and close it at the end, so
    # that neither this test nor the next one uses a terminated session.
    connection.close()
    try:
        watch_a_failover(live_server.url, page, tmp_path)
    finally:
        connection.close()


def watch_a_failover(url: str, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.support.processes import free_port
    from webapp.accounts.actions.signup import do_sign_up
    from webapp.accounts.identity import Actor
    from webapp.catalog.actions.topics import check_create_topic, do_create_topic
    from webapp.catalog.models import Partition
    from webapp.fleet.models import BrokerNode, BrokerState

    for node_id in (1, 2, 3):
        BrokerNode.objects.create(node_id=node_id, host="127.0.0.1", port=free_port(), state=BrokerState.ONLINE)
    signed_up = do_sign_up("alice", "alice@acme.example", PASSWORD, "Acme")
    owner = Actor(tenant=signed_up.tenant, role=signed_up.membership.role, membership=signed_up.membership)
    topic = do_create_topic(owner, check_create_topic(owner, "orders", 1, 3, {"min.insync.replicas": "2"})).topic
    Partition.objects.filter(topic=topic).update(leader=1, replicas=[1, 2, 3], isr=[1, 2, 3], leader_epoch=0)

    page.goto(f"{url}/sign-in/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Acme')")

    page.goto(f"{url}/topics/orders/")
    page.wait_for_selector('tr[data-partition="0"] .badge.ok')
    page.evaluate("() => { window.notReloaded = true; }")

    # Broker 1 dies: the controller elects 2 from the ISR and shrinks the ISR.
    BrokerNode.objects.filter(node_id=1).update(state=BrokerState.OFFLINE)
    Partition.objects.filter(topic=topic).update(leader=2, isr=[2], leader_epoch=1)
    page.wait_for_selector('tr[data-partition="0"] .badge.under-min-isr')
    assert page.inner_text('tr[data-partition="0"] td:nth-child(2)') == "2"
    assert page.evaluate("() => window.notReloaded === true")  # updated in place, not reloaded
    page.screenshot(path=str(tmp_path / "topic-after-failover.png"), full_page=True)

    page.goto(f"{url}/brokers/")
    page.wait_for_selector('tr[data-broker="1"] .badge.OFFLINE')
    BrokerNode.objects.filter(node_id=1).update(state=BrokerState.ONLINE)
    Partition.objects.filter(topic=topic).update(isr=[2, 3, 1])
    page.wait_for_selector('tr[data-broker="1"] .badge.ONLINE')
    assert page.inner_text('tr[data-broker="2"] td:nth-child(6)') == "1"
    page.screenshot(path=str(tmp_path / "brokers-after-return.png"), full_page=True)
