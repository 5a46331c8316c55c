"""Session authentication for the browser: CSRF on unsafe methods, tenant choice."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.webapp.api.conftest import TenantFixture
from webapp.accounts.models import Membership, Role
from webapp.fleet.models import BrokerNode

pytestmark = pytest.mark.django_db


def signed_in(fixture: TenantFixture, role: str) -> APIClient:
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(fixture.members[role].user)
    return client


def test_session_post_without_csrf_token_is_refused(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    client = signed_in(acme, Role.DEVELOPER)

    response = client.post("/api/v1/topics", {"topic_name": "t"}, format="json")

    assert response.status_code == 403
    assert "CSRF" in response.json()["message"]


def test_session_post_with_csrf_token_succeeds(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    client = signed_in(acme, Role.DEVELOPER)
    token = "a" * 32
    client.cookies["csrftoken"] = token

    response = client.post("/api/v1/topics", {"topic_name": "t"}, format="json", HTTP_X_CSRFTOKEN=token)

    assert response.status_code == 201, response.json()
    assert response.json()["job"]["state"] == "PENDING"


def test_user_in_two_tenants_picks_one_with_the_header(acme: TenantFixture, globex: TenantFixture) -> None:
    user = acme.members[Role.VIEWER].user
    Membership.objects.create(tenant=globex.tenant, user=user, role=Role.ADMIN)
    client = signed_in(acme, Role.VIEWER)

    default = client.get("/api/v1/tenant").json()
    chosen = client.get("/api/v1/tenant", HTTP_X_WEIR_TENANT=globex.tenant.public_id).json()
    session = client.session
    session["tenant_id"] = globex.tenant.public_id
    session.save()
    remembered = client.get("/api/v1/tenant").json()

    assert (default["id"], default["role"]) == (acme.tenant.public_id, Role.VIEWER)
    assert (chosen["id"], chosen["role"]) == (globex.tenant.public_id, Role.ADMIN)
    assert remembered["id"] == globex.tenant.public_id


def test_header_naming_a_foreign_tenant_is_refused(acme: TenantFixture, globex: TenantFixture) -> None:
    response = signed_in(acme, Role.OWNER).get("/api/v1/topics", HTTP_X_WEIR_TENANT=globex.tenant.public_id)

    assert response.status_code == 401
    assert "results" not in response.json()
