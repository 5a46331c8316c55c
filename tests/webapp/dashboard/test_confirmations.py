"""Deleting an ACL, revoking an API key and removing a member ask first and say what stops
working; a single click, a cancel or a confirmation for another object changes nothing."""

from __future__ import annotations

from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from tests.webapp.dashboard.conftest import Member
from webapp.accounts.actions.key_use import SeenApplication, do_record_key_applications
from webapp.accounts.actions.keys import KeyOwner, do_create_key
from webapp.accounts.actions.service_accounts import do_create_service_account
from webapp.accounts.models import ApiKey, Membership, Role
from webapp.catalog.actions.acls import check_create_acl, do_create_acl
from webapp.catalog.models import AclBinding


def _acl(owner: Member, principal: str, **fields: str) -> AclBinding:
    values = {"resource_type": "TOPIC", "resource_name": "orders", "pattern_type": "LITERAL", "host": "*", "operation": "READ", "permission": "ALLOW"} | fields
    binding, _ = do_create_acl(owner.actor, check_create_acl(owner.actor, principal=principal, **values))
    return binding


def test_acl_delete_asks_first_and_says_who_loses_what(owner: Member) -> None:
    account = do_create_service_account(owner.actor, "billing", "", Role.DEVELOPER)
    binding = _acl(owner, account.principal)
    listing = owner.client.get(reverse("dashboard:acls")).content.decode()
    assert f'href="{reverse("dashboard:acl_delete", args=[binding.public_id])}"' in listing  # a link to the question, not a POST form
    for attempt in (owner.client.get, lambda url: owner.client.post(url), lambda url: owner.client.post(url, {"confirm": "acl-other"})):
        page = attempt(reverse("dashboard:acl_delete", args=[binding.public_id]))
        assert page.status_code == 200
        assert AclBinding.objects.filter(pk=binding.pk).exists()
    text = page.content.decode()
    assert f"Afterwards {account.principal} can no longer READ TOPIC &#x27;orders&#x27;" in text and 'href="/acls/"' in text  # Cancel
    deleted = owner.client.post(reverse("dashboard:acl_delete", args=[binding.public_id]), {"confirm": binding.public_id})
    assert deleted.status_code == 302 and not AclBinding.objects.filter(pk=binding.pk).exists()


def test_acl_delete_says_when_another_binding_still_allows(owner: Member) -> None:
    account = do_create_service_account(owner.actor, "billing", "", Role.DEVELOPER)
    binding = _acl(owner, account.principal)
    _acl(owner, account.principal, resource_name="ord", pattern_type="PREFIXED")
    text = owner.client.get(reverse("dashboard:acl_delete", args=[binding.public_id])).content.decode()
    assert "can still READ" in text and "PREFIXED" in text


def test_key_revoke_shows_last_use_and_the_owners_other_keys(owner: Member) -> None:
    account = do_create_service_account(owner.actor, "billing", "", Role.DEVELOPER)
    used = do_create_key(owner.actor, "cluster", KeyOwner(service_account=account), "orders app").key
    spare = do_create_key(owner.actor, "cluster", KeyOwner(service_account=account), "spare").key
    ApiKey.objects.filter(pk=used.pk).update(last_used_at=timezone.now() - timedelta(hours=3))
    single_click = owner.client.post(reverse("dashboard:api_key_revoke", args=[used.key_id]))
    text = single_click.content.decode()
    assert single_click.status_code == 200 and "last used 3" in text and spare.key_id in text and "refused at their next request" in text
    assert ApiKey.objects.get(pk=used.pk).revoked_at is None
    owner.client.post(reverse("dashboard:api_key_revoke", args=[used.key_id]), {"confirm": used.key_id})
    assert ApiKey.objects.get(pk=used.pk).revoked_at is not None
    last = owner.client.get(reverse("dashboard:api_key_revoke", args=[spare.key_id])).content.decode()
    assert "has no other active cluster key" in last and "never been used" in last


