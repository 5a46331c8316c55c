"""confluent-kafka's cluster and topic description types, and how AdminClient builds them from the
broker's answers: ``TopicCollection`` (describe_topics' argument), ``TopicDescription`` with
``TopicPartitionInfo`` per partition, ``DescribeClusterResult``, and ``DeletedRecords``
(delete_records' result)."""

from __future__ import annotations

from grpc_protos.weir.v1 import broker_pb2
from weir.admin_acls import AclOperation
from weir.consumer_groups import Node

__all__ = ["DeletedRecords", "DescribeClusterResult", "TopicCollection", "TopicDescription", "TopicPartitionInfo"]


class TopicCollection:
    """Topics named by their names (describe_topics' argument)."""

    def __init__(self, topic_names: list[str]) -> None:
        self.topic_names = topic_names

    def __repr__(self) -> str:
        return f"TopicCollection({self.topic_names})"


class TopicPartitionInfo:
    """A partition of a described topic: its leader, replicas and in-sync replicas as Nodes."""

    def __init__(self, id: int, leader: Node | None, replicas: list[Node], isr: list[Node]) -> None:  # noqa: A002 - confluent-kafka's name
        self.id = id
        self.leader = leader
        self.replicas = replicas
        self.isr = isr

    def __repr__(self) -> str:
        return f"TopicPartitionInfo(id={self.id}, leader={self.leader}, replicas={self.replicas}, isr={self.isr})"


class TopicDescription:
    """A topic: name, id (a UUID string), whether internal, partitions, and the caller's authorized
    operations on it (None: not asked for, or not known)."""

    def __init__(
        self,
        name: str,
        topic_id: str | None,
        is_internal: bool,
        partitions: list[TopicPartitionInfo],
        authorized_operations: list[AclOperation] | None = None,
    ) -> None:
        self.name = name
        self.topic_id = topic_id
        self.is_internal = is_internal
        self.partitions = partitions
        self.authorized_operations = authorized_operations

    def __repr__(self) -> str:
        return f"TopicDescription({self.name}, {len(self.partitions)} partitions)"


class DescribeClusterResult:
    """The cluster: its id, the controller clients see, its brokers, and (when asked) the caller's operations on it."""

    def __init__(
        self, controller: Node | None, nodes: list[Node], cluster_id: str | None = None, authorized_operations: list[AclOperation] | None = None
    ) -> None:
        self.cluster_id = cluster_id
        self.controller = controller
        self.nodes = nodes
        self.authorized_operations = authorized_operations

    def __repr__(self) -> str:
        return f"DescribeClusterResult(cluster_id={self.cluster_id}, controller={self.controller}, {len(self.nodes)} nodes)"


class DeletedRecords:
    """delete_records' result for a partition: its log start offset (low watermark) now."""

    def __init__(self, low_watermark: int) -> None:
        self.low_watermark = low_watermark

    def __repr__(self) -> str:
        return f"DeletedRecords(low_watermark={self.low_watermark})"


def nodes_of(brokers: list[broker_pb2.BrokerNode]) -> dict[int, Node]:
    return {broker.node_id: Node(broker.node_id, broker.host, broker.port, broker.rack or None) for broker in brokers}


def operations_named(included: bool, names: list[str]) -> list[AclOperation] | None:
    """The AclOperations a broker named (None when not asked for); names this SDK does not know are left out."""
    return sorted(AclOperation[name] for name in names if name in AclOperation.__members__) if included else None


def cluster_description(response: broker_pb2.DescribeClusterResponse) -> DescribeClusterResult:
    nodes = nodes_of(list(response.brokers))
    operations = operations_named(response.authorized_operations_included, list(response.authorized_operations))
    return DescribeClusterResult(nodes.get(response.controller_id), sorted(nodes.values(), key=lambda node: node.id), response.cluster_id or None, operations)


def topic_description(topic: broker_pb2.TopicMetadata, nodes: dict[int, Node]) -> TopicDescription:
    """A described topic; a replica the broker list does not name is a Node with no address (host "", port -1)."""

    def node(node_id: int) -> Node:
        return nodes.get(node_id) or Node(node_id, "", -1)

    partitions = [
        TopicPartitionInfo(
            item.partition,
            node(item.leader_id) if item.leader_id >= 0 else None,
            [node(replica) for replica in item.replicas],
            [node(replica) for replica in item.isr],
        )
        for item in sorted(topic.partitions, key=lambda item: item.partition)
    ]
    operations = operations_named(topic.authorized_operations_included, list(topic.authorized_operations))
    return TopicDescription(topic.name, topic.topic_id or None, topic.is_internal, partitions, operations)


class GroupMember:
    """A member of a group as confluent-kafka's legacy ``list_groups`` reports it. ``metadata`` and
    ``assignment`` are the raw protocol bytes of classic groups, which Weir does not keep: b""."""

    def __init__(self, id: str, client_id: str, client_host: str, metadata: bytes = b"", assignment: bytes = b"") -> None:  # noqa: A002
        self.id = id
        self.client_id = client_id
        self.client_host = client_host
        self.metadata = metadata
        self.assignment = assignment


class GroupMetadata:
    """A group as confluent-kafka's legacy ``list_groups`` reports it: coordinator ``broker``, ``id``,
    ``error``, ``state`` (Kafka's name), ``protocol_type``, ``protocol`` (the assignor), ``members``."""

    def __init__(
        self,
        broker: object,
        id: str,  # noqa: A002 - confluent-kafka's name
        error: object,
        state: str,
        protocol_type: str,
        protocol: str,
        members: list[GroupMember],
    ) -> None:
        self.broker = broker
        self.id = id
        self.error = error
        self.state = state
        self.protocol_type = protocol_type
        self.protocol = protocol
        self.members = members

    def __repr__(self) -> str:
        return f"GroupMetadata({self.id}, {self.error})" if self.error is not None else f"GroupMetadata({self.id})"

    def __str__(self) -> str:
        return str(self.id)
