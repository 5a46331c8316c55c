"""The Transactions page against a real broker: the list (state, producer, partitions, open for),
the hanging transactions of a topic, and an abort after a typed confirmation (developers only,
CSRF-protected, audited); another tenant sees none of it."""

from __future__ import annotations

import logging
import re
import time

import pytest
from django.test import Client
from django.urls import reverse

from tests.support.transaction_setup import hang_transaction, open_transaction
from tests.webapp.dashboard.conftest import Member
from tests.webapp.group_broker import control_plane_broker, provision_topic, tenant_client_config
from webapp import transactions
from webapp.accounts.models import Role

pytestmark = pytest.mark.django_db


def text(response) -> str:  # type: ignore[no-untyped-def]
    return re.sub(r"\s+", " ", response.content.decode())


def test_transaction_pages_against_a_real_broker(owner: Member, other_owner: Member, make_member, settings, tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    with control_plane_broker(tmp_path / "broker", settings) as broker:
        provision_topic(owner.actor, "orders", partitions=2)
        config = tenant_client_config(owner.actor)
        producer_id, epoch = open_transaction(config, "billing-app", "orders", 0)
        viewer = make_member(owner.tenant, Role.VIEWER)
        developer = make_member(owner.tenant, Role.DEVELOPER)
        abort_url = reverse("dashboard:transaction_abort", args=["billing-app"])

        assert f'href="{reverse("dashboard:transactions")}"' in owner.client.get(reverse("dashboard:overview")).content.decode()
        listing = text(viewer.client.get(reverse("dashboard:transactions")))
        assert "billing-app" in listing and '<span class="badge Ongoing">Ongoing</span>' in listing
        assert f'<td class="number">{producer_id}</td> <td class="number">{epoch}</td> <td class="small">orders[0]</td>' in listing
        assert abort_url not in listing  # viewers see no abort button
        assert abort_url in developer.client.get(reverse("dashboard:transactions")).content.decode()
        assert "billing-app" not in other_owner.client.get(reverse("dashboard:transactions")).content.decode()
        assert other_owner.client.get(reverse("dashboard:transaction_abort", args=["billing-app"])).status_code == 404
        assert viewer.client.post(abort_url, {"confirmation": "billing-app"}).status_code == 403

        strict = Client(enforce_csrf_checks=True)
        strict.force_login(developer.membership.user)
        assert strict.post(abort_url, {"confirmation": "billing-app"}).status_code == 403  # no CSRF token
        page = developer.client.get(abort_url)
        assert page.status_code == 200 and "csrfmiddlewaretoken" in page.content.decode() and "PRODUCER_FENCED" in page.content.decode()
        refused = text(developer.client.post(abort_url, {"confirmation": "billing"}))
        assert "That is not the transactional id." in refused
        with caplog.at_level(logging.INFO, logger="weir.audit"):
            assert developer.client.post(abort_url, {"confirmation": "billing-app"}).status_code == 302
        [record] = [record for record in caplog.records if record.name == "weir.audit"]
        assert record.audit["door"] == "dashboard" and record.audit["transactional_id"] == "billing-app"  # type: ignore[attr-defined]
        deadline = time.monotonic() + 20
        while (state := transactions.get_transaction(owner.tenant.public_id, "billing-app").state) != "CompleteAbort":
            assert time.monotonic() < deadline, state
            time.sleep(0.05)
        after = text(developer.client.get(reverse("dashboard:transactions")))
        assert '<span class="badge CompleteAbort">CompleteAbort</span>' in after and abort_url not in after
        again = text(developer.client.post(abort_url, {"confirmation": "billing-app"}))
        assert "has no transaction to abort" in again

        lost_id, lost_epoch = hang_transaction(config, broker, "orders", 1)  # last: the broker restarts without its coordinator's log
        hanging = text(viewer.client.get(reverse("dashboard:transactions"), {"topic": "orders"}))
        assert f'<td>orders[1]</td><td class="number">{lost_id}</td><td class="number">{lost_epoch}</td>' in hanging
