"""The API-key list and a key's page say in words which keys act as the tenant's cluster
administrator (an admin's or owner's cluster key) and which are left to ACLs; deleting a binding
that names an admin member does not claim its keys lose anything; an owner's role change across
the admin line leads to the job that tells the brokers, and the key list follows the new role."""

from __future__ import annotations

import html

from django.urls import reverse

from tests.webapp.dashboard.conftest import Member
from webapp.accounts.actions.keys import KeyOwner, do_create_key
from webapp.accounts.actions.service_accounts import do_create_service_account
from webapp.accounts.models import ApiKeyKind, Role
from webapp.catalog.actions.acls import check_create_acl, do_create_acl
from webapp.common.changes import JobKind
from webapp.provisioning.models import ProvisioningJob

CLUSTER_ADMIN = "Cluster administrator: acts with its owner's role (admin); no ACLs needed"


def page(member: Member, url: str) -> str:
    response = member.client.get(url)
    assert response.status_code == 200, url
    return html.unescape(response.content.decode())


def row_of(listing: str, key_id: str) -> str:
    """The key list's table row of ``key_id``."""
    return next(row for row in listing.split("<tr>") if key_id in row)


def test_key_pages_say_which_keys_are_cluster_administrators_and_acl_deletion_and_role_change_agree(roles: dict[str, Member]) -> None:
    owner, admin, developer, viewer = roles[Role.OWNER], roles[Role.ADMIN], roles[Role.DEVELOPER], roles[Role.VIEWER]
    admins = do_create_key(owner.actor, ApiKeyKind.CLUSTER, KeyOwner(membership=admin.membership), "").key
    developers = do_create_key(owner.actor, ApiKeyKind.CLUSTER, KeyOwner(membership=developer.membership), "").key
    account = do_create_service_account(owner.actor, "ops-app", "", Role.ADMIN)
    applications = do_create_key(owner.actor, ApiKeyKind.CLUSTER, KeyOwner(service_account=account), "").key
    cloud = do_create_key(owner.actor, ApiKeyKind.CLOUD, KeyOwner(membership=developer.membership), "").key

    listing = page(viewer, reverse("dashboard:api_keys"))
    assert CLUSTER_ADMIN in row_of(listing, admins.key_id)
    assert "Access by ACLs" in row_of(listing, developers.key_id) and "Cluster administrator" not in row_of(listing, developers.key_id)
    assert "Access by ACLs" in row_of(listing, applications.key_id)
    assert "REST API: acts with its owner's role (developer)" in row_of(listing, cloud.key_id)

    admin_page = page(viewer, reverse("dashboard:api_key", args=[admins.key_id]))
    assert CLUSTER_ADMIN in admin_page and "Bindings naming" not in admin_page
    developer_page = page(viewer, reverse("dashboard:api_key", args=[developers.key_id]))
    assert f"Access by ACLs: the bindings naming {developer.membership.principal} decide" in developer_page and "its owner is a developer" in developer_page
    assert f'href="{reverse("dashboard:acls")}?q=User%3A{developer.membership.public_id}"' in developer_page
    account_page = page(viewer, reverse("dashboard:api_key", args=[applications.key_id]))
    assert "a service account's cluster keys act by ACLs whatever its role" in account_page

    def deletion_page(principal: str) -> str:
        fields = {"resource_type": "TOPIC", "resource_name": "orders", "pattern_type": "LITERAL", "host": "*", "operation": "WRITE", "permission": "ALLOW"}
        binding, _ = do_create_acl(owner.actor, check_create_acl(owner.actor, principal=principal, **fields))
        return page(owner, reverse("dashboard:acl_delete", args=[binding.public_id]))

    admin_binding = deletion_page(admin.membership.principal)
    assert f"Nothing changes for {admin.membership.principal}'s cluster keys, which never needed it" in admin_binding
    assert "can no longer" not in admin_binding and "if the member's role dropped below admin" in admin_binding
    assert f"Afterwards {developer.membership.principal} can no longer WRITE TOPIC 'orders'" in deletion_page(developer.membership.principal)

    changed = owner.client.post(reverse("dashboard:member_role", args=[admin.membership.public_id]), {"role": Role.DEVELOPER})
    job = ProvisioningJob.objects.get(kind=JobKind.SYNC_SECURITY, target=admin.membership.public_id)
    assert (changed.status_code, changed["Location"]) == (302, reverse("dashboard:job", args=[job.public_id]))
    assert "Access by ACLs" in row_of(page(viewer, reverse("dashboard:api_keys")), admins.key_id)
    sideways = owner.client.post(reverse("dashboard:member_role", args=[admin.membership.public_id]), {"role": Role.VIEWER})
    assert (sideways.status_code, sideways["Location"]) == (302, reverse("dashboard:members")), "not across the admin line: no job to follow"
