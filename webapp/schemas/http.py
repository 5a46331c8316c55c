"""The HTTP edge of the registry: HTTP Basic with a tenant's cloud API key, JSON bodies in and out
with Confluent's content type, and Confluent's error body for every failure.

Plain Django views (not DRF's): Confluent's clients send ``application/vnd.schemaregistry.v1+json``
and expect that type and ``{"error_code", "message"}`` back, and the registry stays out of the
``/api/v1/`` OpenAPI schema it does not follow. No session, no CSRF: a key authenticates each call.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions

from webapp.accounts.facade import Actor, CloudApiKeyAuthentication
from webapp.audit.facade import Door, audit_source
from webapp.schemas.errors import BadRequest, PayloadTooLarge, RegistryError, Unauthorized

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
logger = logging.getLogger(__name__)


class Call:
    """One authenticated request: the actor, the query string and the JSON body (a dict)."""

    def __init__(self, request: HttpRequest, actor: Actor) -> None:
        self.request = request
        self.actor = actor
        self.tenant = actor.tenant

    def flag(self, name: str) -> bool:
        """A boolean query parameter (``true``/``True``/``1``; confluent-kafka sends Python's ``True``)."""
        return self.request.GET.get(name, "").lower() in ("true", "1")

    def query(self, name: str, default: str = "") -> str:
        return self.request.GET.get(name, default)

    def body(self) -> dict[str, Any]:
        try:
            raw = self.request.body
        except RequestDataTooBig:
            raise PayloadTooLarge(f"The request body is over {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes.") from None
        if not raw:
            raise BadRequest("The request needs a JSON object body.")
        try:
            document = json.loads(raw)
        except (ValueError, RecursionError) as error:
            raise BadRequest(f"The request body is not JSON: {error}") from None
        if not isinstance(document, dict):
            raise BadRequest("The request body must be a JSON object.")
        return document


Handler = Callable[..., object]


def json_response(document: object, status: int = 200) -> HttpResponse:
    return HttpResponse(json.dumps(document), status=status, content_type=CONTENT_TYPE)


def error_response(error: RegistryError) -> HttpResponse:
    response = json_response({"error_code": error.error_code, "message": error.message}, status=error.http_status)
    if isinstance(error, Unauthorized):
        response["WWW-Authenticate"] = 'Basic realm="weir"'
    return response


def endpoint(handlers: Mapping[str, Handler]) -> Callable[..., HttpResponse]:
    """A view answering the methods in ``handlers`` (GET, POST, PUT, DELETE): each is called with the
    :class:`Call` and the path's parameters and returns the JSON document (or an HttpResponse)."""

    @csrf_exempt
    def view(request: HttpRequest, **path: str) -> HttpResponse:
        try:
            call = Call(request, authenticate(request))
            handler = handlers.get(request.method or "")
            if handler is None:
                return json_response({"error_code": 405, "message": "HTTP 405 Method Not Allowed"}, status=405)
            # The registry is a REST door (the audit middleware calls every path outside /api/ the dashboard's).
            with audit_source(Door.REST, request.META.get("REMOTE_ADDR")):
                result = handler(call, **path)
        except RegistryError as error:
            return error_response(error)
        return result if isinstance(result, HttpResponse) else json_response(result)

    return view


def authenticate(request: HttpRequest) -> Actor:
    """The actor of the request's cloud key; Unauthorized (40101) without a valid one."""
    try:
        result = CloudApiKeyAuthentication().authenticate(request)  # type: ignore[arg-type]
    except exceptions.AuthenticationFailed as error:
        raise Unauthorized(f"Unauthorized: {error.detail}") from None
    if result is None:
        raise Unauthorized("Unauthorized: send HTTP Basic credentials, a cloud API key and its secret.")
    actor, _ = result
    return actor  # type: ignore[no-any-return]


@csrf_exempt
def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    return json_response({"error_code": 404, "message": "HTTP 404 Not Found"}, status=404)
