"""Fixtures of the dashboard view tests: tenants made by the real sign-up action, members of
every role, a registered broker (placement needs one), signed-in test clients.

The registered broker listens nowhere: pages that ask brokers for offsets show partitions
as unavailable, which is what they must do when a broker is down.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.support.processes import free_port
from webapp.accounts.actions.signup import do_sign_up
from webapp.accounts.identity import Actor
from webapp.accounts.models import Membership, Role, Tenant
from webapp.fleet.models import BrokerNode, BrokerState

PASSWORD = "correct horse battery staple 42"


@dataclass
class Member:
    """A signed-in member: its membership, an actor for calling actions, a logged-in client."""

    membership: Membership
    client: Client

    @property
    def tenant(self) -> Tenant:
        return self.membership.tenant

    @property
    def actor(self) -> Actor:
        return Actor(tenant=self.membership.tenant, role=self.membership.role, membership=self.membership)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings) -> None:  # type: ignore[no-untyped-def]
    """Users are created by the dozen here; production's slow hash would dominate the run."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def registered_broker(db: None) -> BrokerNode:
    return BrokerNode.objects.create(node_id=1, host="127.0.0.1", port=free_port(), state=BrokerState.ONLINE)


@pytest.fixture
def make_tenant(db: None, registered_broker: BrokerNode) -> Callable[..., Member]:
    """``make_tenant("acme")``: a tenant through the sign-up action; returns its signed-in owner."""

    def make(name: str) -> Member:
        signed_up = do_sign_up(f"{name}-owner", f"owner@{name}.example", PASSWORD, name.capitalize())
        client = Client()
        client.force_login(signed_up.user)
        return Member(signed_up.membership, client)

    return make


@pytest.fixture
def make_member(db: None) -> Callable[[Tenant, str], Member]:
    """``make_member(tenant, Role.VIEWER)``: another user of ``tenant`` with that role."""

    def make(tenant: Tenant, role: str) -> Member:
        user = get_user_model().objects.create_user(username=f"{role}-{tenant.public_id}", email=f"{role}@{tenant.slug}.example", password=PASSWORD)
        membership = Membership.objects.create(tenant=tenant, user=user, role=role)
        client = Client()
        client.force_login(user)
        return Member(Membership.objects.select_related("tenant", "user").get(pk=membership.pk), client)

    return make


@pytest.fixture
def owner(make_tenant: Callable[..., Member]) -> Member:
    return make_tenant("acme")


@pytest.fixture
def other_owner(make_tenant: Callable[..., Member]) -> Member:
    return make_tenant("globex")


@pytest.fixture
def roles(owner: Member, make_member: Callable[[Tenant, str], Member]) -> dict[str, Member]:
    """One member of each role in ``owner``'s tenant."""
    return {Role.OWNER: owner, **{role: make_member(owner.tenant, role) for role in (Role.ADMIN, Role.DEVELOPER, Role.VIEWER)}}
