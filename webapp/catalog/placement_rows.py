"""Partition rows of a topic, placed over the registered brokers by the fleet's placement rules
(``webapp.fleet.placement``, through the fleet's facade)."""

from __future__ import annotations

from webapp.catalog.models import Partition, Topic
from webapp.fleet.facade import PlacementError, assign_replicas, placement_candidates, placement_order

__all__ = ["PlacementError", "place_partitions"]


def place_partitions(topic: Topic, start_index: int, count: int) -> list[Partition]:
    """Create the Partition rows ``start_index .. start_index + count - 1`` of ``topic``.

    Precondition: inside the transaction that creates or grows the topic (with
    ``record_change`` after it). New partitions of an existing topic continue the layout of
    its partition 0, as Kafka does when partitions are added. Raises ``PlacementError``
    (``ReplicationFactorTooLargeError``) when ``topic.replication_factor`` exceeds the brokers
    available; nothing is written then.
    """
    brokers = placement_candidates()
    start: int | None = None
    shift: int | None = None
    if start_index > 0:
        first = Partition.objects.filter(topic=topic, index=0).values_list("replicas", flat=True).first()
        node_ids = [broker.node_id for broker in placement_order(brokers)]
        if first and first[0] in node_ids:
            # Kafka's addPartitions: the existing partition 0's leader fixes both the start and the shift.
            start = shift = node_ids.index(first[0])
    assignment = assign_replicas(
        brokers,
        count,
        topic.replication_factor,
        first_partition=start_index,
        start_index=start,
        replica_shift=shift,
    )
    rows = [
        Partition(topic=topic, index=index, replicas=replicas, isr=list(replicas), leader=replicas[0], leader_epoch=0)
        for index, replicas in sorted(assignment.items())
    ]
    return Partition.objects.bulk_create(rows)
