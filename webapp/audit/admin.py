"""Operators' read-only view of every tenant's audit log (support and incident review)."""

from django.contrib import admin

from webapp.audit.models import AuditEvent
from webapp.read_only_admin import ReadOnlyModelAdmin


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyModelAdmin):
    list_display = ["at", "tenant", "action", "target", "actor_principal", "actor_name", "api_key_id", "door", "client_ip"]
    list_select_related = ["tenant"]
    list_filter = ["door", "action"]
    search_fields = ["tenant__public_id", "action", "target", "actor_principal", "actor_name", "api_key_id"]
    date_hierarchy = "at"
