"""Registering broker nodes with the control plane (``manage.py register_broker``)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from webapp.fleet.facade import BrokerNode, BrokerState
from webapp.provisioning.facade import JobKind, record_change


class BrokerRegistrationError(ValueError):
    """The broker's description is invalid. Not retriable."""

    retriable = False


@dataclass(frozen=True)
class Registration:
    broker: BrokerNode
    created: bool
    changed: bool


def register_broker(node_id: int, host: str, port: int, rack: str = "", kafka_port: int = 0) -> Registration:
    """Create or update broker ``node_id``; idempotent (the same arguments change nothing).

    ``kafka_port`` is the broker's Kafka-protocol listener on the same host (0: none). A new
    broker or a changed address, Kafka port or rack changes the cluster map every broker serves
    Metadata from, so it is recorded as a RECONCILE job that pushes every snapshot.
    """
    if node_id < 0:
        raise BrokerRegistrationError(f"node id must not be negative, not {node_id}")
    if not host:
        raise BrokerRegistrationError("host must not be empty")
    if not 1 <= port <= 65535:
        raise BrokerRegistrationError(f"port must be between 1 and 65535, not {port}")
    if not 0 <= kafka_port <= 65535:
        raise BrokerRegistrationError(f"Kafka port must be between 0 (none) and 65535, not {kafka_port}")
    with transaction.atomic():
        broker, created = BrokerNode.objects.select_for_update().get_or_create(
            node_id=node_id, defaults={"host": host, "port": port, "kafka_port": kafka_port, "rack": rack, "state": BrokerState.UNKNOWN}
        )
        changed = created or (broker.host, broker.port, broker.kafka_port, broker.rack) != (host, port, kafka_port, rack)
        if changed and not created:
            broker.host, broker.port, broker.kafka_port, broker.rack = host, port, kafka_port, rack
            broker.save(update_fields=["host", "port", "kafka_port", "rack"])
        if changed:
            record_change(None, JobKind.RECONCILE, f"broker {node_id} at {host}:{port}")
    return Registration(broker=broker, created=created, changed=changed)
