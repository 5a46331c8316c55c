"""Operators' read-only admin of the broker fleet (brokers register themselves)."""

from django.contrib import admin

from webapp.fleet.models import BrokerNode
from webapp.read_only_admin import ReadOnlyModelAdmin


@admin.register(BrokerNode)
class BrokerNodeAdmin(ReadOnlyModelAdmin):
    list_display = ["node_id", "host", "port", "rack", "state", "last_seen_at", "registered_at"]
    list_filter = ["state", "rack"]
