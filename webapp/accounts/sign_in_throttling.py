"""Sign-in throttling with django-axes: what is counted, and what a locked-out client is told.

Axes counts failed password checks per client address and per account (``AXES_*`` in
``webapp.settings``) and refuses further checks once either reaches the limit, until the
cool-off has passed since the last attempt. Two pieces are Weir's own:

* :class:`ThrottledSignInBackend` counts only password checks made for an HTTP request (the
  dashboard's sign-in form, the Django admin's). A check without a request (``manage.py``
  commands, scripts, ``authenticate()`` in a shell) has no client address to count and is not
  a sign-in a remote attacker can repeat, so it passes straight to the next backend instead
  of failing as Axes' own backend would. REST calls authenticate with API keys (long random
  secrets checked by hash, never a password), so they are not counted either.
* :func:`cool_off` (``AXES_COOLOFF_TIME``) backs off: the lock-out lasts
  WEIR_SIGN_IN_COOLOFF_MINUTES the first time the limit is reached and doubles each further
  time (failures keep counting while locked out), up to WEIR_SIGN_IN_COOLOFF_MAX_MINUTES, so
  that a client that keeps guessing gets ever fewer guesses per day.
* :func:`lockout_response` answers 429 with the minutes left: a page for browsers, the API's
  JSON error body for callers that ask for JSON.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.helpers import get_client_username, get_cool_off
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Max, Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

# What axes answers when a sign-in is refused for too many failures.
TOO_MANY_ATTEMPTS_STATUS = 429


class ThrottledSignInBackend(AxesStandaloneBackend):
    """Axes' check, for password checks made on behalf of an HTTP request only."""

    def authenticate(self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any) -> None:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def cool_off_for(failures: int, limit: int, first: timedelta, longest: timedelta) -> timedelta:
    """The lock-out after ``failures`` failed attempts: ``first`` once the limit is reached,
    doubled for each further ``limit`` failures, never above ``longest``."""
    times_limit_reached = failures // max(limit, 1)
    return min(first * 2 ** min(max(times_limit_reached - 1, 0), 32), longest)


def cool_off(request: HttpRequest | None) -> timedelta:
    """``AXES_COOLOFF_TIME``: :func:`cool_off_for` the most failures recorded for the request's
    address or account (the first cool-off when there is no request to count)."""
    first = timedelta(minutes=settings.WEIR_SIGN_IN_COOLOFF_MINUTES)
    longest = timedelta(minutes=settings.WEIR_SIGN_IN_COOLOFF_MAX_MINUTES)
    address = getattr(request, "axes_ip_address", None)
    if request is None or address is None:
        return first
    username = get_client_username(request)
    matching = Q(ip_address=address) | Q(username=username) if username else Q(ip_address=address)
    failures = AccessAttempt.objects.filter(matching).aggregate(most=Max("failures_since_start"))["most"] or 0
    return cool_off_for(failures, settings.AXES_FAILURE_LIMIT, first, longest)


def retry_after_minutes(request: HttpRequest | None) -> int:
    """Whole minutes until a locked-out client may try again (the cool-off, rounded up)."""
    cool_off = get_cool_off(request)
    return max(1, math.ceil(cool_off.total_seconds() / 60)) if cool_off else 1


def lockout_response(request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict[str, Any] | None = None) -> HttpResponse:
    """``AXES_LOCKOUT_CALLABLE``: 429 with a ``Retry-After`` header and the minutes to wait."""
    minutes = retry_after_minutes(request)
    message = f"Too many sign-in attempts. Try again in {minutes} minute{'s' if minutes != 1 else ''}."
    wants_json = "application/json" in request.headers.get("Accept", "") or request.path.startswith("/api/")
    if wants_json:
        response: HttpResponse = JsonResponse(
            {"error_code": TOO_MANY_ATTEMPTS_STATUS, "message": message, "retry_after_minutes": minutes}, status=TOO_MANY_ATTEMPTS_STATUS
        )
    else:
        response = render(request, "locked_out.html", {"message": message, "minutes": minutes}, status=TOO_MANY_ATTEMPTS_STATUS)
    response["Retry-After"] = str(minutes * 60)
    return response
