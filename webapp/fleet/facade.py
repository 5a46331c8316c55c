"""What other apps may read of the fleet: the registered brokers.

Placement (which brokers hold which partitions) belongs to provisioning; this module only
answers questions about the brokers themselves.
"""

from __future__ import annotations

from django.db.models import QuerySet

from webapp.fleet.models import BrokerNode, BrokerState


def brokers() -> QuerySet[BrokerNode]:
    """Every registered broker, by node id."""
    return BrokerNode.objects.order_by("node_id")


def registered_broker_count() -> int:
    """Brokers that are registered and not known to be down: what a replication factor may
    reach (each replica needs its own broker)."""
    return BrokerNode.objects.exclude(state=BrokerState.OFFLINE).count()
