"""The message browser's pages through Django's client: bad input is a clear message on the page
(no broker asked), and against one real broker (one test, so one broker process: it is the
only thing here that starts one) the scan across partitions, its filters, its budget, the
download and the live tail's polls."""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Callable

import pytest
from django.urls import reverse

from tests.webapp.dashboard.conftest import Member
from tests.webapp.dashboard.test_topics import create_topic
from tests.webapp.group_broker import control_plane_broker, provision_topic
from webapp import tenant_clients
from webapp.dashboard.views import messages as message_views
from weir import Producer

pytestmark = pytest.mark.django_db


def browse(member: Member, topic: str, **query: object) -> str:
    response = member.client.get(reverse("dashboard:topic_messages", args=[topic]), {"start": "latest", "limit": 25, **query})
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"json_path": "status"}, "A JSON path starts with $"),
        ({"json_path": "$.a[x]"}, "The JSON path is not valid at character 4"),
        ({"partition": "7"}, "Partition 7 does not exist: the topic has 2 partitions (0 to 1)."),
        ({"partition": "0,x"}, "&#x27;x&#x27; is not a partition number or range"),
        ({"start": "offset", "offset": "5:1"}, "Partition 5 is not among the partitions read."),
        ({"json_equals": "1"}, "Give the JSON path whose value must equal this."),
        ({"zone": "local", "time_from": "2026-01-01T00:00"}, "Your browser did not send its time zone"),
        ({"time_from": "2026-01-02T00:00", "time_to": "2026-01-01T00:00"}, "The end of the time range must come after its start."),
    ],
)
def test_bad_input_is_a_clear_message_and_reads_nothing(owner: Member, query: dict[str, str], message: str) -> None:
    create_topic(owner, "orders", partitions=2)
    html = browse(owner, "orders", **query)
    assert "Nothing was read" in html and message in html
    assert 'id="records"' not in html


def test_the_tail_refuses_a_partition_the_topic_does_not_have(owner: Member) -> None:
    create_topic(owner, "orders", partitions=2)
    response = owner.client.get(reverse("dashboard:topic_messages_tail", args=["orders"]), {"start": "end", "partition": "", "positions": "0:1,9:4"})
    assert response.status_code == 400 and "Partition 9 is not among the partitions read." in response.json()["error"]


def test_scan_filters_budget_download_and_tail_against_a_broker(make_tenant: Callable[[str], Member], settings, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    acme = make_tenant("acme")
    # What is checked here is which records a scan returns: a busy test machine must not
    # make it stop at the 5 s time budget (the budget's own rule is tested without a broker).
    monkeypatch.setattr(message_views, "SCAN_MAX_SECONDS", 60.0)
    with control_plane_broker(tmp_path / "broker", settings) as _broker:
        provision_topic(acme.actor, "orders", partitions=3)
        producer = Producer({**tenant_clients.client_config(acme.tenant.public_id), "linger.ms": 0})
        try:
            for n in range(30):
                status = "paid" if n % 4 == 0 else "open"
                producer.produce(
                    "orders",
                    key=f"customer-{n % 5}".encode(),
                    value=json.dumps({"n": n, "status": status}).encode(),
                    partition=n % 3,
                    timestamp=1_700_000_000_000 + n,
                )
            assert producer.flush(10) == 0
        finally:
            producer.close()

        # Newest first across the three partitions, JSON path equality: exactly the paid ones.
        html = browse(acme, "orders", json_path="$.status", json_equals="paid", format="text")
        shown = [int(json.loads(line)["n"]) for line in _values(html)]
        assert shown == [28, 24, 20, 16, 12, 8, 4, 0]
        assert "Scanned 30 records" in html and "in 3 partitions" in html

        # Key filter from the beginning of partition 1 only, in offset order.
        html = browse(acme, "orders", start="beginning", partition="1", key="customer-2", format="text")
        assert [json.loads(line)["n"] for line in _values(html)] == [7, 22]

        # A budget smaller than the topic: the page says where it stopped.
        full_budget = message_views.SCAN_MAX_BYTES
        monkeypatch.setattr(message_views, "SCAN_MAX_BYTES", 200)
        html = browse(acme, "orders", value="no such value")
        assert "Stopped at the byte budget" in html and "No matching record within the budget." in html
        monkeypatch.setattr(message_views, "SCAN_MAX_BYTES", full_budget)

        # The download holds the records the page shows.
        download = acme.client.get(
            reverse("dashboard:topic_messages_download", args=["orders"]), {"start": "latest", "limit": 25, "value": '"paid"', "download": "csv"}
        )
        assert download.status_code == 200 and download["Content-Disposition"] == 'attachment; filename="orders-records.csv"'
        rows = list(csv.DictReader(io.StringIO(download.content.decode())))
        assert [json.loads(row["value"])["n"] for row in rows] == [28, 24, 20, 16, 12, 8, 4, 0]

        # The live tail: the first poll returns the ends, the next one the record written since.
        tail_url = reverse("dashboard:topic_messages_tail", args=["orders"])
        first = acme.client.get(tail_url, {"start": "latest", "format": "auto", "value": "tail"}).json()
        assert first == {"positions": "0:10,1:10,2:10", "count": 0, "html": "", "stopped_at": ""}
        producer = Producer({**tenant_clients.client_config(acme.tenant.public_id), "linger.ms": 0})
        try:
            producer.produce("orders", value=b'{"tail": true}', partition=2)
            producer.produce("orders", value=b"not matching", partition=0)
            assert producer.flush(10) == 0
        finally:
            producer.close()
        # Polls as the page does (a poll that ran out of time goes on from where it stopped).
        positions, found = first["positions"], []
        deadline = time.monotonic() + 15
        while not found and time.monotonic() < deadline:
            second = acme.client.get(tail_url, {"start": "latest", "format": "auto", "value": "tail", "positions": positions}).json()
            positions, found = second["positions"], [second] if second["count"] else []
        assert second["count"] == 1 and "1:10,2:11" in second["positions"]
        assert 'data-partition="2" data-offset="10"' in second["html"] and "&quot;tail&quot;: true" in second["html"]


def _values(html: str) -> list[str]:
    """The text of each row's value cell, in page order."""
    import re

    cells = re.findall(r'<td class="record-value"><pre class="record-payload">(.*?)</pre>', html, flags=re.S)
    return [cell.replace("&quot;", '"') for cell in cells]
