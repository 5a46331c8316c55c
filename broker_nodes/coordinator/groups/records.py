"""The records of consumer groups in ``__consumer_offsets``: Kafka's KIP-848 layouts, key versions 3 to 8.

Keys are non-flexible (int16 version, then int16-length strings); values are version 0 of
Kafka's flexible encoding (int16 version, compact strings and arrays as unsigned varint
length + 1, 16-byte UUIDs, a tagged-field section after each struct):

====  =======================================  ==========================================================
key   record                                   value fields
====  =======================================  ==========================================================
3     ConsumerGroupMetadata (group)            Epoch int32
4     ConsumerGroupPartitionMetadata (group)   Epoch int32, Topics [TopicId, TopicName, NumPartitions, PartitionRacks]
5     ConsumerGroupMemberMetadata (member)     InstanceId?, RackId?, ClientId, ClientHost, SubscribedTopicNames,
                                               SubscribedTopicRegex?, RebalanceTimeoutMs int32, ServerAssignor?
6     ConsumerGroupTargetAssignmentMetadata    AssignmentEpoch int32
7     ConsumerGroupTargetAssignmentMember      TopicPartitions [TopicId, Partitions []int32]
8     ConsumerGroupCurrentMemberAssignment     MemberEpoch, PreviousMemberEpoch int32, State int8,
                                               AssignedPartitions, PartitionsPendingRevocation
====  =======================================  ==========================================================

Weir adds what it needs as tagged fields with tags from 1000 up, which Kafka's readers skip:
the group's empty-since time (3), the member's session timeout and resolved topics (5), and
the topic name beside each TopicId (7, 8), since this broker names topics, not ids, and a
deleted topic's id can no longer be looked up. Group and topic names are stored qualified
(``tenant~name``), except the subscribed topic names, kept as the member sent them. A null value (tombstone) removes what the key names.

:func:`group_records` turns the difference between two states of a group into records;
:func:`decode` reads one back for :mod:`loaded_groups` to replay.
"""

from __future__ import annotations

import enum
import struct
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from broker_nodes.coordinator.groups.group import ConsumerGroup, TopicInfo
from broker_nodes.coordinator.groups.member import Member, MemberState, TopicPartition
from log_formats.kafka_schema import SchemaReader, SchemaWriter

VALUE_VERSION = 0  # every group record value is version 0 (flexible)
ZERO_UUID = bytes(16)  # Kafka's Uuid.ZERO_UUID: no topic id known
TAG_EMPTY_SINCE = 1000  # ConsumerGroupMetadataValue: int64 ms when the group last became empty
TAG_SESSION_TIMEOUT = 1000  # ConsumerGroupMemberMetadataValue: int32 session timeout ms
TAG_SUBSCRIBED_TOPICS = 1001  # ConsumerGroupMemberMetadataValue: compact array of resolved topic names
TAG_TOPIC_NAME = 1000  # TopicPartitions struct: the topic's (qualified) name

_INT16 = struct.Struct(">h")


class RecordKind(enum.IntEnum):
    """Key versions of the group records."""

    GROUP_METADATA = 3
    PARTITION_METADATA = 4
    MEMBER_METADATA = 5
    TARGET_METADATA = 6
    TARGET_MEMBER = 7
    CURRENT_ASSIGNMENT = 8


GROUP_RECORD_KEY_VERSIONS = frozenset(int(kind) for kind in RecordKind)
_MEMBER_KINDS = (RecordKind.MEMBER_METADATA, RecordKind.TARGET_MEMBER, RecordKind.CURRENT_ASSIGNMENT)


class GroupRecordError(ValueError):
    """Bytes that do not decode as a group record."""

    retriable = False


# ---------------------------------------------------------------------- primitives


def _writer() -> SchemaWriter:
    """A writer of values (flexible)."""
    return SchemaWriter(GroupRecordError, flexible=True)


def _reader(data: bytes) -> SchemaReader:
    """A reader of values or of their tagged fields (flexible)."""
    return SchemaReader(data, GroupRecordError, flexible=True)


