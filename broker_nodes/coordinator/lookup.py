"""Which broker coordinates a consumer group or a transactional id (Kafka's FindCoordinator, key types GROUP and TRANSACTION).

The coordinator of group G (its qualified id, ``tenant~group``) is the leader of partition
``partition_for_group(G, N)`` of ``__consumer_offsets`` in the cluster map; that of
transactional id T (qualified too) the leader of partition
``partition_for_transactional_id(T, N)`` of ``__transaction_state``. A standalone broker (no
map) leads every partition itself. Pure functions of the map: no log is read and nothing is
locked.
"""

from __future__ import annotations

from collections.abc import Callable

from broker_nodes.cluster_state import NO_LEADER, BrokerEndpoint, ClusterSnapshot
from broker_nodes.coordinator.offset_store import OFFSETS_TOPIC, CoordinatorNotAvailableError
from broker_nodes.coordinator.transactions.coordinator import TRANSACTION_STATE_TOPIC
from broker_nodes.coordinator.transactions.errors import TransactionCoordinatorNotAvailableError
from log_formats.offset_commit_records import partition_for_group
from log_formats.transaction_log_records import partition_for_transactional_id


def find_coordinator(snapshot: ClusterSnapshot | None, group_id: str, this_broker: BrokerEndpoint) -> BrokerEndpoint:
    """The broker coordinating ``group_id`` (qualified, not empty); CoordinatorNotAvailableError when none can now.

    ``this_broker`` answers while standalone, and when this broker leads the partition but
    the map does not list it (as Metadata adds it to the map's brokers).
    """
    return _leader_for(snapshot, OFFSETS_TOPIC, partition_for_group, group_id, this_broker, CoordinatorNotAvailableError)


def find_transaction_coordinator(snapshot: ClusterSnapshot | None, transactional_id: str, this_broker: BrokerEndpoint) -> BrokerEndpoint:
    """The broker coordinating ``transactional_id`` (qualified, not empty); TransactionCoordinatorNotAvailableError when none can now."""
    return _leader_for(
        snapshot, TRANSACTION_STATE_TOPIC, partition_for_transactional_id, transactional_id, this_broker, TransactionCoordinatorNotAvailableError
    )


def _leader_for(
    snapshot: ClusterSnapshot | None,
    topic_name: str,
    partition_for: Callable[[str, int], int],
    key: str,
    this_broker: BrokerEndpoint,
    not_available: Callable[[str, str], Exception],
) -> BrokerEndpoint:
    if snapshot is None:
        return this_broker
    topic = snapshot.topics.get(topic_name)
    if topic is None or not topic.partitions:
        raise not_available(key, f"{topic_name} is not in the cluster map yet")
    partition = partition_for(key, len(topic.partitions))
    leader_id = topic.partitions[partition].leader_id
    if leader_id == NO_LEADER:
        raise not_available(key, f"partition {partition} of {topic_name} has no leader")
    leader = snapshot.broker(leader_id)
    if leader is not None:
        return leader
    if leader_id == this_broker.node_id:
        return this_broker
    raise not_available(key, f"broker {leader_id}, the leader of partition {partition} of {topic_name}, is not in the cluster map")
