"""Operators' read-only admin of provisioning jobs and snapshot versions."""

from django.contrib import admin

from webapp.provisioning.models import ProvisioningJob, SnapshotVersion
from webapp.read_only_admin import ReadOnlyModelAdmin


@admin.register(ProvisioningJob)
class ProvisioningJobAdmin(ReadOnlyModelAdmin):
    list_display = ["public_id", "kind", "target", "state", "attempts", "tenant", "created_at", "finished_at"]
    list_filter = ["state", "kind"]
    list_select_related = ["tenant"]
    search_fields = ["public_id", "target", "tenant__public_id", "error", "request_id"]
    date_hierarchy = "created_at"


@admin.register(SnapshotVersion)
class SnapshotVersionAdmin(ReadOnlyModelAdmin):
    list_display = ["kind", "version"]