def _tag_bytes(write: Callable[[SchemaWriter], None]) -> bytes:
    writer = _writer()
    write(writer)
    return writer.to_bytes()


def _compact_string_bytes(text: str) -> bytes:
    writer = _writer()
    writer.string(text)
    return writer.to_bytes()


def _topic_id_bytes(topic_id: str | None) -> bytes:
    if not topic_id:
        return ZERO_UUID
    try:
        return uuid.UUID(topic_id).bytes
    except ValueError:
        return ZERO_UUID


# ---------------------------------------------------------------------- decoded records


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    epoch: int
    empty_since_ms: int


@dataclass(frozen=True, slots=True)
class PartitionMetadataValue:
    epoch: int
    topics: dict[str, TopicInfo]


@dataclass(frozen=True, slots=True)
class TargetMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class TargetMemberValue:
    partitions: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class CurrentAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: frozenset[TopicPartition]
    pending_revocation: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """One decoded record; ``value`` None is a tombstone. Member metadata values are :class:`Member` (assignment fields unset)."""

    kind: RecordKind
    group_id: str
    member_id: str  # "" for group-level records
    value: object | None


# ---------------------------------------------------------------------- keys


def encode_key(kind: RecordKind, group_id: str, member_id: str = "") -> bytes:
    writer = SchemaWriter(GroupRecordError)  # keys are not flexible
    writer.int16(int(kind))
    for text in (group_id, member_id) if kind in _MEMBER_KINDS else (group_id,):
        writer.string(text)
    return writer.to_bytes()


def _key_string(reader: SchemaReader) -> str:
    text = reader.string()
    if text is None:
        raise GroupRecordError("a key string must not be null")
    return text


def key_version(key: bytes) -> int:
    if len(key) < 2:
        raise GroupRecordError("key shorter than its version field")
    return int(_INT16.unpack_from(key, 0)[0])


# ---------------------------------------------------------------------- values


def _value_writer() -> SchemaWriter:
    writer = _writer()
    writer.int16(VALUE_VERSION)
    return writer


def _write_topic_partitions(writer: SchemaWriter, partitions: frozenset[TopicPartition], topic_ids: Mapping[str, str]) -> None:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    writer.count(len(by_topic))
    for topic in sorted(by_topic):
        writer.raw(_topic_id_bytes(topic_ids.get(topic)))
        numbers = sorted(by_topic[topic])
        writer.count(len(numbers))
        for number in numbers:
            writer.int32(number)
        writer.tagged_fields({TAG_TOPIC_NAME: _compact_string_bytes(topic)})


def _read_topic_partitions(reader: SchemaReader) -> frozenset[TopicPartition]:
    result: set[TopicPartition] = set()
    for _ in range(reader.count()):
        reader.uuid()
        numbers = [reader.int32() for _ in range(reader.count())]
        tagged = reader.tagged_fields()
        if TAG_TOPIC_NAME not in tagged:
            continue  # written without Weir's topic name: the partitions cannot be named here
        topic = _reader(tagged[TAG_TOPIC_NAME]).string() or ""
        result.update((topic, number) for number in numbers)
    return frozenset(result)


def encode_group_metadata(epoch: int, empty_since_ms: int) -> bytes:
    writer = _value_writer()
    writer.int32(epoch)
    writer.tagged_fields({TAG_EMPTY_SINCE: _tag_bytes(lambda tag: tag.int64(empty_since_ms))})
    return writer.to_bytes()


def encode_partition_metadata(epoch: int, topics: Mapping[str, TopicInfo]) -> bytes:
    writer = _value_writer()
    writer.int32(epoch)
    writer.count(len(topics))
    for name in sorted(topics):
        writer.raw(_topic_id_bytes(topics[name].topic_id))
        writer.string(name)
        writer.int32(topics[name].partitions)
        writer.count(0)  # PartitionRacks: empty (no rack-aware assignment)
        writer.tagged_fields({})
    writer.tagged_fields({})
    return writer.to_bytes()


