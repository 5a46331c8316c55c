"""Which tenant a signed-in browser works in, and the page decorator that enforces it.

A user may belong to several tenants. The session remembers the chosen one under
``webapp.accounts.identity.SESSION_TENANT_KEY`` (the key the REST API reads for
session-authenticated calls, so the dashboard and the API agree); without a choice, the user's oldest membership wins.

Every tenant page is wrapped by :func:`tenant_page`: it requires a signed-in user with a
membership, attaches ``request.actor`` (an :class:`~webapp.accounts.identity.Actor`) and
``request.memberships`` (for the switcher), and refuses with 403 when the role is below the
page's minimum. Views then look objects up only through querysets filtered to
``request.actor.tenant``, so another tenant's object is simply not found (404).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from webapp.accounts.facade import SESSION_TENANT_KEY, Actor, Membership, Role, is_operator, role_at_least

View = Callable[..., HttpResponse]


def user_memberships(user: Any) -> list[Membership]:
    """The user's memberships with their tenants, oldest first (one query)."""
    return list(Membership.objects.filter(user=user).select_related("tenant", "user").order_by("created_at", "pk"))


def choose_membership(memberships: list[Membership], chosen_tenant_public_id: str | None) -> Membership | None:
    """The membership of the chosen tenant, else the oldest one, else None."""
    for membership in memberships:
        if membership.tenant.public_id == chosen_tenant_public_id:
            return membership
    return memberships[0] if memberships else None


def remember_tenant(request: HttpRequest, tenant_public_id: str) -> None:
    request.session[SESSION_TENANT_KEY] = tenant_public_id


def tenant_page(minimum_role: str = Role.VIEWER) -> Callable[[View], View]:
    """Decorate a dashboard view that works inside the current tenant.

    Anonymous users are sent to sign in; a user without any membership to the page that
    explains it; a role below ``minimum_role`` gets 403 (the object's existence is not at
    stake there: the user is a member of this tenant). Roles are ranked by
    ``webapp.accounts.roles``, the same rule the REST API applies.
    """

    def decorate(view: View) -> View:
        @login_required
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            memberships = user_memberships(request.user)
            membership = choose_membership(memberships, request.session.get(SESSION_TENANT_KEY))
            if membership is None:
                return redirect("dashboard:no_tenant")
            actor = Actor(tenant=membership.tenant, role=membership.role, membership=membership)
            if not role_at_least(actor.role, minimum_role):
                raise PermissionDenied(f"Your role ({actor.role}) may not do this in {actor.tenant.name}.")
            request.actor = actor  # type: ignore[attr-defined]
            request.memberships = memberships  # type: ignore[attr-defined]
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


def operator_page(view: View) -> View:
    """Decorate an operators-only view (staff users). An operator need not belong to any
    tenant: ``request.actor`` is then None and the page shows no tenant header."""

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_operator(request.user):
            raise PermissionDenied("Only operators may see this page.")
        memberships = user_memberships(request.user)
        membership = choose_membership(memberships, request.session.get(SESSION_TENANT_KEY))
        request.actor = Actor(tenant=membership.tenant, role=membership.role, membership=membership) if membership else None  # type: ignore[attr-defined]
        request.memberships = memberships  # type: ignore[attr-defined]
        return view(request, *args, **kwargs)

    return wrapper


def member_or_operator_page(view: View) -> View:
    """Decorate a view of the whole service that operators (with or without a tenant) and
    members of any role may see; the view tells them apart with ``is_operator``."""
    as_operator = operator_page(view)
    as_member = tenant_page()(view)

    @wraps(view)
    def dispatch(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return as_operator(request, *args, **kwargs) if is_operator(request.user) else as_member(request, *args, **kwargs)

    return dispatch


def page_context(request: HttpRequest, section: str, **values: Any) -> dict[str, Any]:
    """Template context every tenant page needs: the actor, the switcher, the nav section."""
    return {"actor": request.actor, "memberships": request.memberships, "section": section, **values}  # type: ignore[attr-defined]
