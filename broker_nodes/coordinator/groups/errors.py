"""Typed errors of consumer groups; ``server.errors`` maps each to its Kafka error code.

Messages name groups and topics by their plain names (the tenant is never shown) and say
what the member should do.
"""

from __future__ import annotations

from broker_nodes import names


class GroupError(Exception):
    retriable = False


class UnknownMemberIdError(GroupError):
    """The member is not in the group (UNKNOWN_MEMBER_ID): it must rejoin with epoch 0."""

    def __init__(self, group_id: str, member_id: str) -> None:
        super().__init__(f"group {names.plain(group_id)!r} has no member {member_id!r}: rejoin the group with member epoch 0")
        self.group_id = group_id
        self.member_id = member_id


class FencedMemberEpochError(GroupError):
    """A member epoch the coordinator does not accept (FENCED_MEMBER_EPOCH): give up every partition and rejoin."""

    def __init__(self, group_id: str, member_id: str, received: int, current: int) -> None:
        relation = "newer" if received > current else "older"
        super().__init__(
            f"member {member_id!r} of group {names.plain(group_id)!r} sent member epoch {received}, {relation} than its epoch {current}: "
            "it is fenced and must give up all its partitions and rejoin with epoch 0"
        )
        self.group_id = group_id
        self.member_id = member_id
        self.received = received
        self.current = current


class StaleMemberEpochError(GroupError):
    """An offset commit with an older member epoch (STALE_MEMBER_EPOCH): retry with the current one."""

    def __init__(self, group_id: str, member_id: str, received: int, current: int) -> None:
        super().__init__(
            f"offset commit of member {member_id!r} of group {names.plain(group_id)!r} carries member epoch {received}, "
            f"but its epoch is now {current}: commit again with the current epoch"
        )
        self.group_id = group_id
        self.member_id = member_id
        self.received = received
        self.current = current


class UnreleasedInstanceIdError(GroupError):
    """A static member joins while another live member holds its group.instance.id (UNRELEASED_INSTANCE_ID)."""

    def __init__(self, group_id: str, instance_id: str, holder: str) -> None:
        super().__init__(
            f"group.instance.id {instance_id!r} of group {names.plain(group_id)!r} is still used by member {holder!r}: "
            "that member must leave (or time out) first"
        )
        self.group_id = group_id
        self.instance_id = instance_id
        self.holder = holder


class FencedInstanceIdError(GroupError):
    """A heartbeat whose member id is not the one holding its group.instance.id (FENCED_INSTANCE_ID)."""

    def __init__(self, group_id: str, instance_id: str, member_id: str, holder: str) -> None:
        super().__init__(
            f"member {member_id!r} of group {names.plain(group_id)!r} is fenced: group.instance.id {instance_id!r} now belongs to member {holder!r}"
        )
        self.group_id = group_id
        self.instance_id = instance_id
        self.member_id = member_id
        self.holder = holder


class UnsupportedAssignorError(GroupError):
    """A server assignor the broker does not offer (UNSUPPORTED_ASSIGNOR)."""

    def __init__(self, name: str, offered: tuple[str, ...]) -> None:
        super().__init__(f"server assignor {name!r} is not supported: this broker offers {', '.join(offered)}")
        self.name = name
        self.offered = offered


class GroupMaxSizeReachedError(GroupError):
    def __init__(self, group_id: str, max_size: int) -> None:
        super().__init__(f"group {names.plain(group_id)!r} already has group.consumer.max.size={max_size} members")
        self.group_id = group_id
        self.max_size = max_size


class InvalidGroupRequestError(GroupError):
    """A heartbeat or commit that breaks the protocol (INVALID_REQUEST), with what was wrong."""


class InvalidSessionTimeoutError(GroupError):
    def __init__(self, session_timeout_ms: int, minimum: int, maximum: int) -> None:
        super().__init__(
            f"session timeout {session_timeout_ms} ms is outside the range this broker allows: "
            f"group.consumer.min.session.timeout.ms={minimum} to group.consumer.max.session.timeout.ms={maximum}"
        )
        self.session_timeout_ms = session_timeout_ms
        self.minimum = minimum
        self.maximum = maximum


class GroupIdNotFoundError(GroupError):
    def __init__(self, group_id: str) -> None:
        super().__init__(f"group {names.plain(group_id)!r} does not exist")
        self.group_id = group_id


class NonEmptyGroupError(GroupError):
    def __init__(self, group_id: str, members: int) -> None:
        super().__init__(f"group {names.plain(group_id)!r} has {members} members: stop them before deleting the group")
        self.group_id = group_id
        self.members = members


class ActiveGroupError(GroupError):
    """A commit without a member id (an admin or assign()-style commit) to a group with members (UNKNOWN_MEMBER_ID).

    Kafka answers AlterConsumerGroupOffsets on an active group the same way.
    """

    def __init__(self, group_id: str, members: int) -> None:
        super().__init__(f"group {names.plain(group_id)!r} has {members} active members: stop them before altering its offsets")
        self.group_id = group_id
        self.members = members


class PartitionNotAssignedError(GroupError):
    """A member commits an offset of a partition it does not own (per partition, INVALID_REQUEST); nothing is written."""

    def __init__(self, group_id: str, member_id: str, topic: str, partition: int) -> None:
        super().__init__(f"partition {partition} of topic {names.plain(topic)!r} is not assigned to member {member_id!r} of group {names.plain(group_id)!r}")
        self.group_id = group_id
        self.member_id = member_id
        self.topic = topic
        self.partition = partition