def encode_member_metadata(member: Member) -> bytes:
    writer = _value_writer()
    writer.string(member.instance_id or None)
    writer.string(member.rack_id or None)
    writer.string(member.client_id)
    writer.string(member.client_host)
    writer.count(len(member.subscribed_topic_names))
    for name in member.subscribed_topic_names:
        writer.string(name)
    writer.string(member.subscribed_topic_regex or None)
    writer.int32(member.rebalance_timeout_ms)
    writer.string(member.server_assignor or None)

    def subscribed(tag: SchemaWriter) -> None:
        tag.count(len(member.subscribed_topics))
        for name in sorted(member.subscribed_topics):
            tag.string(name)

    writer.tagged_fields({TAG_SESSION_TIMEOUT: _tag_bytes(lambda tag: tag.int32(member.session_timeout_ms)), TAG_SUBSCRIBED_TOPICS: _tag_bytes(subscribed)})
    return writer.to_bytes()


def encode_target_metadata(assignment_epoch: int) -> bytes:
    writer = _value_writer()
    writer.int32(assignment_epoch)
    writer.tagged_fields({})
    return writer.to_bytes()


def encode_target_member(partitions: frozenset[TopicPartition], topic_ids: Mapping[str, str]) -> bytes:
    writer = _value_writer()
    _write_topic_partitions(writer, partitions, topic_ids)
    writer.tagged_fields({})
    return writer.to_bytes()


def encode_current_assignment(member: Member, topic_ids: Mapping[str, str]) -> bytes:
    writer = _value_writer()
    writer.int32(member.member_epoch)
    writer.int32(member.previous_member_epoch)
    writer.int8(int(member.state))
    _write_topic_partitions(writer, member.assigned, topic_ids)
    _write_topic_partitions(writer, member.pending_revocation, topic_ids)
    writer.tagged_fields({})
    return writer.to_bytes()


def _decode_group_metadata(reader: SchemaReader, member_id: str) -> GroupMetadataValue:
    epoch = reader.int32()
    tagged = reader.tagged_fields()
    empty_since = _reader(tagged[TAG_EMPTY_SINCE]).int64() if TAG_EMPTY_SINCE in tagged else -1
    return GroupMetadataValue(epoch, empty_since)


def _decode_partition_metadata(reader: SchemaReader, member_id: str) -> PartitionMetadataValue:
    epoch = reader.int32()
    topics = {}
    for _ in range(reader.count()):
        topic_id = reader.uuid()
        name = reader.string() or ""
        partitions = reader.int32()
        _skip_partition_racks(reader)
        reader.tagged_fields()
        topics[name] = TopicInfo(str(uuid.UUID(bytes=topic_id)) if topic_id != ZERO_UUID else "", partitions)
    return PartitionMetadataValue(epoch, topics)


def _skip_partition_racks(reader: SchemaReader) -> None:
    """PartitionRacks ([Partition int32, Racks [string]]): Kafka writes them, this broker's assignors do not read them."""
    for _ in range(reader.count()):
        reader.int32()
        for _ in range(reader.count()):
            reader.string()
        reader.tagged_fields()


def _decode_member_metadata(reader: SchemaReader, member_id: str) -> Member:
    instance_id = reader.string() or ""
    rack_id = reader.string() or ""
    client_id = reader.string() or ""
    client_host = reader.string() or ""
    names = tuple(reader.string() or "" for _ in range(reader.count()))
    regex = reader.string() or ""
    rebalance_timeout_ms = reader.int32()
    assignor = reader.string() or ""
    tagged = reader.tagged_fields()
    session_timeout_ms = _reader(tagged[TAG_SESSION_TIMEOUT]).int32() if TAG_SESSION_TIMEOUT in tagged else Member("").session_timeout_ms
    # Without the tag (a record written by Kafka), the subscribed names are the resolved topics.
    subscribed = _read_string_set(tagged[TAG_SUBSCRIBED_TOPICS]) if TAG_SUBSCRIBED_TOPICS in tagged else frozenset(names)
    return Member(
        member_id,
        instance_id=instance_id,
        rack_id=rack_id,
        client_id=client_id,
        client_host=client_host,
        subscribed_topic_names=names,
        subscribed_topic_regex=regex,
        server_assignor=assignor,
        rebalance_timeout_ms=rebalance_timeout_ms,
        session_timeout_ms=session_timeout_ms,
        subscribed_topics=subscribed,
    )


