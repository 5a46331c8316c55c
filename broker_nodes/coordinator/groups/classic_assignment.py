"""The partitions a classic consumer-group member was given, read from its SyncGroup assignment (ConsumerProtocolAssignment).

The broker never needs a classic member's assignment to run the group (the leader computes it
and the coordinator only hands the bytes on); it reads them to describe the group, so the
gRPC door and the control plane show which member owns which partitions, as Kafka's admin
client does for classic groups. The bytes are a version (int16) and the assignment of that
version; a version newer than kio knows is read as the newest one it knows (newer versions
only add fields at the end, as Kafka's consumer protocol promises).
"""

from __future__ import annotations

import struct

from kio.schema.consumer_protocol_assignment.v0 import ConsumerProtocolAssignment as AssignmentV0
from kio.schema.consumer_protocol_assignment.v1 import ConsumerProtocolAssignment as AssignmentV1
from kio.schema.consumer_protocol_assignment.v2 import ConsumerProtocolAssignment as AssignmentV2
from kio.schema.consumer_protocol_assignment.v3 import ConsumerProtocolAssignment as AssignmentV3
from kio.serial import entity_reader

_SCHEMAS = (AssignmentV0, AssignmentV1, AssignmentV2, AssignmentV3)
_VERSION = struct.Struct(">h")


def assigned_partitions(assignment: bytes) -> tuple[tuple[str, int], ...] | None:
    """The (plain topic, partition) pairs of a consumer member's assignment, sorted; None when the bytes are not one.

    Empty bytes (a member not assigned yet, or a group between generations) are no assignment: ().
    """
    if not assignment:
        return ()
    if len(assignment) < _VERSION.size:
        return None
    (version,) = _VERSION.unpack_from(assignment)
    if version < 0:
        return None
    schema = _SCHEMAS[min(version, len(_SCHEMAS) - 1)]
    try:
        decoded, _ = entity_reader(schema)(memoryview(assignment), _VERSION.size)
    except Exception:  # kio raises several types for malformed bytes; any of them means "not an assignment we can read"
        return None
    pairs = {(entry.topic, int(partition)) for entry in getattr(decoded, "assigned_partitions", ()) for partition in entry.partitions}
    return tuple(sorted(pairs))
