"""Reading a tenant's audit log: filters parsed from a query string, rows for export.

Every read starts from :func:`tenant_events`, so another tenant's rows are never reachable.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db.models import Q, QuerySet
from django.utils.dateparse import parse_datetime

from webapp.audit.models import AuditEvent, Door

EXPORT_LIMIT = 10_000  # rows in one CSV/JSON export (the newest first); narrow the filters for more
EXPORT_FIELDS = ("id", "at", "actor_principal", "actor_name", "api_key_id", "door", "client_ip", "action", "target", "summary")


class AuditFilterError(ValueError):
    """A filter value that cannot be used; ``field`` names the query parameter."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class AuditFilters:
    actor: str = ""  # a principal, member name or API key id (substring, case-insensitive)
    action: str = ""  # an action ("acl.create") or its family ("acl")
    door: str = ""
    since: datetime | None = None
    until: datetime | None = None

    @property
    def is_empty(self) -> bool:
        return not (self.actor or self.action or self.door or self.since or self.until)


def _time(params: Mapping[str, str], field: str) -> datetime | None:
    text = (params.get(field) or "").strip()
    if not text:
        return None
    try:
        value = parse_datetime(text)
    except ValueError:
        value = None
    if value is None:
        raise AuditFilterError(field, f"{text!r} is not a time; use ISO 8601, e.g. 2026-01-31T12:00:00Z (UTC unless an offset is given).")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


def parse_filters(params: Mapping[str, str]) -> AuditFilters:
    """Filters from query parameters ``actor``, ``action``, ``door``, ``since``, ``until``; AuditFilterError names a bad one."""
    door = (params.get("door") or "").strip()
    if door and door not in Door.values:
        raise AuditFilterError("door", f"One of {', '.join(Door.values)}.")
    since, until = _time(params, "since"), _time(params, "until")
    if since and until and since > until:
        raise AuditFilterError("until", "The end of the range is before its start.")
    return AuditFilters(
        actor=(params.get("actor") or "").strip()[:150],
        action=(params.get("action") or "").strip()[:64],
        door=door,
        since=since,
        until=until,
    )


def tenant_events(tenant: Any) -> QuerySet[AuditEvent]:
    return AuditEvent.objects.filter(tenant=tenant)


def filtered_events(tenant: Any, filters: AuditFilters) -> QuerySet[AuditEvent]:
    """The tenant's events matching ``filters``, newest first."""
    events = tenant_events(tenant)
    if filters.actor:
        events = events.filter(Q(actor_principal__icontains=filters.actor) | Q(actor_name__icontains=filters.actor) | Q(api_key_id__iexact=filters.actor))
    if filters.action:
        events = events.filter(Q(action=filters.action) | Q(action__startswith=f"{filters.action}."))
    if filters.door:
        events = events.filter(door=filters.door)
    if filters.since:
        events = events.filter(at__gte=filters.since)
    if filters.until:
        events = events.filter(at__lte=filters.until)
    return events.order_by("-at", "-pk")


def event_row(event: AuditEvent) -> dict[str, Any]:
    """One event as the API and the exports show it."""
    return {
        "id": event.public_id,
        "at": event.at.isoformat().replace("+00:00", "Z"),
        "actor_principal": event.actor_principal,
        "actor_name": event.actor_name,
        "api_key_id": event.api_key_id,
        "door": event.door,
        "client_ip": event.client_ip,
        "action": event.action,
        "target": event.target,
        "summary": event.summary,
    }


def csv_text(events: Iterable[AuditEvent]) -> str:
    """The events as CSV (a header row, the summary as compact JSON)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPORT_FIELDS)
    for event in events:
        row = event_row(event)
        row["summary"] = json.dumps(row["summary"], sort_keys=True, separators=(",", ":"))
        writer.writerow([_csv_safe(row[field]) for field in EXPORT_FIELDS])
    return buffer.getvalue()


def _csv_safe(value: Any) -> str:
    """A cell that a spreadsheet will not run as a formula (values can be tenant-chosen names)."""
    text = "" if value is None else str(value)
    return f"'{text}" if text[:1] in ("=", "+", "-", "@") else text
