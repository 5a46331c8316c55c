"""A control plane with something of everything a backup holds, made through the domain actions.

Two tenants (one with a quota and a pending invitation), members, a service account with a
cluster key and a revoked one, a member's cloud key, ACLs, topics with configs placed on
three brokers, the internal topics of an active controller, a Django group with permissions.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

from webapp.accounts.actions.keys import KeyOwner, do_create_key, do_revoke_key
from webapp.accounts.actions.members import do_invite
from webapp.accounts.actions.service_accounts import do_create_service_account
from webapp.accounts.actions.signup import do_sign_up
from webapp.accounts.identity import Actor
from webapp.accounts.models import Membership, Role, ServiceAccount
from webapp.catalog.actions.acls import check_create_acl, do_create_acl
from webapp.catalog.actions.quotas import do_set_quota
from webapp.catalog.actions.topics import check_create_topic, do_create_topic
from webapp.controller.epoch import become_active
from webapp.controller.internal_topics import ensure_internal_topics
from webapp.fleet.models import BrokerNode, BrokerState

PASSWORD = "a-long-enough-password-1"


@dataclass
class ControlPlane:
    owner: Actor
    service_account: ServiceAccount
    cluster_key_id: str
    cluster_secret: str


@pytest.fixture(autouse=True)
def fast_password_hashing(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def actor_of(membership: Membership) -> Actor:
    return Actor(tenant=membership.tenant, role=membership.role, membership=membership)


def register_brokers(ports: dict[int, int]) -> None:
    for node_id, port in ports.items():
        BrokerNode.objects.create(node_id=node_id, host="127.0.0.1", port=port, rack=f"rack-{node_id % 2}", state=BrokerState.ONLINE)


def grant(owner: Actor, principal: str, resource_type: str, resource_name: str, operation: str, pattern_type: str = "PREFIXED") -> None:
    binding = check_create_acl(
        owner,
        resource_type=resource_type,
        resource_name=resource_name,
        pattern_type=pattern_type,
        principal=principal,
        host="*",
        operation=operation,
        permission="ALLOW",
    )
    do_create_acl(owner, binding)


def build_control_plane(*, replication_factor: int = 3) -> ControlPlane:
    """Everything of the module docstring; brokers must be registered first."""
    acme = do_sign_up("acme-owner", "owner@acme.example", PASSWORD, "Acme")
    owner = actor_of(acme.membership)
    developer = get_user_model().objects.create_user("acme-dev", "dev@acme.example", PASSWORD, first_name="Ada")
    developer_membership = Membership.objects.create(tenant=owner.tenant, user=developer, role=Role.DEVELOPER)
    do_create_key(owner, "cloud", KeyOwner(membership=developer_membership), "dev's REST key")
    account = do_create_service_account(owner, "orders-app", "writes orders", Role.DEVELOPER)
    cluster = do_create_key(owner, "cluster", KeyOwner(service_account=account), "orders producer")
    revoked = do_create_key(owner, "cluster", KeyOwner(service_account=account), "leaked, revoked")
    do_revoke_key(owner, revoked.key)
    grant(owner, account.principal, "TOPIC", "orders", "WRITE")
    grant(owner, account.principal, "TOPIC", "orders", "DESCRIBE")
    grant(owner, account.principal, "GROUP", "billing", "READ", pattern_type="LITERAL")
    do_set_quota(owner, 1 << 20, None)
    do_invite(owner, "new@acme.example", Role.VIEWER)
    for name, partitions, configs in (("orders", 3, {"retention.ms": "86400000", "cleanup.policy": "compact"}), ("audit", 1, {})):
        do_create_topic(owner, check_create_topic(owner, name, partitions, replication_factor, configs))

    globex = do_sign_up("globex-owner", "owner@globex.example", PASSWORD, "Globex", plan="free")
    globex_owner = actor_of(globex.membership)
    do_create_topic(globex_owner, check_create_topic(globex_owner, "events", 2, 1, {}))
    grant(globex_owner, "User:*", "TOPIC", "events", "READ", pattern_type="LITERAL")

    ensure_internal_topics(controller_epoch=become_active("test-controller"))

    operators = Group.objects.create(name="operators")
    operators.permissions.set(Permission.objects.filter(content_type__app_label="fleet"))
    staff = get_user_model().objects.create_user("operator", "ops@weir.example", PASSWORD, is_staff=True)
    staff.groups.add(operators)
    staff.user_permissions.add(Permission.objects.get(content_type__app_label="accounts", codename="view_tenant"))
    return ControlPlane(owner=owner, service_account=account, cluster_key_id=cluster.key.key_id, cluster_secret=cluster.secret)
