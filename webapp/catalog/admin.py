"""Operators' read-only admin of the desired state: topics, partitions, ACLs, quotas."""

from django.contrib import admin

from webapp.catalog.models import AclBinding, Partition, Quota, Topic
from webapp.read_only_admin import ReadOnlyModelAdmin


class PartitionInline(admin.TabularInline):
    model = Partition
    extra = 0
    can_delete = False
    fields = ["index", "leader", "leader_epoch", "replicas", "isr"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


@admin.register(Topic)
class TopicAdmin(ReadOnlyModelAdmin):
    list_display = ["name", "tenant", "partition_count", "replication_factor", "topic_id", "created_at"]
    list_select_related = ["tenant"]
    search_fields = ["name", "tenant__public_id", "topic_id"]
    inlines = [PartitionInline]


@admin.register(AclBinding)
class AclBindingAdmin(ReadOnlyModelAdmin):
    list_display = ["public_id", "tenant", "principal", "permission", "operation", "resource_type", "resource_name", "pattern_type", "host"]
    list_filter = ["resource_type", "permission", "operation", "pattern_type"]
    list_select_related = ["tenant"]
    search_fields = ["public_id", "principal", "resource_name", "tenant__public_id"]


@admin.register(Quota)
class QuotaAdmin(ReadOnlyModelAdmin):
    list_display = ["tenant", "produce_bytes_per_second", "consume_bytes_per_second", "updated_at"]
    list_select_related = ["tenant"]
    search_fields = ["tenant__public_id", "tenant__name"]
