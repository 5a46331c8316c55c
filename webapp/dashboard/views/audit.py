"""The tenant's audit log (admins): filters by actor, action, door and time; CSV and JSON export."""

from __future__ import annotations

import json

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.accounts.facade import Role
from webapp.audit.facade import EXPORT_LIMIT, AuditFilterError, AuditFilters, Door, csv_text, event_row, filtered_events, parse_filters
from webapp.dashboard.tenancy import page_context, tenant_page

PAGE_SIZE = 50
EXPORT_FORMATS = ("csv", "json")


@tenant_page(Role.ADMIN)
def audit_log(request: HttpRequest) -> HttpResponse:
    tenant = request.actor.tenant  # type: ignore[attr-defined]
    error = None
    try:
        filters = parse_filters(request.GET)
    except AuditFilterError as problem:
        filters, error = AuditFilters(), problem
    events = filtered_events(tenant, filters)
    export = request.GET.get("export", "")
    if export in EXPORT_FORMATS and error is None:
        return _export(events[:EXPORT_LIMIT], export, tenant.public_id)
    page = Paginator(events, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    query.pop("export", None)
    context = page_context(
        request,
        "audit",
        page=page,
        filters=request.GET,
        error=error,
        doors=Door.choices,
        query=query.urlencode(),
    )
    return render_page(request, context)


def render_page(request: HttpRequest, context: dict[str, object]) -> HttpResponse:
    return render(request, "dashboard/audit/list.html", context, status=400 if context["error"] else 200)


def _export(events: object, export: str, tenant_id: str) -> HttpResponse:
    if export == "csv":
        response = HttpResponse(csv_text(events), content_type="text/csv; charset=utf-8")  # type: ignore[arg-type]
    else:
        rows = [event_row(event) for event in events]  # type: ignore[attr-defined]
        response = HttpResponse(json.dumps(rows, indent=1), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="audit-log-{tenant_id}.{export}"'
    return response
