"""The partitions a classic consumer-group member was given, read from its SyncGroup assignment (ConsumerProtocolAssignment).

The broker never needs a classic member's assignment to run the group (the leader computes it
and the coordinator only hands the bytes on); it reads them to describe the group, so the
gRPC door and the control plane show which member owns which partitions, as Kafka's admin
client does for classic groups. The bytes' layout: ``consumer_protocol``.
"""

from __future__ import annotations

from broker_nodes.coordinator.groups.consumer_protocol import decode


def assigned_partitions(assignment: bytes) -> tuple[tuple[str, int], ...] | None:
    """The (plain topic, partition) pairs of a consumer member's assignment, sorted; None when the bytes are not one.

    Empty bytes (a member not assigned yet, or a group between generations) are no assignment: ().
    """
    if not assignment:
        return ()
    decoded = decode("assignment", assignment)
    if decoded is None:
        return None
    pairs = {(entry.topic, int(partition)) for entry in getattr(decoded, "assigned_partitions", ()) for partition in entry.partitions}
    return tuple(sorted(pairs))
