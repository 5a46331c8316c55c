"""Service accounts and API keys: the secret is shown once and stored only as a hash."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.webapp.dashboard.conftest import Member
from webapp.accounts.api_keys import hash_secret
from webapp.accounts.models import ApiKey, Role, ServiceAccount
from webapp.provisioning.models import JobKind, ProvisioningJob

pytestmark = pytest.mark.django_db


def create_account(member: Member, name: str = "billing") -> ServiceAccount:
    response = member.client.post(reverse("dashboard:service_account_create"), {"name": name, "description": "", "role": Role.DEVELOPER})
    assert response.status_code == 302, response.content
    return ServiceAccount.objects.get(tenant=member.tenant, name=name)


def test_cluster_key_secret_is_shown_once_and_only_its_hash_is_kept(owner: Member) -> None:
    account = create_account(owner)
    response = owner.client.post(reverse("dashboard:api_key_create"), {"kind": "cluster", "owner": account.public_id, "description": "app"})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    secret = re.search(r'id="new-key-secret">(weir_cluster_[^<]+)<', response.content.decode()).group(1)  # type: ignore[union-attr]
    key = ApiKey.objects.get(owner_service_account=account)
    assert key.secret_sha256 == hash_secret(secret)
    assert ProvisioningJob.objects.filter(kind=JobKind.SYNC_SECURITY, target=key.key_id).exists()
    for page in (reverse("dashboard:api_keys"), reverse("dashboard:service_account", args=[account.public_id])):
        listing = owner.client.get(page).content.decode()
        assert key.key_id in listing and secret not in listing


def test_duplicate_service_account_name_is_refused(owner: Member) -> None:
    create_account(owner)
    response = owner.client.post(reverse("dashboard:service_account_create"), {"name": "billing", "role": Role.DEVELOPER})
    assert response.status_code == 200 and "exists" in response.content.decode()


def test_developer_creates_own_key_but_not_for_a_service_account(roles: dict[str, Member]) -> None:
    account = create_account(roles[Role.ADMIN])
    developer = roles[Role.DEVELOPER]
    own = developer.client.post(reverse("dashboard:api_key_create"), {"kind": "cloud", "owner": "", "description": ""})
    assert own.status_code == 200 and "weir_cloud_" in own.content.decode()
    assert ApiKey.objects.get(owner_membership=developer.membership).kind == "cloud"
    # The service account is not even offered to a developer: the form refuses the choice.
    other = developer.client.post(reverse("dashboard:api_key_create"), {"kind": "cloud", "owner": account.public_id})
    assert other.status_code == 200 and "Select a valid choice" in other.content.decode()
    assert not ApiKey.objects.filter(owner_service_account=account).exists()


def test_viewer_cannot_manage_service_accounts_or_keys(roles: dict[str, Member]) -> None:
    viewer = roles[Role.VIEWER]
    assert viewer.client.get(reverse("dashboard:service_accounts")).status_code == 200
    assert viewer.client.post(reverse("dashboard:service_account_create"), {"name": "x", "role": Role.VIEWER}).status_code == 403
    assert viewer.client.post(reverse("dashboard:api_key_create"), {"kind": "cloud"}).status_code == 403
    assert not ServiceAccount.objects.exists() and not ApiKey.objects.exists()


def test_revoke_key_marks_it_revoked_and_records_a_job(owner: Member) -> None:
    account = create_account(owner)
    owner.client.post(reverse("dashboard:api_key_create"), {"kind": "cluster", "owner": account.public_id})
    key = ApiKey.objects.get()
    response = owner.client.post(reverse("dashboard:api_key_revoke", args=[key.key_id]), {"confirm": key.key_id})
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert response.status_code == 302 and "?job=job-" in response["Location"]


def test_another_tenants_keys_and_accounts_are_not_found(owner: Member, other_owner: Member) -> None:
    account = create_account(other_owner, "theirs")
    other_owner.client.post(reverse("dashboard:api_key_create"), {"kind": "cluster", "owner": account.public_id})
    key = ApiKey.objects.get()
    assert owner.client.get(reverse("dashboard:service_account", args=[account.public_id])).status_code == 404
    assert owner.client.post(reverse("dashboard:service_account_delete", args=[account.public_id])).status_code == 404
    assert owner.client.post(reverse("dashboard:api_key_revoke", args=[key.key_id]), {"confirm": key.key_id}).status_code == 404
    assert key.key_id not in owner.client.get(reverse("dashboard:api_keys")).content.decode()
    key.refresh_from_db()
    assert key.revoked_at is None and ServiceAccount.objects.filter(pk=account.pk).exists()


def test_delete_service_account_removes_its_keys(owner: Member) -> None:
    account = create_account(owner)
    owner.client.post(reverse("dashboard:api_key_create"), {"kind": "cluster", "owner": account.public_id})
    response = owner.client.post(reverse("dashboard:service_account_delete", args=[account.public_id]))
    assert response.status_code == 302 and "/jobs/job-" in response["Location"]
    assert not ServiceAccount.objects.exists() and not ApiKey.objects.exists()
