"""A classic group's record in ``__consumer_offsets``: Kafka's GroupMetadata key (version 2) and value (version 3).

Kafka's classic coordinator keeps one record per group, rewritten whole: the key names the
group, so compaction keeps only the latest, and a null value (tombstone) deletes the group.
Weir writes it as Kafka does, when a rebalance completes (the leader's SyncGroup makes the
group Stable, with every member's assignment), when the members of a Stable group change
without a rebalance (a static member replaced, KIP-345), and when the group has no members
left: Empty, its protocol type and generation kept, protocol and leader null, no members
(Kafka's ``GroupCoordinator.onCompleteJoin`` of an emptied group). A new coordinator loads the
latest record and serves the group as Stable in that generation, so members go on
heartbeating and committing with it instead of rejoining; a record without members gives an
Empty group whose next rebalance continues the generations. Only deleting the group writes a
tombstone: DeleteGroups, the expiry of an Empty group without offsets, and a KIP-848
heartbeat that takes over an Empty group's id (``coordinator``).

Layout (non-flexible, Kafka's ``GroupMetadataKey`` v2 / ``GroupMetadataValue`` v3; strings
int16-length, nullable ones -1, bytes int32-length)::

    key    int16 version=2, string group
    value  int16 version=3, string protocolType, int32 generation, nullable string protocol,
           nullable string leader, int64 currentStateTimestamp,
           int32 count, then per member: string memberId, nullable string groupInstanceId,
           string clientId, string clientHost, int32 rebalanceTimeoutMs,
           int32 sessionTimeoutMs, bytes subscription, bytes assignment

Versions 0 to 3 of the value are read (Kafka's older brokers wrote them); the group id is
stored qualified (``tenant~name``) like every key of this topic.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker_nodes.coordinator.groups.classic import ClassicGroup, ClassicMember, ClassicState
from log_formats.kafka_schema import SchemaReader, SchemaWriter
from log_formats.offset_commit_records import GROUP_METADATA_KEY_VERSION

VALUE_VERSION = 3  # the value version Weir writes (Kafka 2.3+; non-flexible)
MAX_VALUE_VERSION = 3  # version 4 is flexible, written by Kafka 3.x+ only in KRaft's new coordinator


class ClassicRecordError(ValueError):
    """Bytes that do not decode as a classic group record."""

    retriable = False


@dataclass(frozen=True, slots=True)
class StoredMember:
    member_id: str
    instance_id: str
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes  # the member's metadata of the group's protocol
    assignment: bytes


@dataclass(frozen=True, slots=True)
class StoredClassicGroup:
    """What a classic group's record holds (its time of writing aside, so two states compare equal when the record would)."""

    protocol_type: str
    generation: int
    protocol_name: str
    leader: str
    members: tuple[StoredMember, ...]


def stored_form(group: ClassicGroup) -> StoredClassicGroup | None:
    """What the log should hold for ``group`` now: its Stable state, or its Empty one (protocol type and generation, no
    members) once it had a generation; None for a group that never had one (no record).

    Raises LookupError while a rebalance is in progress: the log keeps the last completed
    generation until the next one completes.
    """
    if not group.members:
        if group.state != ClassicState.EMPTY:
            raise LookupError(group.state)
        return empty_form(group.protocol_type, group.generation)
    if group.state != ClassicState.STABLE:
        raise LookupError(group.state)
    members = tuple(
        StoredMember(
            member.member_id,
            member.instance_id,
            member.client_id,
            member.client_host,
            member.rebalance_timeout_ms,
            member.session_timeout_ms,
            member.metadata(group.protocol_name),
            member.assignment,
        )
        for member in group.members.values()
    )
    return StoredClassicGroup(group.protocol_type, group.generation, group.protocol_name, group.leader, members)


def empty_form(protocol_type: str, generation: int) -> StoredClassicGroup | None:
    """The record of an Empty group (Kafka's: protocol type and generation kept, protocol and leader null, no members);
    None for one that never completed a generation."""
    if generation <= 0 and not protocol_type:
        return None
    return StoredClassicGroup(protocol_type, generation, "", "", ())


