"""Operators' read-only admin of pipeline runs and state, usage and lag."""

from django.contrib import admin

from webapp.metering.models import GroupLag, PipelineRun, PipelineState, UsageAggregate
from webapp.read_only_admin import ReadOnlyModelAdmin


@admin.register(PipelineRun)
class PipelineRunAdmin(ReadOnlyModelAdmin):
    list_display = ["public_id", "pipeline", "status", "trigger", "started_at", "duration", "rows_written"]
    list_filter = ["pipeline", "status", "trigger"]
    search_fields = ["public_id", "error"]
    date_hierarchy = "started_at"


@admin.register(PipelineState)
class PipelineStateAdmin(ReadOnlyModelAdmin):
    list_display = ["pipeline", "updated_at"]


@admin.register(UsageAggregate)
class UsageAggregateAdmin(ReadOnlyModelAdmin):
    list_display = ["tenant", "topic", "granularity", "bucket_start", "bytes_in", "bytes_out", "storage_bytes_peak"]
    list_filter = ["granularity"]
    list_select_related = ["tenant"]
    search_fields = ["topic", "tenant__public_id"]
    date_hierarchy = "bucket_start"


@admin.register(GroupLag)
class GroupLagAdmin(ReadOnlyModelAdmin):
    list_display = ["tenant", "group", "status", "total_lag", "max_lag", "evaluated_at"]
    list_filter = ["status"]
    list_select_related = ["tenant"]
    search_fields = ["group", "tenant__public_id"]
