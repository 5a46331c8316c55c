"""The values of the consumer-group admin API, as confluent-kafka's ``confluent_kafka`` and ``confluent_kafka.admin`` name them.

``ConsumerGroupState`` (with the states of Kafka's new protocol, KIP-848, beside the classic
ones), ``ConsumerGroupType`` (a KIP-848 group or a classic one, formed by stock Kafka clients
over the Kafka listener), ``ConsumerGroupTopicPartitions`` (argument and result of the group offset calls),
``Node`` (a group's coordinator), and the results of listing and describing groups. Code
written for confluent-kafka ports by changing its imports.
"""

from __future__ import annotations

import enum

from weir.admin_acls import AclOperation
from weir.errors import KafkaError
from weir.message import TopicPartition

__all__ = [
    "ConsumerGroupState",
    "ConsumerGroupType",
    "ConsumerGroupTopicPartitions",
    "Node",
    "ConsumerGroupListing",
    "ListConsumerGroupsResult",
    "MemberAssignment",
    "MemberDescription",
    "ConsumerGroupDescription",
]


class ConsumerGroupState(enum.Enum):
    """A group's state; the broker names it (``state_name`` / :meth:`parse`).

    Brokers speaking KIP-848 answer Empty, Assigning, Reconciling, Stable or Dead; the
    classic states are kept for code written for confluent-kafka. ``UNKOWN``,
    ``PREPARING_REBALANCING`` and ``COMPLETING_REBALANCING`` are confluent-kafka's spellings.
    """

    UNKNOWN = 0
    PREPARING_REBALANCE = 1
    COMPLETING_REBALANCE = 2
    STABLE = 3
    DEAD = 4
    EMPTY = 5
    ASSIGNING = 6
    RECONCILING = 7
    UNKOWN = 0
    PREPARING_REBALANCING = 1
    COMPLETING_REBALANCING = 2

    @classmethod
    def parse(cls, name: str) -> ConsumerGroupState:
        """The state a broker names (``"Stable"``, ``"PreparingRebalance"``...); UNKNOWN for any other name."""
        return _STATES_BY_NAME.get(name.replace("_", "").lower(), cls.UNKNOWN)

    @property
    def state_name(self) -> str:
        """The broker's name of this state (``"Stable"``), as ListGroups' states filter takes it."""
        return _NAMES_BY_STATE[self]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ConsumerGroupState):
            return NotImplemented
        return self.value < other.value


_NAMES_BY_STATE = {
    ConsumerGroupState.UNKNOWN: "Unknown",
    ConsumerGroupState.PREPARING_REBALANCE: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCE: "CompletingRebalance",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.EMPTY: "Empty",
    ConsumerGroupState.ASSIGNING: "Assigning",
    ConsumerGroupState.RECONCILING: "Reconciling",
}
_STATES_BY_NAME = {name.lower(): state for state, name in _NAMES_BY_STATE.items()}


class ConsumerGroupType(enum.Enum):
    """A group's protocol, as confluent-kafka's ``ConsumerGroupType``: CONSUMER (KIP-848) or CLASSIC (JoinGroup/SyncGroup).

    The broker names it as Kafka's ListGroups v5 does (``"consumer"``, ``"classic"``;
    ``type_name`` / :meth:`parse`). A group that only holds committed offsets is CLASSIC, as
    in Kafka.
    """

    UNKNOWN = 0
    CONSUMER = 1
    CLASSIC = 2

    @classmethod
    def parse(cls, name: str) -> ConsumerGroupType:
        """The type a broker names (``"consumer"``, ``"classic"``, any case); UNKNOWN for any other name."""
        return {"consumer": cls.CONSUMER, "classic": cls.CLASSIC}.get(name.lower(), cls.UNKNOWN)

    @property
    def type_name(self) -> str:
        """The broker's name of this type (``"classic"``), as ListGroups' types filter takes it; ``"unknown"`` for UNKNOWN."""
        return self.name.lower()

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ConsumerGroupType):
            return NotImplemented
        return self.value < other.value


class Node:
    """A broker: ``id``, ``id_string``, ``host``, ``port``, ``rack``."""

    def __init__(self, id: int, host: str, port: int, rack: str | None = None) -> None:  # noqa: A002 - confluent-kafka's name
        self.id = id
        self.id_string = str(id)
        self.host = host
        self.port = port
        self.rack = rack

    def __repr__(self) -> str:
        return f"Node({self.id}, {self.host}:{self.port})"

    def __str__(self) -> str:
        return f"({self.id}) {self.host}:{self.port}"