def restore(group_id: str, stored: StoredClassicGroup, home: object, now_ms: int, *, written: bool = True) -> ClassicGroup:
    """The group a new coordinator serves from its record: Stable with its members, each getting a full session from
    ``now_ms``, or Empty in its generation when the record has no members (as Kafka's ``GroupMetadata.loadGroup``).

    As in Kafka, each member's protocols are the group's protocol with its stored subscription.
    ``written`` False: the log does not hold ``stored`` yet (an Empty group whose record could
    not be written), so the group's next change writes it.
    """
    members = {
        member.member_id: ClassicMember(
            member.member_id,
            member.instance_id,
            member.client_id,
            member.client_host,
            member.session_timeout_ms,
            member.rebalance_timeout_ms,
            stored.protocol_type,
            ((stored.protocol_name, member.subscription),),
            assignment=member.assignment,
            session_deadline_ms=now_ms + member.session_timeout_ms,
        )
        for member in stored.members
    }
    if not members:
        return ClassicGroup(
            group_id,
            home=home,
            state=ClassicState.EMPTY,
            generation=stored.generation,
            protocol_type=stored.protocol_type,
            persisted=stored if written else None,
        )
    return ClassicGroup(
        group_id,
        home=home,
        state=ClassicState.STABLE,
        generation=stored.generation,
        protocol_type=stored.protocol_type,
        protocol_name=stored.protocol_name,
        leader=stored.leader,
        members=members,
        persisted=stored if written else None,
    )


# ---------------------------------------------------------------------- encoding


def encode_key(group_id: str) -> bytes:
    writer = SchemaWriter(ClassicRecordError)
    writer.int16(GROUP_METADATA_KEY_VERSION)
    writer.string(group_id)
    return writer.to_bytes()


def encode_value(stored: StoredClassicGroup, timestamp_ms: int) -> bytes:
    writer = SchemaWriter(ClassicRecordError)
    writer.int16(VALUE_VERSION)
    writer.string(stored.protocol_type)
    writer.int32(stored.generation)
    writer.string(stored.protocol_name or None)
    writer.string(stored.leader or None)
    writer.int64(timestamp_ms)
    writer.count(len(stored.members))
    for member in stored.members:
        writer.string(member.member_id)
        writer.string(member.instance_id or None)
        writer.string(member.client_id)
        writer.string(member.client_host)
        writer.int32(member.rebalance_timeout_ms)
        writer.int32(member.session_timeout_ms)
        writer.bytes(member.subscription)
        writer.bytes(member.assignment)
    return writer.to_bytes()


# ---------------------------------------------------------------------- decoding


def decode_key(key: bytes) -> str:
    """The (qualified) group id of a version 2 key."""
    reader = SchemaReader(key, ClassicRecordError)
    version = reader.int16()
    if version != GROUP_METADATA_KEY_VERSION:
        raise ClassicRecordError(f"key version {version} is not a classic group's ({GROUP_METADATA_KEY_VERSION})")
    try:
        return reader.string() or ""
    except UnicodeDecodeError as error:
        raise ClassicRecordError(f"group id does not decode: {error}") from None


def decode_value(value: bytes) -> StoredClassicGroup:
    """A value of version 0 to 3; ClassicRecordError for anything else."""
    try:
        return _decode_value(SchemaReader(value, ClassicRecordError))
    except UnicodeDecodeError as error:
        raise ClassicRecordError(f"classic group record does not decode: {error}") from None


def _decode_value(reader: SchemaReader) -> StoredClassicGroup:
    version = reader.int16()
    if not 0 <= version <= MAX_VALUE_VERSION:
        raise ClassicRecordError(f"unknown classic group value version {version}")
    protocol_type = reader.string() or ""
    generation = reader.int32()
    protocol_name = reader.string() or ""
    leader = reader.string() or ""
    if version >= 2:
        reader.int64()  # currentStateTimestamp: when it was written
    members = []
    for _ in range(reader.count()):
        member_id = reader.string() or ""
        instance_id = (reader.string() or "") if version >= 3 else ""
        client_id = reader.string() or ""
        client_host = reader.string() or ""
        rebalance_timeout_ms = reader.int32() if version >= 1 else -1
        session_timeout_ms = reader.int32()
        if rebalance_timeout_ms < 0:
            rebalance_timeout_ms = session_timeout_ms  # version 0 had none: Kafka uses the session timeout
        subscription, assignment = reader.bytes() or b"", reader.bytes() or b""
        members.append(StoredMember(member_id, instance_id, client_id, client_host, rebalance_timeout_ms, session_timeout_ms, subscription, assignment))
    return StoredClassicGroup(protocol_type, generation, protocol_name, leader, tuple(members))