def _read_string_set(data: bytes) -> frozenset[str]:
    reader = _reader(data)
    return frozenset(reader.string() or "" for _ in range(reader.count()))


def _decode_target_metadata(reader: SchemaReader, member_id: str) -> TargetMetadataValue:
    return TargetMetadataValue(reader.int32())


def _decode_target_member(reader: SchemaReader, member_id: str) -> TargetMemberValue:
    return TargetMemberValue(_read_topic_partitions(reader))


def _decode_current_assignment(reader: SchemaReader, member_id: str) -> CurrentAssignmentValue:
    member_epoch = reader.int32()
    previous = reader.int32()
    state_value = reader.int8()
    assigned = _read_topic_partitions(reader)
    pending = _read_topic_partitions(reader)
    try:
        state = MemberState(state_value)
    except ValueError:
        raise GroupRecordError(f"unknown member state {state_value}") from None
    return CurrentAssignmentValue(member_epoch, previous, state, assigned, pending)


# The value reader of each record kind; each gets the reader past the value version, and the member id of the key.
_VALUE_DECODERS: dict[RecordKind, Callable[[SchemaReader, str], object]] = {
    RecordKind.GROUP_METADATA: _decode_group_metadata,
    RecordKind.PARTITION_METADATA: _decode_partition_metadata,
    RecordKind.MEMBER_METADATA: _decode_member_metadata,
    RecordKind.TARGET_METADATA: _decode_target_metadata,
    RecordKind.TARGET_MEMBER: _decode_target_member,
    RecordKind.CURRENT_ASSIGNMENT: _decode_current_assignment,
}


def _decode_value(kind: RecordKind, member_id: str, data: bytes) -> object:
    reader = _reader(data)
    version = reader.int16()
    if version != VALUE_VERSION:
        raise GroupRecordError(f"unknown value version {version} of a record with key version {int(kind)}")
    return _VALUE_DECODERS[kind](reader, member_id)


def decode(key: bytes, value: bytes | None) -> GroupRecord:
    """The group record of ``key`` / ``value`` (key version 3 to 8); GroupRecordError for bytes that do not decode."""
    try:
        reader = SchemaReader(key, GroupRecordError)  # keys are not flexible
        kind = RecordKind(reader.int16())
        group_id = _key_string(reader)
        member_id = _key_string(reader) if kind in _MEMBER_KINDS else ""
        decoded = None if value is None else _decode_value(kind, member_id, value)
    except (struct.error, UnicodeDecodeError) as error:
        raise GroupRecordError(f"group record does not decode: {error}") from None
    except ValueError as error:
        if isinstance(error, GroupRecordError):
            raise
        raise GroupRecordError(f"group record does not decode: {error}") from None
    return GroupRecord(kind, group_id, member_id, decoded)


# ---------------------------------------------------------------------- state changes -> records


def group_records(before: ConsumerGroup | None, after: ConsumerGroup | None) -> list[tuple[bytes, bytes | None]]:
    """The records that take the log from ``before`` to ``after`` (None: no group), in replay order."""
    return list(_group_records(before, after))


def _group_records(before: ConsumerGroup | None, after: ConsumerGroup | None) -> Iterator[tuple[bytes, bytes | None]]:
    if after is None:
        if before is not None:
            yield from _tombstones(before)
        return
    topic_ids = {topic: info.topic_id for group in (before, after) if group is not None for topic, info in group.subscription_metadata.items()}
    old_members = before.members if before is not None else {}
    # Replay order: members and the group's metadata, then the target assignment, then what members own, then departures.
    yield from _member_metadata_records(after, old_members)
    yield from _group_metadata_records(before, after)
    yield from _target_records(before, after, topic_ids)
    yield from _current_assignment_records(after, old_members, topic_ids)
    yield from _departed_member_records(after, old_members)


