"""Sign-in throttling: repeated wrong passwords lock the account and the address out (429 with
the minutes to wait, logged without the password) until the cool-off, which doubles each time
the limit is reached again, has passed; other accounts from other addresses sign in as usual."""

from __future__ import annotations

import logging
import re
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import authenticate, get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from webapp.accounts.sign_in_throttling import cool_off_for

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple 42"
WRONG_PASSWORD = "wrong-password-Zq81"
ATTACKER = "10.0.0.66"
ELSEWHERE = "10.0.0.7"


@pytest.fixture(autouse=True)
def users(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    for name in ("alice", "bob"):
        get_user_model().objects.create_user(username=name, email=f"{name}@example.com", password=PASSWORD)


def _sign_in(username: str, password: str, address: str, **headers: str):  # type: ignore[no-untyped-def]
    return Client(REMOTE_ADDR=address).post(reverse("dashboard:login"), {"username": username, "password": password}, **headers)


def _signed_in(response) -> bool:  # type: ignore[no-untyped-def]
    return response.status_code == 302 and response["Location"] == reverse("dashboard:overview")


def test_thirty_wrong_passwords_lock_the_account_and_the_address_until_the_cool_off(settings, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.INFO)
    statuses = [_sign_in("alice", WRONG_PASSWORD, ATTACKER).status_code for _ in range(30)]

    limit = settings.AXES_FAILURE_LIMIT
    assert statuses[: limit - 1] == [200] * (limit - 1), "below the limit: the form says the password is wrong"
    assert set(statuses[limit - 1 :]) == {429}, "from the limit on: refused"

    refused = _sign_in("alice", PASSWORD, ATTACKER)
    assert refused.status_code == 429 and not _signed_in(refused)
    waited = re.search(r"Too many sign-in attempts\. Try again in (\d+) minutes\.", refused.content.decode())
    assert waited, refused.content.decode()
    # Backoff: 31 failures reached the limit three times, so the first cool-off doubled twice.
    minutes = int(waited.group(1))
    assert minutes == 4 * settings.WEIR_SIGN_IN_COOLOFF_MINUTES
    assert refused["Retry-After"] == str(minutes * 60)
    # The account is locked from anywhere, and the address for any account.
    assert _sign_in("alice", PASSWORD, ELSEWHERE).status_code == 429
    assert _sign_in("bob", PASSWORD, ATTACKER).status_code == 429
    # Another account from another address is not affected.
    assert _signed_in(_sign_in("bob", PASSWORD, ELSEWHERE))

    # Logged, without the password.
    lockouts = [record.getMessage() for record in caplog.records if "Locking out" in record.getMessage()]
    assert lockouts and "alice" in lockouts[0] and ATTACKER in lockouts[0], "the lockout was not logged with account and address"
    assert all(WRONG_PASSWORD not in record.getMessage() and PASSWORD not in record.getMessage() for record in caplog.records)

    # Not yet after the first cool-off: the backed-off one still runs.
    _move_attempts_back(timedelta(minutes=settings.WEIR_SIGN_IN_COOLOFF_MINUTES + 1))
    assert _sign_in("alice", PASSWORD, ATTACKER).status_code == 429
    # The backed-off cool-off passes (the attempts' clock moved back beyond it): the right password works.
    _move_attempts_back(timedelta(minutes=settings.WEIR_SIGN_IN_COOLOFF_MAX_MINUTES + 1))
    assert _signed_in(_sign_in("alice", PASSWORD, ATTACKER))


def _move_attempts_back(by: timedelta) -> None:
    """As if ``by`` had passed since the last attempt (each attempt while locked restarts the wait)."""
    AccessAttempt.objects.update(attempt_time=timezone.now() - by)


@pytest.mark.parametrize(
    "failures,minutes",
    [(0, 15), (9, 15), (10, 15), (19, 15), (20, 30), (30, 60), (40, 120), (1000, 1440)],
)
def test_the_cool_off_doubles_each_time_the_limit_is_reached_up_to_the_longest(failures: int, minutes: int) -> None:
    assert cool_off_for(failures, 10, timedelta(minutes=15), timedelta(minutes=1440)) == timedelta(minutes=minutes)


def test_a_client_asking_for_json_gets_the_api_error_body(settings) -> None:  # type: ignore[no-untyped-def]
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _sign_in("alice", WRONG_PASSWORD, ATTACKER)
    response = _sign_in("alice", PASSWORD, ATTACKER, HTTP_ACCEPT="application/json")
    minutes = int(settings.WEIR_SIGN_IN_COOLOFF_MINUTES)
    assert response.status_code == 429
    assert response.json() == {"error_code": 429, "message": f"Too many sign-in attempts. Try again in {minutes} minutes.", "retry_after_minutes": minutes}


def test_the_django_admin_sign_in_is_throttled_too(settings) -> None:  # type: ignore[no-untyped-def]
    for _ in range(settings.AXES_FAILURE_LIMIT):
        Client(REMOTE_ADDR=ATTACKER).post("/admin/login/", {"username": "alice", "password": WRONG_PASSWORD})
    assert Client(REMOTE_ADDR=ATTACKER).post("/admin/login/", {"username": "alice", "password": PASSWORD}).status_code == 429


def test_a_successful_sign_in_clears_the_failures_below_the_limit(settings) -> None:  # type: ignore[no-untyped-def]
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _sign_in("alice", WRONG_PASSWORD, ATTACKER)
    assert _signed_in(_sign_in("alice", PASSWORD, ATTACKER))
    assert _sign_in("alice", WRONG_PASSWORD, ATTACKER).status_code == 200


def test_password_checks_without_a_request_are_not_throttled(settings) -> None:  # type: ignore[no-untyped-def]
    """``manage.py`` commands and scripts check passwords without a client to count."""
    for _ in range(settings.AXES_FAILURE_LIMIT + 2):
        assert authenticate(username="alice", password=WRONG_PASSWORD) is None
    assert authenticate(username="alice", password=PASSWORD) is not None
