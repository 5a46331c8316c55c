"""What other apps use of the audit log."""

from webapp.audit.context import AuditContextMiddleware, audit_source, current_source
from webapp.audit.models import AuditEvent, Door
from webapp.audit.queries import EXPORT_LIMIT, AuditFilterError, AuditFilters, csv_text, event_row, filtered_events, parse_filters
from webapp.audit.recording import record_event, record_tenant_event

__all__ = [
    "EXPORT_LIMIT",
    "AuditContextMiddleware",
    "AuditEvent",
    "AuditFilterError",
    "AuditFilters",
    "Door",
    "audit_source",
    "csv_text",
    "current_source",
    "event_row",
    "filtered_events",
    "parse_filters",
    "record_event",
    "record_tenant_event",
]
