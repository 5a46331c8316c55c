"""ACL pages: admins create and delete bindings of their tenant's principals only."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.webapp.dashboard.conftest import Member
from webapp.accounts.actions.service_accounts import do_create_service_account
from webapp.accounts.models import Role
from webapp.catalog.models import AclBinding

pytestmark = pytest.mark.django_db


def acl_fields(principal: str, **overrides: str) -> dict[str, str]:
    return {
        "principal": principal,
        "permission": "ALLOW",
        "operation": "WRITE",
        "resource_type": "TOPIC",
        "pattern_type": "LITERAL",
        "resource_name": "orders",
        "host": "*",
    } | overrides


def test_admin_creates_and_deletes_an_acl(roles: dict[str, Member]) -> None:
    admin = roles[Role.ADMIN]
    account = do_create_service_account(admin.actor, "billing", "", Role.DEVELOPER)
    response = admin.client.post(reverse("dashboard:acl_create"), acl_fields(account.principal))
    binding = AclBinding.objects.get()
    assert response.status_code == 302 and "?job=job-" in response["Location"]
    listing = admin.client.get(response["Location"]).content.decode()
    assert account.principal in listing and "billing" in listing
    deleted = admin.client.post(reverse("dashboard:acl_delete", args=[binding.public_id]), {"confirm": binding.public_id})
    assert deleted.status_code == 302
    assert not AclBinding.objects.exists()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [({"operation": "IDEMPOTENT_WRITE"}, "does not apply to TOPIC"), ({"host": "somewhere"}, "IP address"), ({"resource_name": "a~b"}, "cannot appear")],
)
def test_invalid_acl_is_refused_with_the_reason(owner: Member, overrides: dict[str, str], message: str) -> None:
    response = owner.client.post(reverse("dashboard:acl_create"), acl_fields("User:*", **overrides))
    assert response.status_code == 200 and message in response.content.decode()
    assert not AclBinding.objects.exists()


def test_duplicate_acl_is_refused(owner: Member) -> None:
    owner.client.post(reverse("dashboard:acl_create"), acl_fields("User:*"))
    response = owner.client.post(reverse("dashboard:acl_create"), acl_fields("User:*"))
    assert "already exists" in response.content.decode()
    assert AclBinding.objects.count() == 1


def test_principal_of_another_tenant_cannot_be_chosen(owner: Member, other_owner: Member) -> None:
    theirs = do_create_service_account(other_owner.actor, "theirs", "", Role.DEVELOPER)
    response = owner.client.post(reverse("dashboard:acl_create"), acl_fields(theirs.principal))
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not AclBinding.objects.exists()


def test_developer_sees_acls_but_cannot_change_them(roles: dict[str, Member]) -> None:
    roles[Role.OWNER].client.post(reverse("dashboard:acl_create"), acl_fields("User:*"))
    binding = AclBinding.objects.get()
    developer = roles[Role.DEVELOPER]
    assert developer.client.get(reverse("dashboard:acls")).status_code == 200
    assert developer.client.post(reverse("dashboard:acl_create"), acl_fields("User:*", operation="READ")).status_code == 403
    assert developer.client.post(reverse("dashboard:acl_delete", args=[binding.public_id]), {"confirm": binding.public_id}).status_code == 403
    assert AclBinding.objects.count() == 1


def test_another_tenants_acl_cannot_be_deleted(owner: Member, other_owner: Member) -> None:
    other_owner.client.post(reverse("dashboard:acl_create"), acl_fields("User:*"))
    binding = AclBinding.objects.get()
    assert owner.client.post(reverse("dashboard:acl_delete", args=[binding.public_id]), {"confirm": binding.public_id}).status_code == 404
    assert binding.public_id not in owner.client.get(reverse("dashboard:acls")).content.decode()
    assert AclBinding.objects.count() == 1
