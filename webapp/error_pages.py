"""The answer to an unexpected error (``handler500``): the request id and nothing else.

A page or API caller learns that something failed and the id to quote; the operator finds the
traceback in the log lines carrying that id (``webapp.request_ids``). No exception text is
shown: it can hold names and values of another tenant, or a credential. Under ``/api/`` the
answer is the API's JSON error body (``webapp.api.errors``); elsewhere the plain ``500.html``,
rendered without context processors or a database, since either may be what failed.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.template import loader
from django.views.decorators.csrf import requires_csrf_token

from server_runtime.request_ids import current_request_id
from webapp.api.facade import server_error_body

# Paths answered with the API's JSON error body rather than the HTML page.
API_PATH_PREFIX = "/api/"


def request_id_of(request: HttpRequest) -> str:
    """The id ``RequestIdMiddleware`` gave the request (or the current one, or "unknown")."""
    return getattr(request, "request_id", None) or current_request_id() or "unknown"


@requires_csrf_token
def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: JSON under ``/api/``, else ``500.html``; both name the request id only."""
    request_id = request_id_of(request)
    if request.path.startswith(API_PATH_PREFIX):
        return JsonResponse(server_error_body(request_id), status=500)
    page = loader.get_template("500.html").render({"request_id": request_id})
    return HttpResponseServerError(page)
