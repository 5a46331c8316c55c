"""Typed errors of classic groups (JoinGroup/SyncGroup/Heartbeat/LeaveGroup); ``server.errors`` maps each to its Kafka code.

The errors both kinds of group share (unknown member, fenced instance id, session timeout out
of range, group full) are those of ``groups.errors``. Messages name groups by their plain names.
"""

from __future__ import annotations

from broker_nodes import names
from broker_nodes.coordinator.groups.errors import GroupError, GroupIdNotFoundError


class RebalanceInProgressError(GroupError):
    """The group is rebalancing (REBALANCE_IN_PROGRESS): the member must rejoin."""

    def __init__(self, group_id: str) -> None:
        super().__init__(f"group {names.plain(group_id)!r} is rebalancing: rejoin the group")
        self.group_id = group_id


class IllegalGenerationError(GroupError):
    """A request of another generation than the group's (ILLEGAL_GENERATION): the member must rejoin."""

    def __init__(self, group_id: str, member_id: str, received: int, current: int) -> None:
        super().__init__(
            f"member {member_id!r} of group {names.plain(group_id)!r} sent generation {received}, but the group is at generation {current}: rejoin the group"
        )
        self.group_id = group_id
        self.member_id = member_id
        self.received = received
        self.current = current


class MemberIdRequiredError(GroupError):
    """A first JoinGroup (v4+) without a member id (MEMBER_ID_REQUIRED): join again with ``member_id``, which the answer carries."""

    def __init__(self, group_id: str, member_id: str) -> None:
        super().__init__(f"group {names.plain(group_id)!r}: join again with member id {member_id!r}")
        self.group_id = group_id
        self.member_id = member_id


class InconsistentGroupProtocolError(GroupError):
    """A member whose protocol type or protocols no member of the group shares, or a group of the other kind (INCONSISTENT_GROUP_PROTOCOL)."""

    def __init__(self, group_id: str, reason: str) -> None:
        super().__init__(f"group {names.plain(group_id)!r}: {reason}")
        self.group_id = group_id
        self.reason = reason


class NotConsumerGroupError(GroupIdNotFoundError):
    """A KIP-848 request (ConsumerGroupHeartbeat) for a classic group with members (GROUP_ID_NOT_FOUND, as Kafka 4 answers)."""

    def __init__(self, group_id: str) -> None:
        super().__init__(group_id)
        self.args = (f"group {names.plain(group_id)!r} is a classic group (JoinGroup/SyncGroup) with members, not a consumer group",)


class GroupSubscribedToTopicError(GroupError):
    """OffsetDelete of a partition whose topic the group's members subscribe to (GROUP_SUBSCRIBED_TO_TOPIC); nothing is deleted for it."""

    def __init__(self, group_id: str, topic: str) -> None:
        super().__init__(
            f"group {names.plain(group_id)!r} is subscribed to topic {names.plain(topic)!r}: its offsets can only be deleted once no member subscribes to it"
        )
        self.group_id = group_id
        self.topic = topic
