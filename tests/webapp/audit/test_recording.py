"""Audit events are written by the actions, in their transaction, with the door of the request."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from django.test import Client

from grpc_protos.weir.v1 import controller_pb2
from webapp.accounts.facade import Conflict, Role
from webapp.audit.context import audit_source
from webapp.audit.models import AuditEvent, Door
from webapp.audit.recording import clean_summary, record_event
from webapp.catalog.actions.acls import check_create_acl, do_create_acl
from webapp.controller import acl_requests
from webapp.controller.servicer import ControllerServicer
from webapp.provisioning.facade import INTERNAL_TOKEN_METADATA

pytestmark = pytest.mark.django_db

BINDING = {
    "resource_type": "TOPIC",
    "resource_name": "orders",
    "pattern_type": "LITERAL",
    "host": "*",
    "operation": "READ",
    "permission": "ALLOW",
}


def test_rest_change_records_actor_key_address_and_rest_door(acme, service_account) -> None:  # type: ignore[no-untyped-def]
    response = acme.client(Role.ADMIN).post("/api/v1/acls", {**BINDING, "principal": service_account.principal}, format="json", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 201, response.content
    [event] = AuditEvent.objects.filter(tenant=acme.tenant, action="acl.create")
    assert (event.action, event.door, event.client_ip) == ("acl.create", Door.REST, "203.0.113.9")
    assert event.actor_principal == acme.members[Role.ADMIN].principal
    assert event.api_key_id == acme.secrets[Role.ADMIN][0]
    assert event.summary["principal"] == service_account.principal and event.summary["operation"] == "READ"


def test_dashboard_change_records_the_dashboard_door(acme, service_account, registered_broker) -> None:  # type: ignore[no-untyped-def]
    client = Client(REMOTE_ADDR="198.51.100.4")
    client.force_login(acme.members[Role.OWNER].user)
    response = client.post("/acls/new/", {**BINDING, "principal": service_account.principal})
    assert response.status_code == 302
    event = AuditEvent.objects.get(tenant=acme.tenant, action="acl.create")
    assert (event.door, event.client_ip, event.actor_name, event.api_key_id) == (Door.DASHBOARD, "198.51.100.4", "acme-owner", "")


def test_change_forwarded_by_a_broker_records_its_door_and_the_clients_address(acme, service_account, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The servicer closes the thread's database connection after each call; here that is the test's transaction.
    monkeypatch.setattr("webapp.controller.servicer.close_old_connections", lambda: None)
    service = SimpleNamespace(create_acls=lambda forwarded: acl_requests.create_acls(forwarded.caller, list(forwarded.creations)).response)
    servicer = ControllerServicer(service, internal_token="internal")  # type: ignore[arg-type]
    context = SimpleNamespace(invocation_metadata=lambda: [(INTERNAL_TOKEN_METADATA, "internal")])
    caller = controller_pb2.ForwardedCaller(tenant_id=acme.tenant.public_id, principal=service_account.principal, client_host="192.0.2.7", door="kafka")
    request = controller_pb2.ForwardedCreateAclsRequest(
        caller=caller, creations=[controller_pb2.ForwardedAclBinding(**BINDING, principal=service_account.principal)]
    )
    response = servicer.CreateAcls(request, context)  # type: ignore[arg-type]
    assert [result.error_code for result in response.results] == [0]
    event = AuditEvent.objects.get(tenant=acme.tenant, action="acl.create")
    assert (event.door, event.client_ip, event.actor_principal) == (Door.KAFKA, "192.0.2.7", service_account.principal)


def test_a_refused_change_leaves_no_event(acme, service_account) -> None:  # type: ignore[no-untyped-def]
    actor = acme.actor(Role.OWNER)
    binding = check_create_acl(actor, **BINDING, principal=service_account.principal)
    do_create_acl(actor, binding)
    with pytest.raises(Conflict):
        do_create_acl(actor, binding)
    assert AuditEvent.objects.filter(tenant=acme.tenant, action="acl.create").count() == 1


def test_key_creation_and_revocation_are_recorded_without_the_secret(acme) -> None:  # type: ignore[no-untyped-def]
    response = acme.client(Role.OWNER).post("/api/v1/api-keys", {"kind": "cluster", "owner": acme.members[Role.DEVELOPER].public_id}, format="json")
    assert response.status_code == 201, response.content
    key_id, secret = response.json()["id"], response.json()["secret"]
    assert acme.client(Role.OWNER).delete(f"/api/v1/api-keys/{key_id}").status_code in (200, 202, 204)
    events = {event.action: event for event in AuditEvent.objects.filter(tenant=acme.tenant, target=key_id)}
    assert set(events) == {"api_key.create", "api_key.revoke"}
    assert secret not in str(list(AuditEvent.objects.values_list("summary", flat=True)))


def test_summary_drops_secret_looking_keys_and_bounds_values() -> None:
    cleaned = clean_summary({"name": "x" * 2000, "client_secret": "s3cret", "nested": {"password": "p", "role": "admin"}})
    assert cleaned == {"name": "x" * 500, "nested": {"role": "admin"}}


def test_events_older_than_the_retention_go_when_the_tenant_records_another(acme, settings) -> None:  # type: ignore[no-untyped-def]
    settings.AUDIT_LOG_RETENTION_DAYS = 30
    actor = acme.actor(Role.OWNER)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with audit_source(Door.REST, "127.0.0.1"):
        record_event(actor, "tenant.update", "old", clock=lambda: start)
        record_event(actor, "tenant.update", "recent", clock=lambda: start + timedelta(days=20))
        record_event(actor, "tenant.update", "new", clock=lambda: start + timedelta(days=31))
    assert sorted(AuditEvent.objects.filter(tenant=acme.tenant, action="tenant.update").values_list("target", flat=True)) == ["new", "recent"]


def test_without_a_request_the_door_is_system(acme) -> None:  # type: ignore[no-untyped-def]
    event = record_event(acme.actor(Role.OWNER), "tenant.update", "x")
    assert (event.door, event.client_ip) == (Door.SYSTEM, None)


def test_brokers_forward_the_door_and_the_clients_address() -> None:
    from broker_nodes.security.access import CallContext, CallerKind
    from broker_nodes.server.topic_forwarding import forwarded_caller

    grpc_call = CallContext("tn-1", "User:sa-1", "192.0.2.5", CallerKind.CLIENT)
    kafka_call = CallContext("tn-1", "User:sa-1", "192.0.2.6", CallerKind.CLIENT, door="kafka")
    assert (forwarded_caller(grpc_call).door, forwarded_caller(grpc_call).client_host) == ("sdk", "192.0.2.5")
    assert (forwarded_caller(kafka_call).door, forwarded_caller(kafka_call).client_host) == ("kafka", "192.0.2.6")


def test_sign_up_starts_the_tenants_log(acme) -> None:  # type: ignore[no-untyped-def]
    event = AuditEvent.objects.get(tenant=acme.tenant, action="tenant.create")
    assert (event.actor_principal, event.actor_name, event.summary["plan"]) == (acme.members[Role.OWNER].principal, "acme-owner", acme.tenant.plan)
