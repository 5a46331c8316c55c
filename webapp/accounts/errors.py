"""Typed errors of the domain actions (accounts and catalog).

Actions raise these; the REST layer (``webapp.api.views.base``) and the dashboard turn
them into responses. None of them is retriable: each says what is wrong with the request.
"""

from __future__ import annotations


class ActionError(Exception):
    """Base of every action error; ``message`` is safe to show to the caller."""

    retriable = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(ActionError):
    """The request breaks a rule; ``errors`` maps each offending field to its messages."""

    def __init__(self, errors: dict[str, object], message: str = "The request is invalid; see errors.") -> None:
        super().__init__(message)
        self.errors = errors

    @classmethod
    def for_field(cls, field: str, message: str) -> InvalidInput:
        return cls({field: [message]}, message)


class StateConflict(InvalidInput):
    """A well-formed request that the tenant's current state refuses (the last owner, a plan's
    limit, an owner that does not exist): HTTP 409, with ``errors`` naming the field. An
    InvalidInput, so that forms show it beside the field like any other."""


class Conflict(ActionError):
    """The object already exists (a duplicate name or binding): HTTP 409."""


class NotAllowed(ActionError):
    """The caller's role does not allow this within its tenant: HTTP 403."""


class NotFound(ActionError):
    """No such object in the caller's tenant (other tenants' objects are never named): HTTP 404."""
