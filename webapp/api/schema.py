"""The API's OpenAPI schema: authentication schemes, the error body, and the error answers
every operation can give (drf-spectacular extensions and the schema class of every view).

Imported by ``webapp.api.urls`` so that the extensions register before the schema is built.

Views declare their successful answers and the errors only they know of (409 for a conflict,
503 when brokers do not answer); :class:`WeirAutoSchema` adds the errors that follow from an
operation's shape, so that none can be forgotten and schemathesis's status-code check holds:

* 400 when the operation reads a body or query parameters (a bad one is named in ``errors``);
* 401 when it authenticates callers, 403 when a role or the CSRF check can refuse them;
* 404 when its path names a resource (another tenant's is not found either);
* 409 when it changes something (a duplicate, or a state that refuses it: ``StateConflict``);
* 415 when it reads a body that is not JSON.

Every error answer has the body of ``webapp.api.errors`` (:class:`ErrorSerializer`).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.drainage import set_override
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers
from rest_framework.permissions import AllowAny

from webapp.api.serializers.strict import InputSerializer

UNSAFE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
# The description of each error status the schema adds by itself.
ERROR_DESCRIPTIONS = {
    "400": "The request is invalid: errors names each bad parameter or field.",
    "401": "No credentials, or an unknown or revoked API key.",
    "403": "The caller's role may not do this (or, with a session, the CSRF token is missing).",
    "404": "No such resource in the caller's tenant.",
    "409": "The request conflicts with the current state: the resource exists, or the tenant's plan or last owner refuses it (errors names the field).",
    "415": "The body is not JSON (Content-Type application/json).",
    "503": "The brokers cannot be reached; try again later.",
}


class ErrorSerializer(serializers.Serializer):
    """The body of every error answer (Confluent REST v3's shape)."""

    error_code = serializers.IntegerField(help_text="The HTTP status, repeated.")
    message = serializers.CharField(help_text="What went wrong, for people.")
    errors = serializers.DictField(required=False, help_text="Validation failures only: parameter or field name -> messages.")


def single_object(serializer: serializers.Serializer) -> serializers.Serializer:
    """``serializer`` documented as one object even on a list action (drf-spectacular would
    wrap a list action's answer in an array): for lists answered as ``{"kind", "data"}``."""
    set_override(serializer, "many", False)
    return serializer


class WeirAutoSchema(AutoSchema):
    """drf-spectacular's schema, plus the error answers an operation's shape implies."""

    def get_operation(self, path: str, path_regex: str, path_prefix: str, method: str, registry: Any) -> dict[str, Any] | None:
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        responses = operation["responses"]
        for status in self._implied_error_statuses(operation):
            responses.setdefault(status, {"description": ERROR_DESCRIPTIONS[status]})
        error_body = {"application/json": {"schema": self.resolve_serializer(ErrorSerializer, "response").ref}}
        for status, response in responses.items():
            if status >= "400" and "content" not in response:
                response["content"] = error_body
                response["description"] = response.get("description") or ERROR_DESCRIPTIONS.get(status, "")
        operation["responses"] = dict(sorted(responses.items()))
        return operation

    def _map_basic_serializer(self, serializer: Any, direction: str) -> dict[str, Any]:
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and isinstance(serializer, InputSerializer):
            schema["additionalProperties"] = False
        return schema

    def _get_request_for_media_type(self, serializer: Any, direction: str = "request") -> Any:
        """drf-spectacular documents every PATCH body as partial; a serializer with
        ``patch_requires_fields`` (a PATCH of one required field) is documented as it is."""
        if self.method != "PATCH" or not getattr(serializer, "patch_requires_fields", False):
            return super()._get_request_for_media_type(serializer, direction)
        self.method = "PUT"
        try:
            return super()._get_request_for_media_type(serializer, direction)
        finally:
            self.method = "PATCH"

    def _implied_error_statuses(self, operation: dict[str, Any]) -> list[str]:
        statuses = []
        parameters = operation.get("parameters", [])
        if "requestBody" in operation or any(parameter["in"] == "query" for parameter in parameters):
            statuses.append("400")
        if "requestBody" in operation:
            statuses.append("415")
        if self.view.get_authenticators():
            statuses.append("401")
        refuses = any(not isinstance(permission, AllowAny) for permission in self.view.get_permissions())
        if refuses or (self.method in UNSAFE_METHODS and self.view.get_authenticators()):
            statuses.append("403")
        if any(parameter["in"] == "path" for parameter in parameters) or any(parameter["name"] == "cursor" for parameter in parameters):
            # A cursor that decodes but leads nowhere in the list is a page that does not exist.
            statuses.append("404")
        if self.method in UNSAFE_METHODS:
            # Every change can meet a duplicate or a state that refuses it (StateConflict).
            statuses.append("409")
        return sorted(statuses)


class CloudApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "webapp.accounts.authentication.CloudApiKeyAuthentication"
    name = "cloudApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "basic", "description": "A cloud API key as the user name and its secret as the password."}


class SessionScheme(OpenApiAuthenticationExtension):
    target_class = "webapp.accounts.authentication.SessionActorAuthentication"
    name = "session"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "apiKey", "in": "cookie", "name": "sessionid", "description": "The dashboard's session; unsafe methods need the X-CSRFToken header."}