class ConsumerGroupTopicPartitions:
    """A group and some of its partitions: the argument and result of the group offset calls.

    ``topic_partitions`` None means every partition the group has committed offsets for
    (list_consumer_group_offsets).
    """

    def __init__(self, group_id: str, topic_partitions: list[TopicPartition] | None = None) -> None:
        self.group_id = group_id
        self.topic_partitions = topic_partitions

    def __repr__(self) -> str:
        return f"ConsumerGroupTopicPartitions({self.group_id}, {self.topic_partitions})"


class ConsumerGroupListing:
    """One group of list_consumer_groups(): ``group_id``, ``is_simple_consumer_group``, ``state``, ``type`` (a ConsumerGroupType)."""

    def __init__(
        self,
        group_id: str,
        is_simple_consumer_group: bool,
        state: ConsumerGroupState | None = None,
        type: ConsumerGroupType | None = None,  # noqa: A002 - confluent-kafka's name
    ) -> None:
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.state = state
        self.type = type

    def __repr__(self) -> str:
        return f"ConsumerGroupListing({self.group_id}, {self.state.name if self.state else None}, {self.type.name if self.type else None})"


class ListConsumerGroupsResult:
    """The result of list_consumer_groups(): ``valid`` listings, and ``errors`` of brokers that could not answer."""

    def __init__(self, valid: list[ConsumerGroupListing] | None = None, errors: list[KafkaError] | None = None) -> None:
        self.valid = valid if valid is not None else []
        self.errors = errors if errors is not None else []


class MemberAssignment:
    """The partitions of one member (``topic_partitions``)."""

    def __init__(self, topic_partitions: list[TopicPartition] | None = None) -> None:
        self.topic_partitions = list(topic_partitions or [])

    def __repr__(self) -> str:
        return f"MemberAssignment({self.topic_partitions})"


class MemberDescription:
    """One member of a described group.

    ``assignment`` is what it owns now; ``target_assignment`` where the coordinator is taking
    it (equal to ``assignment`` once the group is Stable). ``member_epoch`` and the
    subscription are Weir's additions (Kafka's describe returns them too).
    """

    def __init__(
        self,
        member_id: str,
        client_id: str,
        host: str,
        assignment: MemberAssignment,
        group_instance_id: str | None = None,
        target_assignment: MemberAssignment | None = None,
        member_epoch: int | None = None,
        subscribed_topics: list[str] | None = None,
        subscribed_topic_regex: str | None = None,
    ) -> None:
        self.member_id = member_id
        self.client_id = client_id
        self.host = host
        self.assignment = assignment
        self.group_instance_id = group_instance_id
        self.target_assignment = target_assignment
        self.member_epoch = member_epoch
        self.subscribed_topics = list(subscribed_topics or [])
        self.subscribed_topic_regex = subscribed_topic_regex

    def __repr__(self) -> str:
        return f"MemberDescription({self.member_id}, client_id={self.client_id}, assignment={self.assignment.topic_partitions})"


class ConsumerGroupDescription:
    """A described group: members, assignor, state, coordinator and ``type`` (plus Weir's epochs).

    A CLASSIC group's ``partition_assignor`` is its protocol (the client-side assignor its
    members chose), its epochs its generation, and its members' assignments what the leader
    gave them (decoded from Kafka's consumer protocol while the group is Stable).
    """

    def __init__(
        self,
        group_id: str,
        is_simple_consumer_group: bool,
        members: list[MemberDescription],
        partition_assignor: str,
        state: ConsumerGroupState,
        coordinator: Node | None,
        group_epoch: int = -1,
        assignment_epoch: int = -1,
        type: ConsumerGroupType = ConsumerGroupType.UNKNOWN,  # noqa: A002 - confluent-kafka's name
        authorized_operations: list[AclOperation] | None = None,
    ) -> None:
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.members = members
        self.partition_assignor = partition_assignor
        self.state = state
        self.coordinator = coordinator
        self.group_epoch = group_epoch
        self.assignment_epoch = assignment_epoch
        self.type = type
        # The caller's AclOperations on the group when asked for (describe_consumer_groups), else None.
        self.authorized_operations = authorized_operations

    def __repr__(self) -> str:
        return f"ConsumerGroupDescription({self.group_id}, {self.type.name}, {self.state.name}, {len(self.members)} members)"
