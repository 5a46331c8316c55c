"""The API keys page lists the tenant's SCRAM users with their login names; admins delete one there."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.webapp.dashboard.conftest import Member
from webapp.accounts.facade import ScramUpsertion, ScramUserCredential, do_alter_scram_users
from weir.admin_scram import salted_password

pytestmark = pytest.mark.django_db


def make_user(member: Member, name: str) -> None:
    salted = salted_password("SCRAM-SHA-512", b"password", b"salt", 8192)
    results, _ = do_alter_scram_users(member.tenant, [], [ScramUpsertion(name, "SCRAM-SHA-512", 8192, b"salt", salted)], principal="User:test")
    assert [result.error_code for result in results] == [0]


def test_members_see_scram_users_and_only_admins_delete_them(roles: dict[str, Member], other_owner: Member) -> None:
    admin, viewer = roles["admin"], roles["viewer"]
    make_user(admin, "alice")
    listing = viewer.client.get(reverse("dashboard:api_keys")).content.decode()
    assert f"alice@{admin.tenant.public_id}" in listing and "SCRAM-SHA-512 (8192 iterations)" in listing
    assert reverse("dashboard:scram_user_delete", args=["alice"]) not in listing  # no delete button for a viewer
    assert viewer.client.post(reverse("dashboard:scram_user_delete", args=["alice"])).status_code == 403
    assert other_owner.client.post(reverse("dashboard:scram_user_delete", args=["alice"])).status_code == 404
    assert "alice@" not in other_owner.client.get(reverse("dashboard:api_keys")).content.decode()
    assert ScramUserCredential.objects.filter(user_name="alice").exists()
    assert reverse("dashboard:scram_user_delete", args=["alice"]) in admin.client.get(reverse("dashboard:api_keys")).content.decode()
    assert admin.client.post(reverse("dashboard:scram_user_delete", args=["alice"])).status_code == 302
    assert not ScramUserCredential.objects.filter(user_name="alice").exists()
