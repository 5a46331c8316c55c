"""Fixtures of the REST API tests: tenants with a member of every role, authenticated clients
(cloud keys over HTTP Basic, or a signed-in session), and registered brokers.

Data is set up through the domain actions, as users would create it; assertions read
models directly.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from tests.support.processes import free_port
from webapp.accounts.actions.keys import KeyOwner, do_create_key
from webapp.accounts.actions.signup import do_sign_up
from webapp.accounts.identity import Actor
from webapp.accounts.models import ApiKey, Membership, Role, ServiceAccount, Tenant
from webapp.fleet.models import BrokerNode, BrokerState

PASSWORD = "correct-horse-battery-staple-42"


def basic_client(key_id: str, secret: str) -> APIClient:
    client = APIClient()
    token = base64.b64encode(f"{key_id}:{secret}".encode()).decode()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {token}")
    return client


@dataclass
class TenantFixture:
    """A tenant with one member per role; ``client(role)`` calls the API with that member's
    cloud key, ``actor(role)`` is that member acting directly."""

    tenant: Tenant
    members: dict[str, Membership] = field(default_factory=dict)
    secrets: dict[str, tuple[str, str]] = field(default_factory=dict)

    def actor(self, role: str = Role.OWNER) -> Actor:
        membership = self.members[role]
        return Actor(tenant=self.tenant, role=membership.role, membership=membership)

    def client(self, role: str = Role.OWNER) -> APIClient:
        return basic_client(*self.secrets[role])

    def key(self, role: str) -> ApiKey:
        return ApiKey.objects.get(key_id=self.secrets[role][0])


def _make_tenant(name: str) -> TenantFixture:
    signed_up = do_sign_up(f"{name}-owner", f"owner@{name}.example", PASSWORD, f"{name} Inc")
    fixture = TenantFixture(tenant=signed_up.tenant, members={Role.OWNER: signed_up.membership})
    for role in (Role.ADMIN, Role.DEVELOPER, Role.VIEWER):
        user = get_user_model().objects.create_user(username=f"{name}-{role}", email=f"{role}@{name}.example", password=PASSWORD)
        fixture.members[role] = Membership.objects.create(tenant=signed_up.tenant, user=user, role=role)
    for role, membership in fixture.members.items():
        created = do_create_key(fixture.actor(Role.OWNER), "cloud", KeyOwner(membership=membership), f"{role} key")
        fixture.secrets[role] = (created.key.key_id, created.secret)
    return fixture


@pytest.fixture
def tenant_factory(db: None) -> Callable[[str], TenantFixture]:
    return _make_tenant


@pytest.fixture
def acme(tenant_factory: Callable[[str], TenantFixture]) -> TenantFixture:
    return tenant_factory("acme")


@pytest.fixture
def globex(tenant_factory: Callable[[str], TenantFixture]) -> TenantFixture:
    return tenant_factory("globex")


@pytest.fixture
def registered_broker(db: None) -> BrokerNode:
    """One registered broker whose port nothing listens on: placement works, and describing
    partitions finds the broker down at once (connection refused)."""
    return BrokerNode.objects.create(node_id=1, host="127.0.0.1", port=free_port(), state=BrokerState.ONLINE)


@pytest.fixture
def service_account(acme: TenantFixture) -> ServiceAccount:
    return ServiceAccount.objects.create(tenant=acme.tenant, name="orders-app", role=Role.DEVELOPER)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings) -> None:  # type: ignore[no-untyped-def]
    """Every fixture tenant creates four users; the production hasher's deliberate slowness
    would dominate the suite's runtime."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
