"""Who may do what in a tenant's registry (the roles of webapp.accounts.roles).

Any member key of the tenant (viewer and up) reads: subjects, versions, schemas by id, settings,
and compatibility checks, which change nothing. Registering and deleting schemas and setting a
compatibility level need developer, the role that writes topics through the REST API. Changing a
mode needs admin: READONLY stops every producer's registrations and IMPORT lets ids be chosen.
"""

from __future__ import annotations

from webapp.accounts.facade import Actor, NotAllowed, require_role
from webapp.schemas.errors import Forbidden


def require(actor: Actor, minimum: str, doing: str) -> None:
    """Forbidden (40301) unless the actor's role reaches ``minimum``."""
    try:
        require_role(actor, minimum, doing)
    except NotAllowed as error:
        raise Forbidden(error.message) from None
