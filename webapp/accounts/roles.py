"""Roles from most to least powerful, and the one question views and actions ask of them.

    owner > admin > developer > viewer

viewer reads everything of the tenant except secrets; developer also creates and alters
topics and its own API keys; admin also manages ACLs, service accounts, any key, quotas and
invites non-owners; owner also manages members and roles, the tenant's plan and the tenant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from webapp.accounts.errors import NotAllowed
from webapp.accounts.models import Role

if TYPE_CHECKING:
    from webapp.accounts.identity import Actor

ROLE_RANK: dict[str, int] = {Role.VIEWER: 0, Role.DEVELOPER: 1, Role.ADMIN: 2, Role.OWNER: 3}


def role_at_least(role: str, minimum: str) -> bool:
    """True when ``role`` may do what ``minimum`` may do."""
    return ROLE_RANK[role] >= ROLE_RANK[minimum]


def require_role(actor: Actor, minimum: str, doing: str) -> None:
    """Raise NotAllowed unless the actor's role reaches ``minimum``; ``doing`` completes
    "Your role may not ..." in the message."""
    if not role_at_least(actor.role, minimum):
        raise NotAllowed(f"Your role ({actor.role}) may not {doing}; that needs {minimum} or above.")
