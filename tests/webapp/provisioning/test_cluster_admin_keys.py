"""A member's cluster key acts with the member's role: the security snapshot marks an admin's or
owner's key ``cluster_admin`` (no ACLs needed, as Confluent Cloud's user keys with the
CloudClusterAdmin role), never a developer's or a service account's; a role change across the
admin line records SYNC_SECURITY so the brokers learn it."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from webapp.accounts.actions.keys import check_create_key, do_create_key
from webapp.accounts.actions.members import do_accept_invitation, do_change_role, do_invite
from webapp.accounts.actions.service_accounts import do_create_service_account
from webapp.accounts.actions.signup import do_sign_up
from webapp.accounts.identity import Actor
from webapp.accounts.models import ApiKey, ApiKeyKind, Membership, Role
from webapp.common.changes import JobKind
from webapp.provisioning.models import ProvisioningJob, SnapshotKind
from webapp.provisioning.snapshots import build_snapshots

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner() -> Actor:
    signed_up = do_sign_up("admin-keys-owner", "admin-keys-owner@example.com", "a-long-enough-password-1", "AdminKeys")
    return Actor(tenant=signed_up.tenant, role=signed_up.membership.role, membership=signed_up.membership)


def cluster_key(owner: Actor, owner_id: str) -> ApiKey:
    return do_create_key(owner, ApiKeyKind.CLUSTER, check_create_key(owner, ApiKeyKind.CLUSTER, owner_id, ""), "").key


def member(owner: Actor, name: str, role: str) -> Membership:
    invitation = do_invite(owner, f"{name}@example.com", role).invitation
    user = get_user_model().objects.create_user(username=name, email=f"{name}@example.com", password="a-long-enough-password-1")
    return do_accept_invitation(invitation, user)


def pushed_admin_flags() -> dict[str, bool]:
    security = build_snapshots([SnapshotKind.SECURITY]).security
    assert security is not None
    return {credential.api_key: credential.cluster_admin for credential in security.credentials}


def test_owner_and_admin_keys_are_cluster_admins_and_developer_and_service_account_keys_are_not(owner: Actor) -> None:
    assert owner.membership is not None
    owners = cluster_key(owner, owner.membership.public_id)
    admins = cluster_key(owner, member(owner, "admin-keys-admin", Role.ADMIN).public_id)
    developers = cluster_key(owner, member(owner, "admin-keys-dev", Role.DEVELOPER).public_id)
    applications = cluster_key(owner, do_create_service_account(owner, "admin-keys-app", "", Role.ADMIN).public_id)
    assert pushed_admin_flags() == {owners.key_id: True, admins.key_id: True, developers.key_id: False, applications.key_id: False}


def test_a_role_change_across_the_admin_line_records_sync_security_and_the_next_snapshot_follows(owner: Actor) -> None:
    admin = member(owner, "admin-keys-demoted", Role.ADMIN)
    key = cluster_key(owner, admin.public_id)
    jobs_before = ProvisioningJob.objects.filter(kind=JobKind.SYNC_SECURITY).count()

    do_change_role(owner, admin, Role.DEVELOPER)
    assert ProvisioningJob.objects.filter(kind=JobKind.SYNC_SECURITY, target=admin.public_id).count() == 1
    assert pushed_admin_flags()[key.key_id] is False

    do_change_role(owner, admin, Role.VIEWER)  # not across the line: nothing to push
    do_change_role(owner, admin, Role.OWNER)
    assert ProvisioningJob.objects.filter(kind=JobKind.SYNC_SECURITY).count() == jobs_before + 2
    assert pushed_admin_flags()[key.key_id] is True
