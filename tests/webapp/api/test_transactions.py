"""``/api/v1/transactions`` against a real broker: list (with states), get, ``{id}:abort`` (audited,
developers only), ``transactions:hanging?topic=``; another tenant sees none of it."""

from __future__ import annotations

import logging
import time

import pytest

from tests.support.transaction_setup import hang_transaction, open_transaction
from tests.webapp.api.conftest import TenantFixture
from tests.webapp.group_broker import control_plane_broker, provision_topic, tenant_client_config
from webapp.accounts.models import Role
from webapp.audit.models import AuditEvent

pytestmark = pytest.mark.django_db

TRANSACTIONS = "/api/v1/transactions"


def test_transactions_api_against_a_real_broker(acme: TenantFixture, globex: TenantFixture, settings, tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    with control_plane_broker(tmp_path / "broker", settings) as broker:
        provision_topic(acme.actor(), "orders", partitions=2)
        config = tenant_client_config(acme.actor())
        producer_id, epoch = open_transaction(config, "billing-app", "orders", 0)
        viewer, developer = acme.client(Role.VIEWER), acme.client(Role.DEVELOPER)

        listed = viewer.get(TRANSACTIONS)
        assert listed.status_code == 200, listed.json()
        [transaction] = listed.json()["data"]
        assert (transaction["transactional_id"], transaction["state"], transaction["producer_id"], transaction["producer_epoch"]) == (
            "billing-app",
            "Ongoing",
            producer_id,
            epoch,
        )
        assert transaction["partitions"] == [{"topic_name": "orders", "partition_id": 0}]
        assert transaction["hanging"] is False and transaction["open_for_ms"] >= 0 and transaction["transaction_timeout_ms"] == 60_000
        assert transaction["metadata"]["self"].endswith("/api/v1/transactions/billing-app")
        assert viewer.get(TRANSACTIONS, {"state": "CompleteAbort"}).json()["data"] == []
        assert viewer.get(TRANSACTIONS, {"state": "Sleeping"}).status_code == 400
        assert viewer.get(f"{TRANSACTIONS}/billing-app").json()["state"] == "Ongoing"
        assert viewer.get(f"{TRANSACTIONS}/unknown-app").status_code == 404
        assert globex.client(Role.OWNER).get(f"{TRANSACTIONS}/billing-app").status_code == 404
        assert globex.client(Role.OWNER).get(TRANSACTIONS).json()["data"] == []

        assert viewer.post(f"{TRANSACTIONS}/billing-app:abort").status_code == 403
        with caplog.at_level(logging.INFO, logger="weir.audit"):
            aborted = developer.post(f"{TRANSACTIONS}/billing-app:abort")
        assert aborted.status_code == 204
        [record] = [record for record in caplog.records if record.name == "weir.audit"]
        assert record.audit == {  # type: ignore[attr-defined]
            "action": "transaction.abort",
            "tenant": acme.tenant.public_id,
            "transactional_id": "billing-app",
            "actor": acme.actor(Role.DEVELOPER).principal,
            "door": "api",
        }
        assert AuditEvent.objects.filter(tenant=acme.tenant, action="transaction.abort", target="billing-app", door="rest").exists()
        deadline = time.monotonic() + 20
        while (state := viewer.get(f"{TRANSACTIONS}/billing-app").json()["state"]) != "CompleteAbort":
            assert time.monotonic() < deadline, state
            time.sleep(0.05)
        again = developer.post(f"{TRANSACTIONS}/billing-app:abort")
        assert again.status_code == 409 and "no transaction to abort" in again.json()["message"]
        assert developer.post(f"{TRANSACTIONS}/unknown-app:abort").status_code == 404

        assert viewer.get(f"{TRANSACTIONS}:hanging", {"topic": "orders"}).json()["data"] == []
        lost_id, lost_epoch = hang_transaction(config, broker, "orders", 1)  # last: the broker restarts without its coordinator's log
        hanging = viewer.get(f"{TRANSACTIONS}:hanging", {"topic": "orders"})
        assert hanging.status_code == 200, hanging.json()
        [found] = hanging.json()["data"]
        assert (found["topic_name"], found["partition_id"], found["producer_id"], found["producer_epoch"], found["start_offset"]) == (
            "orders",
            1,
            lost_id,
            lost_epoch,
            0,
        )
        assert viewer.get(f"{TRANSACTIONS}:hanging", {"topic": "missing"}).status_code == 404
        assert viewer.get(f"{TRANSACTIONS}:hanging").status_code == 400
        assert globex.client(Role.OWNER).get(f"{TRANSACTIONS}:hanging", {"topic": "orders"}).status_code == 404
