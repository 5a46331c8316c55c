"""What other apps may read of the fleet: the registered brokers, and the placement rules
that spread replicas over them.

The Partition rows a placement produces belong to catalog (``webapp.catalog.placement_rows``);
this module answers questions about the brokers themselves and hands out the pure placement
algorithm (``webapp.fleet.placement``) and its errors.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, QuerySet

from webapp.fleet.models import CONTROLLER_EPOCH_ROW, DOWN_STATES, BrokerNode, BrokerState, ControllerEpoch
from webapp.fleet.placement import (
    InvalidReplicationFactorError,
    PlacementBroker,
    PlacementError,
    ReplicationFactorTooLargeError,
    assign_replicas,
    placement_order,
)

__all__ = [
    "BrokerNode",
    "BrokerState",
    "CONTROLLER_EPOCH_ROW",
    "ControllerEpoch",
    "DOWN_STATES",
    "InvalidReplicationFactorError",
    "PlacementBroker",
    "PlacementError",
    "REPLICATION_TARGET",
    "ReplicationFactorTooLargeError",
    "assign_replicas",
    "bootstrap_servers",
    "broker_state_counts",
    "kafka_bootstrap_servers",
    "brokers",
    "default_replication_factor",
    "placement_candidates",
    "placement_order",
    "registered_broker_count",
]

# Replicas the cluster aims for when the creator names none: Kafka's
# offsets.topic.replication.factor default, also used for the internal topics.
REPLICATION_TARGET = 3


def brokers() -> QuerySet[BrokerNode]:
    """Every registered broker, by node id."""
    return BrokerNode.objects.order_by("node_id")


def bootstrap_servers() -> str:
    """``host:port,...`` of the registered brokers, those not known to be down first; "" when
    none is registered. What a tool run beside a stack (``manage.py run_pipeline``) bootstraps
    from when WEIR_BOOTSTRAP_SERVERS is not set, rather than a default port where no broker may be."""
    nodes = sorted(BrokerNode.objects.order_by("node_id"), key=lambda node: node.state in DOWN_STATES)
    return ",".join(f"{node.host}:{node.port}" for node in nodes)


def kafka_bootstrap_servers() -> str:
    """``host:kafka_port,...`` of the registered brokers' Kafka-protocol listeners (for stock Kafka
    clients), those not known to be down first; "" when no registered broker has one."""
    nodes = sorted(BrokerNode.objects.order_by("node_id"), key=lambda node: node.state in DOWN_STATES)
    return ",".join(f"{node.host}:{node.kafka_port}" for node in nodes if node.kafka_port)


def broker_state_counts() -> dict[str, int]:
    """How many registered brokers are in each state, by state name (one query)."""
    rows = BrokerNode.objects.order_by("state").values("state").annotate(count=Count("pk"))
    return {row["state"]: row["count"] for row in rows}


def placement_candidates() -> list[PlacementBroker]:
    """Brokers new replicas may go to: every registered broker not known to be offline.

    A broker that was never probed (UNKNOWN) counts: ``make up`` registers brokers before the
    reconciler's first probe, and a topic created then must still spread over all of them.
    """
    rows = BrokerNode.objects.exclude(state__in=DOWN_STATES).values_list("node_id", "rack")
    return [PlacementBroker(node_id=node_id, rack=rack) for node_id, rack in rows]


def registered_broker_count() -> int:
    """Brokers that are registered and not known to be down: what a replication factor may
    reach (each replica needs its own broker)."""
    return BrokerNode.objects.exclude(state__in=DOWN_STATES).count()


def default_replication_factor() -> int:
    """Replicas of a topic whose creator names none (REST API, dashboard, SDK and CLI alike):
    WEIR_DEFAULT_REPLICATION_FACTOR when set, else min(3, brokers registered and not down), as
    managed Kafka services default; at least 1, so that with no broker the placement's error
    says how many are available."""
    configured = settings.WEIR_DEFAULT_REPLICATION_FACTOR
    if configured is not None:
        return int(configured)
    return max(1, min(REPLICATION_TARGET, registered_broker_count()))
