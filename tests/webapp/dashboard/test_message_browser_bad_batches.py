"""The message browser against a real broker whose log holds a batch that cannot be decoded
(written to the stopped broker's segment, as an older Weir or a flipped bit left it) and
timestamps outside the calendar: the page answers 200, shows the error on the bad batch's row
with its offsets, and renders every other record, raw milliseconds for the odd timestamps."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.urls import reverse

from tests.support.bad_batches import append_to_stopped_log, batch_at, undecodable_batch_at
from tests.webapp.dashboard.conftest import Member
from tests.webapp.group_broker import control_plane_broker, provision_topic
from webapp import tenant_clients
from weir import Producer

pytestmark = pytest.mark.django_db

ANCIENT_MS = -(2**62)  # accepted: message.timestamp.before.max.ms defaults to Long.MAX, as in Kafka
FAR_FUTURE_MS = 2**62  # refused today by message.timestamp.after.max.ms; an older Weir stored it


def test_message_browser_shows_a_bad_batch_on_its_row_and_renders_the_rest(make_tenant: Callable[[str], Member], settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    acme = make_tenant("acme")
    with control_plane_broker(tmp_path / "broker", settings) as broker:
        provision_topic(acme.actor, "orders", partitions=1)
        producer = Producer({**tenant_clients.client_config(acme.tenant.public_id), "linger.ms": 0})
        try:
            producer.produce("orders", value=b"first", partition=0)
            producer.produce("orders", value=b"second", partition=0)
            producer.produce("orders", value=b"ancient", partition=0, timestamp=ANCIENT_MS)
            assert producer.flush(10) == 0
        finally:
            producer.close()
        broker.stop()
        append_to_stopped_log(
            broker,
            "orders",
            0,
            undecodable_batch_at(3, 2) + batch_at(5, [b"far-future"], timestamp=FAR_FUTURE_MS) + batch_at(6, [b"after"]),
        )
        broker.start()

        page = acme.client.get(
            reverse("dashboard:topic_messages", args=["orders"]), {"partition": 0, "start": "offset", "offset": 0, "limit": 25, "format": "text"}
        )

        assert page.status_code == 200
        html = page.content.decode()
        for value in ("first", "second", "ancient", "far-future", "after"):
            assert f">{value}<" in html or value in html, value
        assert 'class="bad-batch"' in html and "3–4" in html
        assert "orders [0] offsets 3..4 cannot be decoded" in html
        assert str(ANCIENT_MS) in html and str(FAR_FUTURE_MS) in html
        assert html.index("second") < html.index("cannot be decoded") < html.index("far-future") < html.index("after")

        # Starting inside the bad batch: the error row comes first, at the requested offset.
        page = acme.client.get(
            reverse("dashboard:topic_messages", args=["orders"]), {"partition": 0, "start": "offset", "offset": 4, "limit": 25, "format": "hex"}
        )
        assert page.status_code == 200
        assert "4–4" in page.content.decode()
