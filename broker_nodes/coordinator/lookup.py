"""Which broker coordinates a consumer group (Kafka's FindCoordinator, key type GROUP).

The coordinator of group G (its qualified id, ``tenant~group``) is the leader of partition
``partition_for_group(G, N)`` of ``__consumer_offsets`` in the cluster map; a standalone
broker (no map) leads every partition itself. A pure function of the map: no log is read
and nothing is locked.
"""

from __future__ import annotations

from broker_nodes.cluster_state import NO_LEADER, BrokerEndpoint, ClusterSnapshot
from broker_nodes.coordinator.offset_store import OFFSETS_TOPIC, CoordinatorNotAvailableError
from log_formats.offset_commit_records import partition_for_group


def find_coordinator(snapshot: ClusterSnapshot | None, group_id: str, this_broker: BrokerEndpoint) -> BrokerEndpoint:
    """The broker coordinating ``group_id`` (qualified, not empty); CoordinatorNotAvailableError when none can now.

    ``this_broker`` answers while standalone, and when this broker leads the partition but
    the map does not list it (as Metadata adds it to the map's brokers).
    """
    if snapshot is None:
        return this_broker
    topic = snapshot.topics.get(OFFSETS_TOPIC)
    if topic is None or not topic.partitions:
        raise CoordinatorNotAvailableError(group_id, f"{OFFSETS_TOPIC} is not in the cluster map yet")
    partition = partition_for_group(group_id, len(topic.partitions))
    leader_id = topic.partitions[partition].leader_id
    if leader_id == NO_LEADER:
        raise CoordinatorNotAvailableError(group_id, f"partition {partition} of {OFFSETS_TOPIC} has no leader")
    leader = snapshot.broker(leader_id)
    if leader is not None:
        return leader
    if leader_id == this_broker.node_id:
        return this_broker
    raise CoordinatorNotAvailableError(group_id, f"broker {leader_id}, the leader of partition {partition} of {OFFSETS_TOPIC}, is not in the cluster map")
