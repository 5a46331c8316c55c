"""The base of every REST view: authentication, action errors, and tenant scoping that
cannot be forgotten.

:class:`TenantScopedViewSet` filters every queryset to the caller's tenant before a
subclass sees it: subclasses implement ``safely_get_queryset(queryset)`` and defining
``get_queryset`` is refused when the class is created (PostHog's pattern). Objects of other
tenants are therefore never found: 404, never 403.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Model, QuerySet
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, status, viewsets
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from server_runtime.request_ids import current_request_id
from webapp.accounts.facade import (
    ActionError,
    Actor,
    CloudApiKeyAuthentication,
    Conflict,
    InvalidInput,
    NotAllowed,
    NotFound,
    Role,
    SessionActorAuthentication,
    StateConflict,
)
from webapp.api.permissions import HasRequiredRole, IsTenantMember
from webapp.api.schema import ERROR_DESCRIPTIONS, WeirAutoSchema

# The answer of an action that can raise Conflict (the schema adds the error body).
CONFLICT = OpenApiResponse(description=ERROR_DESCRIPTIONS["409"])


class ConflictError(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The resource already exists."
    default_code = "conflict"


class StateConflictError(exceptions.ValidationError):
    """A 409 whose body names the fields, like a 400's (``webapp.api.errors``)."""

    status_code = status.HTTP_409_CONFLICT


def api_exception_for(error: ActionError) -> exceptions.APIException:
    """The DRF exception (and so the HTTP status and error body) of an action error."""
    if isinstance(error, StateConflict):
        return StateConflictError(error.errors)
    if isinstance(error, InvalidInput):
        return exceptions.ValidationError(error.errors)
    if isinstance(error, Conflict):
        return ConflictError(error.message)
    if isinstance(error, NotAllowed):
        return exceptions.PermissionDenied(error.message)
    if isinstance(error, NotFound):
        return exceptions.NotFound(error.message)
    return exceptions.ValidationError({"detail": [error.message]})


class ActionErrorsMixin:
    """Authentication shared by every endpoint, and action errors answered as HTTP errors."""

    authentication_classes = [CloudApiKeyAuthentication, SessionActorAuthentication]
    # JSON bodies only: what the schema documents, and no form a foreign page could post.
    parser_classes = [JSONParser]
    schema = WeirAutoSchema()

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, ActionError):
            exc = api_exception_for(exc)
        return super().handle_exception(exc)  # type: ignore[misc]

    @property
    def request_id(self) -> str:
        """This request's id (X-Request-ID or a new one: ``webapp.request_ids.RequestIdMiddleware``)."""
        return current_request_id() or ""


class BaseApiView(ActionErrorsMixin, APIView):
    """A plain endpoint (no queryset), e.g. sign-up or the singleton tenant and quota."""


class TenantScopedViewSet(ActionErrorsMixin, viewsets.GenericViewSet):
    """A viewset over one model that has a ``tenant`` foreign key (``tenant_field``).

    ``read_role`` gates safe methods, ``write_role`` the others; ``required_roles`` may name
    a role per action. Subclasses narrow the tenant's queryset in ``safely_get_queryset``.
    """

    permission_classes = [IsTenantMember, HasRequiredRole]
    tenant_field = "tenant"
    read_role: str = Role.VIEWER
    write_role: str = Role.DEVELOPER
    required_roles: dict[str, str] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "get_queryset" in cls.__dict__:
            raise TypeError(
                f"{cls.__name__} must not override get_queryset: implement safely_get_queryset, "
                "which receives the queryset already filtered to the caller's tenant."
            )

    @property
    def actor(self) -> Actor:
        user = self.request.user
        assert isinstance(user, Actor), "IsTenantMember admits only actors"
        return user

    def required_role(self, request: Request) -> str:
        if self.action in self.required_roles:
            return self.required_roles[self.action]
        return self.read_role if request.method in ("GET", "HEAD", "OPTIONS") else self.write_role

    def get_queryset(self) -> QuerySet[Model]:
        base = self.queryset.all()  # type: ignore[union-attr]
        if getattr(self, "swagger_fake_view", False):
            # drf-spectacular builds the schema without a request user.
            return base.none()
        return self.safely_get_queryset(base.filter(**{self.tenant_field: self.actor.tenant}))

    def safely_get_queryset(self, queryset: QuerySet[Model]) -> QuerySet[Model]:
        """``queryset`` is already the caller's tenant's; narrow or annotate it here."""
        return queryset
