"""The message browser in a real browser (Debian's Chromium driven by Playwright) against one live
Django server and one real broker, shared by every step below (one test: the server and the
broker are the two processes it needs). On a seeded three-partition topic: a JSON-path filter
shows exactly the matching records across partitions, newest first; an invalid path is a
clear message; the download holds the shown records; the live tail shows a record produced
after it started within 2 s and stops cleanly; a schema registered on the Schemas page encodes a
record in the produce form, and the browser shows it decoded with a link to its schema."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_dashboard_flow import CHROMIUM, live_server, page  # noqa: F401  (fixtures)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing: install Debian's chromium to run the browser test"),
]
PASSWORD = "a long enough password 42"
# The tail must show a new record within this many milliseconds of its production.
TAIL_DEADLINE_MS = 2_000
ORDER_SCHEMA = {"type": "record", "name": "Order", "fields": [{"name": "n", "type": "int"}, {"name": "status", "type": "string"}]}


@pytest.fixture
def broker(tmp_path: Path, settings, transactional_db: None) -> Iterator[object]:  # type: ignore[no-untyped-def]
    from tests.webapp.group_broker import control_plane_broker

    with control_plane_broker(tmp_path / "broker", settings) as started:
        yield started


def test_filter_download_and_live_tail_in_the_message_browser(live_server, broker, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    from django.db import connection

    connection.close()  # a new connection for this test's own database calls (see test_dashboard_flow.py)
    try:
        browse_filter_and_tail(live_server.url, page, tmp_path)
    finally:
        connection.close()


def browse_filter_and_tail(url: str, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.webapp.group_broker import provision_topic, tenant_client_config
    from webapp.accounts.actions.signup import do_sign_up
    from webapp.accounts.identity import actor_for_user
    from weir import Producer

    signed_up = do_sign_up("alice", "alice@acme.example", PASSWORD, "Acme")
    actor = actor_for_user(signed_up.user)
    assert actor is not None
    provision_topic(actor, "orders", partitions=3)
    config = tenant_client_config(actor)

    def produce(values: list[tuple[int, dict[str, Any]]]) -> None:
        """Order n at partition p, timestamped n ms after a fixed start (records made in one
        millisecond would tie, and ties are ordered by partition)."""
        producer = Producer({**config, "linger.ms": 0})
        try:
            for partition, value in values:
                record = json.dumps(value).encode()
                producer.produce(
                    "orders", key=f"order-{value['n']}".encode(), value=record, partition=partition, timestamp=int(time.time() * 1000) - 10_000 + value["n"]
                )
            assert producer.flush(10) == 0
        finally:
            producer.close()

    # 24 orders over three partitions; every fifth one is refunded.
    seeded = [(n % 3, {"n": n, "status": "refunded" if n % 5 == 0 else "paid"}) for n in range(24)]
    produce(seeded)
    refunded = sorted((value["n"] for _, value in seeded if value["status"] == "refunded"), reverse=True)

    page.goto(f"{url}/sign-in/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Acme')")
    page.goto(f"{url}/topics/orders/messages/")

    # An invalid JSON path: a clear message, nothing read.
    page.fill("#id_json_path", "status")
    page.click("button:has-text('Read')")
    assert "A JSON path starts with $" in page.inner_text("body")
    assert page.locator("#records").count() == 0

    # The filter: exactly the refunded orders of all partitions, newest first.
    page.fill("#id_json_path", "$.status")
    page.fill("#id_json_equals", "refunded")
    page.click("button:has-text('Read')")
    page.wait_for_selector("#records tr.record")
    shown = [json.loads(text)["n"] for text in page.locator("#records tr.record td.record-value pre").all_inner_texts()]
    assert shown == refunded
    assert "Scanned 24 records" in page.inner_text("#scan-stats")
    assert page.locator("#records .local-time").count() == len(refunded)  # the browser's time next to UTC
    page.screenshot(path=str(tmp_path / "filtered.png"), full_page=True)

    with page.expect_download() as downloading:
        page.click("#scan-stats a:has-text('JSON')")
    downloaded = json.loads(Path(downloading.value.path()).read_text())
    assert [json.loads(document["value"])["n"] for document in downloaded] == refunded

    # The live tail shows a matching record produced after it started, within 2 s.
    page.click("#tail-start")
    page.wait_for_selector("#live-tail[data-tail-state=running]")
    produce([(1, {"n": 100, "status": "paid"}), (2, {"n": 101, "status": "refunded"})])
    produced_at = time.monotonic()
    page.wait_for_selector("#tail-records tr.record", timeout=TAIL_DEADLINE_MS)
    assert time.monotonic() - produced_at < TAIL_DEADLINE_MS / 1000
    tailed = page.locator("#tail-records tr.record td.record-value pre").all_inner_texts()
    assert [json.loads(text)["n"] for text in tailed] == [101]  # the paid one does not match
    page.screenshot(path=str(tmp_path / "tail.png"), full_page=True)

    # Stop ends the tail; a record written meanwhile is not shown, and a restarted tail follows
    # on from the new end.
    page.click("#tail-stop")
    page.wait_for_selector("#live-tail[data-tail-state=stopped]")
    assert page.is_visible("#tail-start") and not page.is_visible("#tail-stop")
    produce([(0, {"n": 102, "status": "refunded"})])
    page.click("#tail-start")
    page.wait_for_selector("#live-tail[data-tail-state=running]")
    produce([(0, {"n": 103, "status": "refunded"})])
    page.wait_for_selector("#tail-records tr.record[data-partition='0']", timeout=TAIL_DEADLINE_MS)
    tailed = page.locator("#tail-records tr.record td.record-value pre").all_inner_texts()
    assert [json.loads(text)["n"] for text in tailed] == [103, 101]

    # Schemas (issue 16): register an Avro schema on the Schemas page, produce a record encoded with
    # it from the produce form (a value that does not fit is refused naming the field), and the
    # browser shows the record decoded, labelled with its schema and linked to it.
    page.click("#tail-stop")
    page.wait_for_selector("#live-tail[data-tail-state=stopped]")
    page.click("#main-nav a:has-text('Schemas')")
    page.click("a:has-text('Register a schema')")
    page.fill("#id_subject", "orders-value")
    page.select_option("#id_schema_type", "AVRO")
    page.fill("#id_schema", json.dumps(ORDER_SCHEMA))
    page.click("form.stacked button[type=submit]")
    page.wait_for_selector("#schema-id")
    page.goto(f"{url}/topics/orders/produce/")
    page.select_option("#id_partition", "2")
    page.select_option("#id_value_schema", "orders-value/1")
    page.fill("#id_value", '{"n": "two hundred", "status": "paid"}')
    page.click("form.stacked button[type=submit]")
    assert "The value does not fit orders-value version 1" in page.inner_text("body") and "Order.n" in page.inner_text("body")
    page.fill("#id_value", '{"n": 200, "status": "paid"}')
    page.click("form.stacked button[type=submit]")
    page.wait_for_selector("#records tr.record")
    cell = page.locator("#records tr.record td.record-value").first
    assert "schema id 1 (orders-value v1)" in cell.inner_text()
    assert json.loads(cell.locator("pre").inner_text()) == {"n": 200, "status": "paid"}
    cell.locator("a:has-text('orders-value v1')").click()
    page.wait_for_selector("h1:has-text('version 1')")
    assert '"name": "Order"' in page.inner_text("pre.schema-text")
