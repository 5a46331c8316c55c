"""The web process holds no internal token: it reads partition state with tenant tokens, and a
tenant token opens only that tenant's partitions on the Admin service, and nothing else there."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

import grpc
import pytest

from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc
from tests.webapp.dashboard.conftest import Member
from tests.webapp.group_broker import control_plane_broker, provision_topic
from webapp import tenant_clients
from webapp.catalog.models import Topic
from webapp.provisioning.facade import describe_partitions
from weir.tenant_tokens import TENANT_TOKEN_HEADER

pytestmark = pytest.mark.django_db


def test_a_tenant_token_describes_only_its_tenants_partitions_and_changes_nothing(
    make_tenant: Callable[[str], Member],
    settings,
    tmp_path,  # type: ignore[no-untyped-def]
) -> None:
    acme, globex = make_tenant("acme"), make_tenant("globex")
    with control_plane_broker(tmp_path / "broker", settings, configs={"security.required": "true"}) as broker:
        provision_topic(acme.actor, "orders", partitions=2)
        orders = Topic.objects.get(tenant=acme.tenant, name="orders")
        provision_topic(globex.actor, "secret-plans", partitions=1)
        settings.WEIR_INTERNAL_TOKEN = ""  # as in the web process: describe_partitions must not need it
        descriptions = describe_partitions(orders)
        assert [(description.partition, description.available) for description in descriptions] == [(0, True), (1, True)]

        stub = admin_pb2_grpc.AdminStub(grpc.insecure_channel(broker.address))
        as_acme = ((TENANT_TOKEN_HEADER, tenant_clients.tenant_token(acme.tenant.public_id)),)
        state = stub.DescribeState(admin_pb2.DescribeStateRequest(), metadata=as_acme, timeout=10)
        assert {(entry.tenant_id, entry.topic) for entry in state.partitions} == {(acme.tenant.public_id, "orders")}
        assert list(state.credential_uses) == []
        # Every other Admin call needs the internal token.
        for call in (
            lambda: stub.ApplySecurity(admin_pb2.ApplySecurityRequest(version=99), metadata=as_acme, timeout=10),
            lambda: stub.ApplyPartitions(admin_pb2.ApplyPartitionsRequest(version=99), metadata=as_acme, timeout=10),
        ):
            with pytest.raises(grpc.RpcError) as refused:
                call()
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        # A forged or expired token describes nothing.
        expired = tenant_clients.tenant_token(acme.tenant.public_id, now_ms=1_000)
        with pytest.raises(grpc.RpcError) as refused:
            stub.DescribeState(admin_pb2.DescribeStateRequest(), metadata=((TENANT_TOKEN_HEADER, expired),), timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_the_web_process_settings_hold_no_internal_token(tmp_path) -> None:  # type: ignore[no-untyped-def]
    code = (
        "import webapp.wsgi\n"
        "from django.conf import settings\n"
        "assert settings.WEIR_INTERNAL_TOKEN == '', 'the web process keeps the internal token'\n"
        "assert len(bytes.fromhex(settings.WEIR_TENANT_TOKEN_KEY)) == 32\n"
    )
    environment = {key: value for key, value in os.environ.items() if key not in ("DJANGO_SETTINGS_MODULE", "WEIR_PROCESS_ROLE")}
    environment.update({"WEIR_DATA_DIR": str(tmp_path), "DJANGO_SECRET_KEY": "test-only-secret-key-for-the-web-role-check-0123456789"})
    completed = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr[-2000:]
    # Given only the key, it neither needs nor makes an internal token.
    separate = tmp_path / "web-alone"
    environment.update({"WEIR_DATA_DIR": str(separate), "WEIR_TENANT_TOKEN_KEY": "ab" * 32})
    environment.pop("WEIR_INTERNAL_TOKEN", None)
    completed = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert not list(separate.rglob("internal-token")), "the web process made an internal token"