def test_key_revoke_and_the_keys_page_name_the_applications_using_it_escaped(owner: Member) -> None:
    account = do_create_service_account(owner.actor, "billing", "", Role.DEVELOPER)
    key = do_create_key(owner.actor, "cluster", KeyOwner(service_account=account), "orders app").key
    seen = int((timezone.now() - timedelta(minutes=10)).timestamp() * 1000)
    hostile = SeenApplication("<script>alert(1)</script>", "apache-kafka-java", "3.7.0", "10.0.0.7", seen, seen)
    do_record_key_applications({key.key_id: [SeenApplication("orders-consumer", "librdkafka", "2.5.0", "10.0.0.8", seen, seen), hostile]})
    question = owner.client.get(reverse("dashboard:api_key_revoke", args=[key.key_id])).content.decode()
    assert "2 application(s) used it recently" in question and "orders-consumer (librdkafka 2.5.0) from 10.0.0.8" in question
    assert "<script>alert(1)</script>" not in question and "&lt;script&gt;alert(1)&lt;/script&gt;" in question
    page = owner.client.get(reverse("dashboard:api_key", args=[key.key_id]))
    text = page.content.decode()
    assert page.status_code == 200 and "orders-consumer" in text and "librdkafka 2.5.0" in text and "10.0.0.7" in text and "<script>alert" not in text
    assert f'href="{reverse("dashboard:api_key", args=[key.key_id])}"' in owner.client.get(reverse("dashboard:api_keys")).content.decode()
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None


def test_a_key_page_of_another_tenant_is_not_found(roles: dict[str, Member], other_owner: Member) -> None:
    owner = roles[Role.OWNER]
    account = do_create_service_account(owner.actor, "billing", "", Role.DEVELOPER)
    key = do_create_key(owner.actor, "cluster", KeyOwner(service_account=account), "").key
    viewed = roles[Role.VIEWER].client.get(reverse("dashboard:api_key", args=[key.key_id]))
    assert viewed.status_code == 200 and "Revoke…" not in viewed.content.decode()
    assert other_owner.client.get(reverse("dashboard:api_key", args=[key.key_id])).status_code == 404


def test_developer_cannot_even_see_the_question_for_someone_elses_key(roles: dict[str, Member]) -> None:
    account = do_create_service_account(roles[Role.OWNER].actor, "billing", "", Role.DEVELOPER)
    key = do_create_key(roles[Role.OWNER].actor, "cloud", KeyOwner(service_account=account), "").key
    assert roles[Role.DEVELOPER].client.get(reverse("dashboard:api_key_revoke", args=[key.key_id])).status_code == 403


def test_member_removal_asks_first_and_lists_the_keys_that_stop(roles: dict[str, Member]) -> None:
    owner, developer = roles[Role.OWNER], roles[Role.DEVELOPER]
    key = do_create_key(owner.actor, "cloud", KeyOwner(membership=developer.membership), "laptop").key
    url = reverse("dashboard:member_remove", args=[developer.membership.public_id])
    assert f'href="{url}"' in owner.client.get(reverse("dashboard:members")).content.decode()
    page = owner.client.post(url)
    assert page.status_code == 200 and key.key_id in page.content.decode() and "can no longer sign in" in page.content.decode()
    assert Membership.objects.filter(pk=developer.membership.pk).exists()
    owner.client.post(url, {"confirm": developer.membership.public_id})
    assert not Membership.objects.filter(pk=developer.membership.pk).exists()


def test_template_page_creates_a_consumers_bindings_including_its_group(owner: Member) -> None:
    account = do_create_service_account(owner.actor, "billing", "", Role.DEVELOPER)
    fields = {"template": "consumer", "principal": account.principal, "topic": "orders", "pattern_type": "LITERAL"}
    refused = owner.client.post(reverse("dashboard:acl_template"), fields)
    assert refused.status_code == 200 and "needs READ on its consumer group" in refused.content.decode() and not AclBinding.objects.exists()
    created = owner.client.post(reverse("dashboard:acl_template"), fields | {"group": "billing-app"})
    assert created.status_code == 302
    assert set(AclBinding.objects.values_list("resource_type", "resource_name", "operation")) == {
        ("TOPIC", "orders", "READ"),
        ("TOPIC", "orders", "DESCRIBE"),
        ("GROUP", "billing-app", "READ"),
    }


def test_explain_page_names_the_deciding_binding_and_reports_bad_input(roles: dict[str, Member]) -> None:
    owner = roles[Role.OWNER]
    account = do_create_service_account(owner.actor, "billing", "", Role.DEVELOPER)
    deny = _acl(owner, account.principal, permission="DENY", operation="ALL")
    _acl(owner, account.principal)
    viewer = roles[Role.VIEWER]
    question = {"principal": account.principal, "operation": "READ", "resource_type": "TOPIC", "resource_name": "orders", "host": ""}
    text = viewer.client.get(reverse("dashboard:acl_explain"), question).content.decode()
    assert "Denied" in text and deny.public_id in text and "DENY wins" in text
    bad = viewer.client.get(reverse("dashboard:acl_explain"), question | {"host": "my laptop"})
    assert bad.status_code == 400 and "one IP address" in bad.content.decode()
