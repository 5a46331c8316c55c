"""Partial pages (the fragments the dashboard's script refreshes) are not pages: a browser
navigating to one lands on the full page at the fragment's anchor; the script still gets the
fragment."""

from __future__ import annotations

from django.urls import reverse

from tests.webapp.dashboard.conftest import Member
from tests.webapp.dashboard.test_topics import create_topic

NAVIGATION = {"HTTP_SEC_FETCH_MODE": "navigate", "HTTP_SEC_FETCH_DEST": "document"}
SCRIPT_FETCH = {"HTTP_SEC_FETCH_MODE": "cors", "HTTP_SEC_FETCH_DEST": "empty"}


def test_a_navigation_to_the_replication_fragment_lands_on_the_topic_page(owner: Member) -> None:
    create_topic(owner, "orders")
    url = reverse("dashboard:topic_replication", args=["orders"])
    visited = owner.client.get(url, **NAVIGATION)
    assert visited.status_code == 302 and visited["Location"] == "/topics/orders/#replication"
    fetched = owner.client.get(url, **SCRIPT_FETCH)
    assert fetched.status_code == 200 and "<html" not in fetched.content.decode() and "<table" in fetched.content.decode()


def test_a_navigation_to_the_brokers_table_lands_on_the_brokers_page(owner: Member) -> None:
    visited = owner.client.get(reverse("dashboard:broker_table"), **NAVIGATION)
    assert visited.status_code == 302 and visited["Location"] == "/brokers/#brokers"
    assert owner.client.get(reverse("dashboard:broker_table"), **SCRIPT_FETCH).status_code == 200


def test_another_tenants_fragment_stays_hidden_behind_the_redirect(owner: Member, other_owner: Member) -> None:
    create_topic(other_owner, "secret-plans")
    visited = owner.client.get(reverse("dashboard:topic_replication", args=["secret-plans"]), follow=True, **NAVIGATION)
    assert visited.status_code == 404
    assert owner.client.get(reverse("dashboard:topic_replication", args=["secret-plans"]), **SCRIPT_FETCH).status_code == 404
