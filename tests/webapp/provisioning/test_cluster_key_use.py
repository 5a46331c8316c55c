"""Cluster keys are used on brokers: the reconciler records the latest use any broker reports."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from grpc_protos.weir.v1 import admin_pb2
from webapp.accounts.actions.key_use import do_record_cluster_key_use
from webapp.accounts.models import ApiKey, ApiKeyKind, ServiceAccount, Tenant
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