def _member_metadata_records(after: ConsumerGroup, old_members: Mapping[str, Member]) -> Iterator[tuple[bytes, bytes | None]]:
    """MEMBER_METADATA of every member that joined or whose subscription or settings changed."""
    for member_id, member in after.members.items():
        old = old_members.get(member_id)
        if old is None or old.metadata() != member.metadata():
            yield encode_key(RecordKind.MEMBER_METADATA, after.group_id, member_id), encode_member_metadata(member)


def _group_metadata_records(before: ConsumerGroup | None, after: ConsumerGroup) -> Iterator[tuple[bytes, bytes | None]]:
    """PARTITION_METADATA and GROUP_METADATA when the subscribed topics, the group epoch or the empty-since time changed."""
    group_id = after.group_id
    if before is None or before.subscription_metadata != after.subscription_metadata or before.group_epoch != after.group_epoch:
        yield encode_key(RecordKind.PARTITION_METADATA, group_id), encode_partition_metadata(after.group_epoch, after.subscription_metadata)
    if before is None or before.group_epoch != after.group_epoch or before.empty_since_ms != after.empty_since_ms:
        yield encode_key(RecordKind.GROUP_METADATA, group_id), encode_group_metadata(after.group_epoch, after.empty_since_ms)


def _target_records(before: ConsumerGroup | None, after: ConsumerGroup, topic_ids: Mapping[str, str]) -> Iterator[tuple[bytes, bytes | None]]:
    """TARGET_MEMBER of each changed or dropped member target, then TARGET_METADATA when the assignment epoch moved."""
    group_id = after.group_id
    old_target = before.target if before is not None else {}
    for member_id, partitions in after.target.items():
        if old_target.get(member_id) != partitions:
            yield encode_key(RecordKind.TARGET_MEMBER, group_id, member_id), encode_target_member(partitions, topic_ids)
    for member_id in old_target:
        if member_id not in after.target:
            yield encode_key(RecordKind.TARGET_MEMBER, group_id, member_id), None
    if before is None or before.assignment_epoch != after.assignment_epoch:
        yield encode_key(RecordKind.TARGET_METADATA, group_id), encode_target_metadata(after.assignment_epoch)


def _current_assignment_records(after: ConsumerGroup, old_members: Mapping[str, Member], topic_ids: Mapping[str, str]) -> Iterator[tuple[bytes, bytes | None]]:
    """CURRENT_ASSIGNMENT of every member whose epoch, state or owned partitions changed."""
    for member_id, member in after.members.items():
        old = old_members.get(member_id)
        if old is None or old.current_assignment() != member.current_assignment():
            yield encode_key(RecordKind.CURRENT_ASSIGNMENT, after.group_id, member_id), encode_current_assignment(member, topic_ids)


def _departed_member_records(after: ConsumerGroup, old_members: Mapping[str, Member]) -> Iterator[tuple[bytes, bytes | None]]:
    """Tombstones of the members that left: their assignment, then their metadata."""
    for member_id in old_members:
        if member_id not in after.members:
            yield encode_key(RecordKind.CURRENT_ASSIGNMENT, after.group_id, member_id), None
            yield encode_key(RecordKind.MEMBER_METADATA, after.group_id, member_id), None


def _tombstones(group: ConsumerGroup) -> Iterator[tuple[bytes, bytes | None]]:
    """Every key of a deleted group, the group metadata last (its tombstone ends the group on replay)."""
    for member_id in group.members:
        yield encode_key(RecordKind.CURRENT_ASSIGNMENT, group.group_id, member_id), None
    for member_id in group.target:
        yield encode_key(RecordKind.TARGET_MEMBER, group.group_id, member_id), None
    for member_id in group.members:
        yield encode_key(RecordKind.MEMBER_METADATA, group.group_id, member_id), None
    yield encode_key(RecordKind.TARGET_METADATA, group.group_id), None
    yield encode_key(RecordKind.PARTITION_METADATA, group.group_id), None
    yield encode_key(RecordKind.GROUP_METADATA, group.group_id), None
