"""Who may call an endpoint: a member of a tenant with a high enough role, or an operator.

These are the coarse gate; actions apply the finer rules (keys for oneself, owners only
invite owners, ...). Role denials are 403: the caller is a member of this tenant, so the
answer reveals nothing about other tenants.
"""

from __future__ import annotations

from typing import Any

from rest_framework import permissions
from rest_framework.request import Request

from webapp.accounts.facade import Actor, is_operator, role_at_least


class IsTenantMember(permissions.BasePermission):
    """The caller acts within a tenant (a cloud key, or a signed-in member)."""

    message = "You are not a member of any tenant."

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.user, Actor)


class HasRequiredRole(permissions.BasePermission):
    """Reads need ``view.read_role``, everything else ``view.write_role`` (or the role the
    view's ``required_roles`` names for the current action)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        actor = request.user
        if not isinstance(actor, Actor):
            return False
        required = view.required_role(request)
        if role_at_least(actor.role, required):
            return True
        self.message = f"Your role ({actor.role}) may not do this; it needs {required} or above."
        return False


class IsTenantMemberOrOperator(permissions.BasePermission):
    message = "You are not a member of any tenant."

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.user, Actor) or is_operator(request.user)


class IsOperator(permissions.BasePermission):
    """A staff user signed in with a password (never a cloud key): views of the whole service."""

    message = "Only operators see this: it covers every tenant."

    def has_permission(self, request: Request, view: Any) -> bool:
        return is_operator(request.user)
