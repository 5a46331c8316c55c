"""Cluster keys are used on brokers: the reconciler records the latest use any broker reports."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from grpc_protos.weir.v1 import admin_pb2
from webapp.accounts.actions.key_use import SeenApplication, do_record_cluster_key_use, do_record_key_applications
from webapp.accounts.models import KEY_APPLICATION_FIELD_CHARS, MAX_KEY_APPLICATIONS, ApiKey, ApiKeyKind, ServiceAccount, Tenant
from webapp.provisioning.reconciler import _record_cluster_key_use

pytestmark = pytest.mark.django_db

USED_AT = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def milliseconds(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


@pytest.fixture
def account() -> ServiceAccount:
    tenant = Tenant.objects.create(name="Acme", slug="acme")
    return ServiceAccount.objects.create(tenant=tenant, name="app")


def key(account: ServiceAccount, key_id: str, kind: str = ApiKeyKind.CLUSTER, last_used_at: datetime | None = None) -> ApiKey:
    return ApiKey.objects.create(
        tenant=account.tenant, kind=kind, key_id=key_id, secret_sha256="0" * 64, owner_service_account=account, last_used_at=last_used_at
    )


def state(*uses: tuple[str, int]) -> admin_pb2.DescribeStateResponse:
    return admin_pb2.DescribeStateResponse(credential_uses=[admin_pb2.CredentialUse(api_key=api_key, last_used_ms=used) for api_key, used in uses])


def test_latest_use_reported_by_any_broker_becomes_last_used_at(account) -> None:
    cluster_key = key(account, "KEYONE")
    _record_cluster_key_use([state(("KEYONE", milliseconds(USED_AT))), state(("KEYONE", milliseconds(USED_AT + timedelta(seconds=5))))])
    cluster_key.refresh_from_db()
    assert cluster_key.last_used_at == USED_AT + timedelta(seconds=5)


def test_last_used_at_never_moves_backwards(account) -> None:
    cluster_key = key(account, "KEYONE", last_used_at=USED_AT)
    assert do_record_cluster_key_use({"KEYONE": milliseconds(USED_AT - timedelta(hours=1))}) == 0
    cluster_key.refresh_from_db()
    assert cluster_key.last_used_at == USED_AT


def test_only_cluster_keys_are_touched_and_unknown_ids_are_ignored(account) -> None:
    cloud_key = key(account, "CLOUDKEY", kind=ApiKeyKind.CLOUD)
    assert do_record_cluster_key_use({"CLOUDKEY": milliseconds(USED_AT), "NO-SUCH-KEY": milliseconds(USED_AT)}) == 0
    cloud_key.refresh_from_db()
    assert cloud_key.last_used_at is None


def application(client_id: str, first: datetime, last: datetime, address: str = "10.0.0.1") -> admin_pb2.ClientApplication:
    return admin_pb2.ClientApplication(
        client_id=client_id,
        software_name="apache-kafka-java",
        software_version="3.7.0",
        address=address,
        first_seen_ms=milliseconds(first),
        last_seen_ms=milliseconds(last),
    )


def test_applications_any_broker_saw_are_recorded_with_their_widest_first_and_last_seen(account) -> None:
    cluster_key = key(account, "KEYONE")
    one = admin_pb2.CredentialUse(api_key="KEYONE", last_used_ms=milliseconds(USED_AT), applications=[application("billing", USED_AT, USED_AT)])
    two = admin_pb2.CredentialUse(
        api_key="KEYONE",
        last_used_ms=milliseconds(USED_AT),
        applications=[application("billing", USED_AT - timedelta(hours=1), USED_AT + timedelta(minutes=5))],
    )
    _record_cluster_key_use([admin_pb2.DescribeStateResponse(credential_uses=[one]), admin_pb2.DescribeStateResponse(credential_uses=[two])])
    (row,) = cluster_key.applications.all()
    assert (row.client_id, row.software, row.address) == ("billing", "apache-kafka-java 3.7.0", "10.0.0.1")
    assert (row.first_seen_at, row.last_seen_at) == (USED_AT - timedelta(hours=1), USED_AT + timedelta(minutes=5))
    assert (
        do_record_key_applications(
            {"KEYONE": [SeenApplication("billing", "apache-kafka-java", "3.7.0", "10.0.0.1", milliseconds(USED_AT), milliseconds(USED_AT))]}
        )
        == 0
    )


def test_each_key_keeps_its_most_recently_seen_applications_and_values_are_cleaned(account) -> None:
    cluster_key = key(account, "KEYONE")
    seen = [
        SeenApplication(f"app-{n}\x00" + "x" * 500, "", "", "10.0.0.1", 0, milliseconds(USED_AT + timedelta(seconds=n)))
        for n in range(MAX_KEY_APPLICATIONS + 5)
    ]
    do_record_key_applications({"KEYONE": seen[:10], "NO-SUCH-KEY": seen})
    do_record_key_applications({"KEYONE": seen[10:]})
    rows = list(cluster_key.applications.order_by("last_seen_at"))
    assert len(rows) == MAX_KEY_APPLICATIONS
    assert rows[0].client_id.startswith("app-5?") and len(rows[0].client_id) == KEY_APPLICATION_FIELD_CHARS
