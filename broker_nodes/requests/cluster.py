"""DescribeCluster's transport-neutral part: the cluster's id, the controller id clients see, and
what the caller may do on the CLUSTER resource.

The controller is a control-plane service clients cannot reach, so, as for Metadata, the broker
answering names itself as the controller (KRaft brokers likewise name a live broker). The
broker list is the transport's own (each door advertises its own listeners).
"""

from __future__ import annotations

from dataclasses import dataclass

from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import CLUSTER_RESOURCE_NAME, Operation, ResourceType
from broker_nodes.server.broker import Broker

# The operations Kafka defines on the CLUSTER resource that Weir's authorizer knows.
CLUSTER_OPERATIONS = (Operation.CREATE, Operation.ALTER, Operation.DESCRIBE, Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS, Operation.IDEMPOTENT_WRITE)


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    cluster_id: str
    controller_id: int
    authorized_operations: frozenset[Operation] | None  # None: not asked for


def cluster_id(broker: Broker) -> str:
    """The id every broker of the cluster answers with: the controller's, from the cluster map
    (a broker's own id only while it has none: standalone, or before its first map). Clients
    refuse brokers that report different ids as members of different clusters."""
    snapshot = broker.cluster_state.snapshot
    return (snapshot.cluster_id if snapshot is not None else "") or broker.cluster_id


def describe_cluster(broker: Broker, call: CallContext, *, include_authorized_operations: bool) -> ClusterDescription:
    """The cluster as the caller sees it; its CLUSTER operations when asked and it may DESCRIBE the cluster (else none)."""
    operations: frozenset[Operation] | None = None
    if include_authorized_operations:
        if call.may(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME):
            operations = frozenset(operation for operation in CLUSTER_OPERATIONS if call.may(operation, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME))
        else:
            operations = frozenset()
    return ClusterDescription(cluster_id(broker), broker.config.node_id, operations)
