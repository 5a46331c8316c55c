"""Kafka's AdminClient doors accept any ``User:<name>`` principal, as Kafka does (confluent-kafka's
own integration test binds ``User:test-user-1``); the dashboard and REST still ask for an identity
of the tenant. Either way the binding is the tenant's own and malformed principals are refused."""

from __future__ import annotations

import pytest

from grpc_protos.weir.v1 import controller_pb2
from tests.webapp.api.conftest import TenantFixture
from webapp.accounts.facade import Role
from webapp.catalog.models import AclBinding
from webapp.controller import acl_requests
from weir.errors import ErrorCode

pytestmark = pytest.mark.django_db

BINDING = {"resource_type": "TOPIC", "resource_name": "orders", "pattern_type": "LITERAL", "host": "*", "operation": "READ", "permission": "ALLOW"}


def forwarded(acme: TenantFixture, *principals: str) -> list[tuple[int, str]]:
    caller = controller_pb2.ForwardedCaller(
        tenant_id=acme.tenant.public_id, principal=acme.members[Role.ADMIN].principal, client_host="192.0.2.1", door="kafka"
    )
    creations = [controller_pb2.ForwardedAclBinding(**BINDING, principal=principal) for principal in principals]
    return [(result.error_code, result.error_message) for result in acl_requests.create_acls(caller, creations).response.results]


def test_a_kafka_client_binds_a_principal_no_identity_has_yet_and_it_stays_the_tenants(acme: TenantFixture, globex: TenantFixture) -> None:
    assert forwarded(acme, "User:test-user-1") == [(ErrorCode.NO_ERROR, "")]
    stored = AclBinding.objects.get(principal="User:test-user-1")
    assert stored.tenant == acme.tenant and not AclBinding.objects.filter(tenant=globex.tenant).exists()


def test_malformed_principals_are_refused_naming_the_form(acme: TenantFixture) -> None:
    results = forwarded(acme, "test-user-1", "User:", "User:" + "x" * 200, "User:a\nb")
    assert [code for code, _ in results] == [ErrorCode.INVALID_REQUEST] * 4
    assert "User:<name>" in results[0][1] and "characters" in results[2][1] and "control" in results[3][1]
    assert not AclBinding.objects.exists()


def test_rest_still_asks_for_an_identity_of_the_tenant(acme: TenantFixture) -> None:
    response = acme.client(Role.ADMIN).post("/api/v1/acls", {**BINDING, "principal": "User:test-user-1"}, format="json")
    assert response.status_code == 400 and "principal" in response.json()["errors"]
    assert not AclBinding.objects.exists()
