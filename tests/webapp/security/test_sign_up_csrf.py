"""Login CSRF: a page on another site cannot make a visitor's browser sign up (and so sign in
as the attacker's user) through ``POST /api/v1/sign-up``, nor create a user through
``/invitations/accept``; the real clients (JSON API callers, the dashboard's form) still can."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from webapp.fleet.models import BrokerNode, BrokerState

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple 42"
FIELDS = {"username": "mallory", "email": "mallory@evil.example", "password": PASSWORD, "tenant_name": "Evil"}
ATTACKER_ORIGIN = "https://evil.example"


@pytest.fixture(autouse=True)
def registered_broker() -> None:
    BrokerNode.objects.create(node_id=1, host="127.0.0.1", port=1, state=BrokerState.ONLINE)


def _browser() -> Client:
    """A browser: Django's CSRF checks on, as for a real visitor."""
    return Client(enforce_csrf_checks=True)


@pytest.mark.parametrize(
    "content_type",
    ["application/x-www-form-urlencoded", "multipart/form-data; boundary=BoUnDaRy", "text/plain"],
)
def test_a_cross_site_form_post_to_sign_up_is_refused_and_signs_nobody_in(content_type: str) -> None:
    browser = _browser()
    if content_type.startswith("application/x-www-form-urlencoded"):
        body = "username=mallory&email=mallory%40evil.example&password=correct+horse+battery+staple+42&tenant_name=Evil"
    elif content_type.startswith("multipart"):
        body = "".join(f'--BoUnDaRy\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n' for key, value in FIELDS.items()) + "--BoUnDaRy--\r\n"
    else:
        # <form enctype="text/plain"> with a field named '{"username": ..., "x":"' and value '"}'.
        body = f'{{"username": "mallory", "email": "mallory@evil.example", "password": "{PASSWORD}", "tenant_name": "Evil", "x":"="}}'

    response = browser.post("/api/v1/sign-up", body, content_type=content_type, HTTP_ORIGIN=ATTACKER_ORIGIN)

    assert response.status_code == 415, response.content
    assert "Unsupported media type" in response.json()["message"]
    assert not get_user_model().objects.filter(username="mallory").exists()
    assert "sessionid" not in response.cookies


def test_a_cross_site_form_post_to_accept_an_invitation_is_refused() -> None:
    response = _browser().post(
        "/api/v1/invitations/accept", "token=abc&username=mallory&password=x", content_type="application/x-www-form-urlencoded", HTTP_ORIGIN=ATTACKER_ORIGIN
    )
    assert response.status_code == 415
    assert not get_user_model().objects.filter(username="mallory").exists()


def test_a_json_api_client_still_signs_up() -> None:
    response = _browser().post("/api/v1/sign-up", FIELDS, content_type="application/json")
    assert response.status_code == 201, response.content
    assert get_user_model().objects.filter(username="mallory").exists()


def test_the_dashboard_sign_up_form_still_works_and_still_needs_its_csrf_token() -> None:
    browser = _browser()
    form = {"organisation": "Initech", "username": "peter", "email": "peter@initech.example", "password": PASSWORD, "password_again": PASSWORD}
    assert browser.post(reverse("dashboard:sign_up"), form).status_code == 403  # no token: refused
    page = browser.get(reverse("dashboard:sign_up"))
    token = page.cookies["csrftoken"].value
    response = browser.post(reverse("dashboard:sign_up"), {**form, "csrfmiddlewaretoken": token})
    assert response.status_code == 302 and response["Location"] == reverse("dashboard:overview")
