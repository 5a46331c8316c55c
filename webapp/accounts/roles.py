"""Roles from most to least powerful, and the one question views and actions ask of them.

    owner > admin > developer > viewer

viewer reads everything of the tenant except secrets; developer also creates and alters
topics and its own API keys; admin also manages ACLs, service accounts, any key, quotas and
invites non-owners; owner also manages members and roles, the tenant's plan and the tenant.

On the data plane a cluster API key of a member acts with the member's role, as a Confluent
Cloud user account's key does: an admin's or owner's key is the tenant's cluster administrator
(Confluent's CloudClusterAdmin), which the brokers let do everything on the tenant's names
without ACL bindings; a developer's or viewer's key gets what ACLs grant its principal. Such a
key gains nothing its owner could not grant itself (an admin manages the tenant's ACLs). A
service account's keys are ACL-only whatever its role (which is what its cloud keys act with):
an application's identity stays least-privileged, and existing applications' access never widens.
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


def acts_as_cluster_admin(role: str) -> bool:
    """Whether a cluster API key of a member with ``role`` is its tenant's cluster administrator
    (see the module docstring): admin and owner."""
    return role_at_least(role, Role.ADMIN)
