"""ACL administration forwarded by brokers (Kafka's CreateAcls/DescribeAcls/DeleteAcls): through the
controller's real gRPC servicer into the catalog's ACL bindings, with a security push, per tenant."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import grpc
import pytest
from django.utils import timezone

from grpc_protos.weir.v1 import controller_pb2, controller_pb2_grpc
from webapp.accounts.actions.keys import KeyOwner, do_create_key
from webapp.accounts.actions.signup import do_sign_up
from webapp.accounts.identity import Actor
from webapp.accounts.models import ApiKey, Role, ServiceAccount, Tenant
from webapp.catalog.models import AclBinding
from webapp.controller import service as controller_service
from webapp.controller.service import ControllerService
from webapp.controller.servicer import create_controller_server
from webapp.provisioning import tasks
from weir.errors import ErrorCode

TOKEN = "controller-test-token"
METADATA = (("x-weir-internal-token", TOKEN),)


@dataclass
class Tenancy:
    tenant: Tenant
    account: ServiceAccount
    key: ApiKey

    def caller(self) -> controller_pb2.ForwardedCaller:
        return controller_pb2.ForwardedCaller(tenant_id=self.tenant.public_id, principal=self.account.principal, api_key=self.key.key_id)


@dataclass
class Controller:
    stub: controller_pb2_grpc.ControllerStub
    security_pushes: list[int] = field(default_factory=list)

    def create(self, tenancy: Tenancy, *bindings: controller_pb2.ForwardedAclBinding) -> list[controller_pb2.AclCreationResult]:
        request = controller_pb2.ForwardedCreateAclsRequest(caller=tenancy.caller(), creations=bindings)
        return list(self.stub.CreateAcls(request, metadata=METADATA, timeout=30).results)

    def describe(self, tenancy: Tenancy, **conditions: str) -> controller_pb2.DescribeAclsResponse:
        request = controller_pb2.ForwardedDescribeAclsRequest(caller=tenancy.caller(), filter=controller_pb2.ForwardedAclFilter(**conditions))
        return self.stub.DescribeAcls(request, metadata=METADATA, timeout=30)

    def delete(self, tenancy: Tenancy, *filters: controller_pb2.ForwardedAclFilter) -> list[controller_pb2.DeleteAclsFilterResult]:
        request = controller_pb2.ForwardedDeleteAclsRequest(caller=tenancy.caller(), filters=filters)
        return list(self.stub.DeleteAcls(request, metadata=METADATA, timeout=30).results)


def binding(tenancy: Tenancy, resource_name: str = "orders", operation: str = "READ", **overrides: str) -> controller_pb2.ForwardedAclBinding:
    values = {
        "resource_type": "TOPIC",
        "resource_name": resource_name,
        "pattern_type": "LITERAL",
        "principal": tenancy.account.principal,
        "host": "*",
        "operation": operation,
        "permission": "ALLOW",
        **overrides,
    }
    return controller_pb2.ForwardedAclBinding(**values)


def sign_up(name: str) -> Tenancy:
    signed_up = do_sign_up(name.lower(), f"{name.lower()}@example.com", "correct horse battery staple 42", name)
    owner = Actor(tenant=signed_up.tenant, role=Role.OWNER, membership=signed_up.membership)
    # A viewer in the dashboard: on the data plane its cluster key is governed by ACLs alone.
    account = ServiceAccount.objects.create(tenant=signed_up.tenant, name="app", role=Role.VIEWER)
    key = do_create_key(owner, "cluster", KeyOwner(service_account=account), "app").key
    return Tenancy(signed_up.tenant, account, key)


@pytest.fixture
def controller(transactional_db: None, settings, monkeypatch) -> Iterator[Controller]:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    monkeypatch.setattr(tasks.run_job, "delay", lambda job_id: None)
    security_pushes: list[int] = []
    monkeypatch.setattr(controller_service, "push_security", lambda: security_pushes.append(1))
    service = ControllerService(session_timeout_ms=9000, first_epoch=1, push=lambda: None)
    server, port = create_controller_server(service, "127.0.0.1:0", internal_token=TOKEN)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Controller(controller_pb2_grpc.ControllerStub(channel), security_pushes)
    finally:
        channel.close()
        server.stop(None)


def test_created_bindings_land_in_the_catalog_and_are_pushed(controller: Controller) -> None:
    acme = sign_up("Acme")
    results = controller.create(
        acme, binding(acme), binding(acme, "orders-", "WRITE", pattern_type="PREFIXED"), binding(acme, "etl", "WRITE", resource_type="TRANSACTIONAL_ID")
    )
    assert [(result.error_code, result.error_message) for result in results] == [(0, ""), (0, ""), (0, "")]
    stored = AclBinding.objects.filter(tenant=acme.tenant).order_by("pk")
    assert [(row.resource_type, row.resource_name, row.pattern_type, row.operation) for row in stored] == [
        ("TOPIC", "orders", "LITERAL", "READ"),
        ("TOPIC", "orders-", "PREFIXED", "WRITE"),
        ("TRANSACTIONAL_ID", "etl", "LITERAL", "WRITE"),
    ]
    assert controller.security_pushes == [1]
    again = controller.create(acme, binding(acme))  # Kafka: an existing binding is created again without error
    assert [result.error_code for result in again] == [0]
    assert AclBinding.objects.filter(tenant=acme.tenant).count() == 3


def test_invalid_bindings_are_refused_one_by_one(controller: Controller) -> None:
    acme = sign_up("Acme")
    results = controller.create(
        acme,
        binding(acme, operation="CLUSTER_ACTION"),
        binding(acme, principal="sa-nobody"),  # Kafka's form is User:<name> (any name: see test_forwarded_acl_principals.py)
        binding(acme, resource_type="DELEGATION_TOKEN"),
        binding(acme, "fine"),
    )
    assert [result.error_code for result in results] == [ErrorCode.INVALID_REQUEST] * 3 + [0]
    assert "operation" in results[0].error_message and "User:<name>" in results[1].error_message and "resource_type" in results[2].error_message
    assert list(AclBinding.objects.filter(tenant=acme.tenant).values_list("resource_name", flat=True)) == ["fine"]


def test_describe_and_delete_see_only_the_callers_tenant(controller: Controller) -> None:
    acme, globex = sign_up("Acme"), sign_up("Globex")
    controller.create(acme, binding(acme, "orders"), binding(acme, "payments", "WRITE"))
    controller.create(globex, binding(globex, "orders"))
    described = controller.describe(acme)
    assert described.error_code == 0
    assert sorted((found.resource_name, found.operation) for found in described.bindings) == [("orders", "READ"), ("payments", "WRITE")]
    assert [found.resource_name for found in controller.describe(acme, operation="WRITE").bindings] == ["payments"]
    assert [found.resource_name for found in controller.describe(acme, pattern_type="MATCH", resource_name="orders").bindings] == ["orders"]

    [deleted] = controller.delete(acme, controller_pb2.ForwardedAclFilter(resource_name="orders"))
    assert [(found.resource_name, found.principal) for found in deleted.deleted] == [("orders", acme.account.principal)]
    assert AclBinding.objects.filter(tenant=globex.tenant, resource_name="orders").exists()
    assert [found.resource_name for found in controller.describe(acme).bindings] == ["payments"]
    [nothing] = controller.delete(acme, controller_pb2.ForwardedAclFilter(resource_name="orders"))
    assert (nothing.error_code, list(nothing.deleted)) == (0, [])


def test_a_revoked_key_administers_nothing(controller: Controller) -> None:
    acme = sign_up("Acme")
    ApiKey.objects.filter(pk=acme.key.pk).update(revoked_at=timezone.now())
    [result] = controller.create(acme, binding(acme))
    assert result.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert controller.describe(acme).error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert not AclBinding.objects.filter(tenant=acme.tenant).exists()


def test_forwarded_changes_are_audited_with_the_brokers_door_key_and_client_address(controller: Controller) -> None:
    from webapp.audit.models import AuditEvent

    acme = sign_up("Acme")
    caller = controller_pb2.ForwardedCaller(
        tenant_id=acme.tenant.public_id, principal=acme.account.principal, api_key=acme.key.key_id, client_host="192.0.2.4", door="kafka"
    )
    request = controller_pb2.ForwardedCreateAclsRequest(caller=caller, creations=[binding(acme)])
    assert [result.error_code for result in controller.stub.CreateAcls(request, metadata=METADATA, timeout=30).results] == [0]
    controller.delete(acme, controller_pb2.ForwardedAclFilter(resource_type="TOPIC", resource_name="orders"))  # an SDK caller: door "sdk" by default
    events = {event.action: event for event in AuditEvent.objects.filter(tenant=acme.tenant, action__startswith="acl.")}
    created, deleted = events["acl.create"], events["acl.delete"]
    assert (created.door, created.client_ip, created.api_key_id, created.actor_principal) == ("kafka", "192.0.2.4", acme.key.key_id, acme.account.principal)
    assert (deleted.door, deleted.client_ip) == ("sdk", None)
