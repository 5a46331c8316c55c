"""One error body for the whole API, shaped like Confluent's REST v3 errors.

    {"error_code": 400, "message": "...", "errors": {"field": ["..."]}}

``errors`` appears for validation failures (field -> messages); ``error_code`` repeats the
HTTP status, as Confluent does. An unexpected error answers 500 with the request id only
(:func:`server_error_body`, from ``webapp.error_pages``): never the exception's text.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exception: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler with our body; unknown exceptions still become a 500 from Django."""
    if isinstance(exception, Http404):
        exception = exceptions.NotFound()
    elif isinstance(exception, PermissionDenied):
        exception = exceptions.PermissionDenied()
    response = drf_exception_handler(exception, context)
    if response is None:
        return None
    body: dict[str, Any] = {"error_code": response.status_code}
    detail = response.data
    if isinstance(exception, exceptions.ValidationError) and isinstance(detail, dict):
        non_field = detail.pop("non_field_errors", None) or detail.pop("detail", None)
        body["message"] = _first_message(non_field) if non_field else "The request is invalid; see errors."
        body["errors"] = detail
    elif isinstance(detail, dict) and "detail" in detail:
        body["message"] = str(detail["detail"])
    elif isinstance(detail, list):
        body["message"] = _first_message(detail)
    else:
        body["message"] = str(detail)
    if response.status_code == status.HTTP_401_UNAUTHORIZED and "WWW-Authenticate" not in response:
        response["WWW-Authenticate"] = 'Basic realm="weir"'
    response.data = body
    return response


def server_error_body(request_id: str) -> dict[str, Any]:
    """The body of a 500: what to quote when reporting it, and nothing about the failure."""
    return {
        "error_code": status.HTTP_500_INTERNAL_SERVER_ERROR,
        "message": f"Internal server error. Quote request id {request_id} when reporting it.",
        "request_id": request_id,
    }


def _first_message(value: Any) -> str:
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return str(value)
