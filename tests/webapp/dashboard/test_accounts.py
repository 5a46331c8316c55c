"""Signing in, up and out, switching tenants, members and invitations, CSRF."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from tests.webapp.dashboard.conftest import PASSWORD, Member
from webapp.accounts.models import Membership, Role, Tenant

pytestmark = pytest.mark.django_db


def test_anonymous_visitor_is_sent_to_sign_in() -> None:
    response = Client().get(reverse("dashboard:topics"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("dashboard:login"))


def test_sign_in_with_password_then_sign_out(owner: Member) -> None:
    client = Client()
    assert client.get(reverse("dashboard:login")).status_code == 200
    wrong = client.post(reverse("dashboard:login"), {"username": "acme-owner", "password": "nope"})
    assert wrong.status_code == 200 and "correct username and password" in wrong.content.decode()
    right = client.post(reverse("dashboard:login"), {"username": "acme-owner", "password": PASSWORD})
    assert right["Location"] == reverse("dashboard:overview")
    assert client.get(reverse("dashboard:overview")).status_code == 200
    client.post(reverse("dashboard:logout"))
    assert client.get(reverse("dashboard:overview")).status_code == 302


def test_sign_up_creates_an_owner_and_signs_in(registered_broker: object) -> None:
    client = Client()
    fields = {"organisation": "Initech", "username": "peter", "email": "peter@initech.example", "password": PASSWORD, "password_again": PASSWORD}
    response = client.post(reverse("dashboard:sign_up"), fields)
    assert response["Location"] == reverse("dashboard:overview")
    membership = Membership.objects.select_related("tenant").get(user__username="peter")
    assert membership.role == Role.OWNER and membership.tenant.name == "Initech"
    assert "Initech" in client.get(reverse("dashboard:overview")).content.decode()


def test_sign_up_with_a_taken_username_or_differing_passwords_is_refused(owner: Member) -> None:
    taken = Client().post(
        reverse("dashboard:sign_up"), {"organisation": "X", "username": "acme-owner", "email": "a@b.example", "password": PASSWORD, "password_again": PASSWORD}
    )
    assert "taken" in taken.content.decode()
    differing = Client().post(
        reverse("dashboard:sign_up"),
        {"organisation": "X", "username": "newbie", "email": "a@b.example", "password": PASSWORD, "password_again": PASSWORD + "!"},
    )
    assert "The two passwords differ." in differing.content.decode()
    assert Tenant.objects.count() == 1


def test_user_of_two_tenants_switches_between_them(owner: Member, other_owner: Member) -> None:
    Membership.objects.create(tenant=other_owner.tenant, user=owner.membership.user, role=Role.VIEWER)
    first = owner.client.get(reverse("dashboard:overview")).content.decode()
    assert 'id="tenant-switcher"' in first and "<h1>Acme</h1>" in first
    owner.client.post(reverse("dashboard:switch_tenant"), {"tenant": other_owner.tenant.public_id})
    assert "<h1>Globex</h1>" in owner.client.get(reverse("dashboard:overview")).content.decode()
    unknown = owner.client.post(reverse("dashboard:switch_tenant"), {"tenant": "tn-notmine"})
    assert unknown.status_code == 404


def test_csrf_token_is_required_for_changes(owner: Member) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner.membership.user)
    response = client.post(reverse("dashboard:topic_create"), {"name": "orders", "partitions": 1, "replication_factor": 1})
    assert response.status_code == 403


def test_invitation_link_is_shown_once_and_makes_a_member(owner: Member) -> None:
    response = owner.client.post(reverse("dashboard:member_invite"), {"email": "new@acme.example", "role": Role.DEVELOPER})
    link = re.search(r'id="invitation-link">([^<]+)<', response.content.decode()).group(1)  # type: ignore[union-attr]
    path = link.replace("http://testserver", "")
    newcomer = Client()
    joined = newcomer.post(path, {"username": "newbie", "email": "new@acme.example", "password": PASSWORD, "password_again": PASSWORD})
    assert joined["Location"] == reverse("dashboard:overview")
    assert Membership.objects.get(user__username="newbie").role == Role.DEVELOPER
    assert Client().get(path).status_code == 404  # used up


def test_admin_cannot_invite_owners_and_developer_cannot_invite(roles: dict[str, Member]) -> None:
    refused = roles[Role.ADMIN].client.post(reverse("dashboard:member_invite"), {"email": "boss@acme.example", "role": Role.OWNER})
    assert refused.status_code == 403
    assert roles[Role.DEVELOPER].client.post(reverse("dashboard:member_invite"), {"email": "x@acme.example", "role": Role.VIEWER}).status_code == 403


def test_owner_changes_roles_but_not_the_last_owners(roles: dict[str, Member]) -> None:
    owner, viewer = roles[Role.OWNER], roles[Role.VIEWER]
    owner.client.post(reverse("dashboard:member_role", args=[viewer.membership.public_id]), {"role": Role.ADMIN})
    assert Membership.objects.get(pk=viewer.membership.pk).role == Role.ADMIN
    owner.client.post(reverse("dashboard:member_role", args=[owner.membership.public_id]), {"role": Role.VIEWER})
    assert Membership.objects.get(pk=owner.membership.pk).role == Role.OWNER
    assert "last owner" in owner.client.get(reverse("dashboard:members")).content.decode()
    assert roles[Role.ADMIN].client.post(reverse("dashboard:member_role", args=[viewer.membership.public_id]), {"role": Role.OWNER}).status_code == 403


def test_owner_removes_a_member_of_its_tenant_only(roles: dict[str, Member], other_owner: Member) -> None:
    owner = roles[Role.OWNER]
    assert owner.client.post(reverse("dashboard:member_remove", args=[other_owner.membership.public_id])).status_code == 404
    viewer_id = roles[Role.VIEWER].membership.public_id
    owner.client.post(reverse("dashboard:member_remove", args=[viewer_id]), {"confirm": viewer_id})
    assert not Membership.objects.filter(pk=roles[Role.VIEWER].membership.pk).exists()
    assert roles[Role.VIEWER].client.get(reverse("dashboard:overview"))["Location"] == reverse("dashboard:no_tenant")


def test_user_without_tenant_is_told_so(db: None) -> None:
    user = get_user_model().objects.create_user(username="loner", password=PASSWORD)
    client = Client()
    client.force_login(user)
    response = client.get(reverse("dashboard:overview"), follow=True)
    assert "not a member of any organisation" in response.content.decode()
