"""Group records: Kafka's byte layouts, and replaying the records of every change rebuilds the group."""

from __future__ import annotations

import pytest

from broker_nodes.coordinator.groups.group import ConsumerGroup, Heartbeat, TopicInfo
from broker_nodes.coordinator.groups.loaded_groups import LoadedGroups
from broker_nodes.coordinator.groups.member import Member
from broker_nodes.coordinator.groups.records import (
    GroupMetadataValue,
    GroupRecordError,
    PartitionMetadataValue,
    RecordKind,
    decode,
    encode_group_metadata,
    encode_key,
    group_records,
)
from tests.broker_nodes.coordinator.groups.groups_support import GroupHarness, partitions


def persisted(group: ConsumerGroup) -> tuple[object, ...]:
    """Everything the records carry (timers are in memory only)."""
    return (
        group.group_id,
        group.group_epoch,
        group.assignment_epoch,
        group.subscription_metadata,
        group.members,
        group.target,
        group.empty_since_ms,
    )


class RecordingHarness(GroupHarness):
    """Keeps the records of every change, as the coordinator writes them."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[bytes, bytes | None]] = []

    def heartbeat(self, request):  # type: ignore[no-untyped-def, override]
        before = self.group.copy()
        answer = super().heartbeat(request)
        self.log.extend(group_records(before, self.group))
        return answer


def replayed(log: list[tuple[bytes, bytes | None]]) -> LoadedGroups:
    loaded = LoadedGroups()
    for key, value in log:
        loaded.replay(decode(key, value))
    return loaded


def test_keys_are_kafkas_non_flexible_layout() -> None:
    assert encode_key(RecordKind.GROUP_METADATA, "tn~g") == b"\x00\x03\x00\x04tn~g"
    assert encode_key(RecordKind.CURRENT_ASSIGNMENT, "g", "m1") == b"\x00\x08\x00\x01g\x00\x02m1"


def test_group_metadata_value_is_kafkas_flexible_version_0_with_weirs_tagged_field() -> None:
    value = encode_group_metadata(7, -1)
    # int16 version 0, int32 epoch 7, one tagged field: tag 1000 (varint e8 07), 8 bytes.
    assert value[:6] == b"\x00\x00\x00\x00\x00\x07"
    assert value[6:10] == b"\x01\xe8\x07\x08"
    assert decode(encode_key(RecordKind.GROUP_METADATA, "g"), value).value == GroupMetadataValue(7, -1)


def test_records_of_every_change_replay_to_the_same_group() -> None:
    harness = RecordingHarness()
    harness.add_topic("t", 4)
    harness.add_topic("orders-eu", 2)
    first = harness.join("t", instance_id="host-1", client_id="c-1", rack_id="r1", session_timeout_ms=5_000)
    second = harness.join("t", regex="orders-.*", assignor="range")
    revoking = harness.beat(first)
    assert replayed(harness.log).get("g") is not None
    assert persisted(replayed(harness.log).get("g")) == persisted(harness.group)  # type: ignore[arg-type]
    harness.beat(revoking, owned=partitions("t", 0, 1))
    harness.beat(second)
    harness.heartbeat(Heartbeat(first.member_id, -2, instance_id="host-1"))
    assert persisted(replayed(harness.log).get("g")) == persisted(harness.group)  # type: ignore[arg-type]
    harness.join("t", instance_id="host-1")
    harness.heartbeat(Heartbeat(second.member_id, -1))
    assert persisted(replayed(harness.log).get("g")) == persisted(harness.group)  # type: ignore[arg-type]


def test_an_unchanged_steady_heartbeat_writes_nothing() -> None:
    harness = RecordingHarness()
    harness.add_topic("t", 1)
    answer = harness.join("t")
    written = len(harness.log)
    harness.beat(answer)
    assert len(harness.log) == written


def test_deleting_a_group_writes_tombstones_that_replay_to_no_group() -> None:
    harness = RecordingHarness()
    harness.add_topic("t", 2)
    answer = harness.join("t")
    harness.heartbeat(Heartbeat(answer.member_id, -1))
    tombstones = group_records(harness.group, None)
    assert all(value is None for _, value in tombstones)
    assert decode(*tombstones[-1]).kind == RecordKind.GROUP_METADATA
    assert replayed(harness.log + tombstones).get("g") is None


def test_undecodable_records_are_refused_with_what_was_wrong() -> None:
    with pytest.raises(GroupRecordError, match="record ends after"):
        decode(encode_key(RecordKind.GROUP_METADATA, "g"), b"\x00\x00\x00")
    with pytest.raises(GroupRecordError, match="unknown value version 4"):
        decode(encode_key(RecordKind.TARGET_METADATA, "g"), b"\x00\x04\x00\x00\x00\x01\x00")


def test_partition_metadata_written_by_kafka_with_partition_racks_decodes() -> None:
    topic_id = bytes(range(16))
    value = (
        b"\x00\x00"  # value version 0
        + b"\x00\x00\x00\x05"  # group epoch 5
        + b"\x02"  # one topic
        + topic_id
        + b"\x02t"  # compact string "t"
        + b"\x00\x00\x00\x02"  # 2 partitions
        + b"\x02"  # one PartitionRacks entry
        + b"\x00\x00\x00\x00"  # partition 0
        + b"\x03\x02r\x02s"  # racks "r", "s"
        + b"\x00"  # entry's tagged fields
        + b"\x00"  # topic's tagged fields
        + b"\x00"  # value's tagged fields
    )
    decoded = decode(encode_key(RecordKind.PARTITION_METADATA, "g"), value).value
    assert decoded == PartitionMetadataValue(5, {"t": TopicInfo("00010203-0405-0607-0809-0a0b0c0d0e0f", 2)})


def test_member_metadata_without_weirs_tags_subscribes_the_named_topics() -> None:
    value = (
        b"\x00\x00"  # value version 0
        + b"\x00\x00"  # no instance id, no rack id
        + b"\x04c-1"  # client id
        + b"\x06/host"  # client host
        + b"\x03\x02a\x02b"  # subscribed topic names a, b
        + b"\x00"  # no regex
        + b"\x00\x00\x75\x30"  # rebalance timeout 30000 ms
        + b"\x00"  # no server assignor
        + b"\x00"  # no tagged fields
    )
    member = decode(encode_key(RecordKind.MEMBER_METADATA, "g", "m1"), value).value
    assert isinstance(member, Member)
    assert (member.member_id, member.client_id, member.client_host) == ("m1", "c-1", "/host")
    assert member.subscribed_topic_names == ("a", "b")
    assert member.subscribed_topics == frozenset({"a", "b"})
    assert member.session_timeout_ms == Member("").session_timeout_ms


def test_current_assignment_with_an_unknown_member_state_is_refused() -> None:
    value = b"\x00\x00" + b"\x00\x00\x00\x03" + b"\x00\x00\x00\x02" + b"\x7f" + b"\x01" + b"\x01" + b"\x00"
    with pytest.raises(GroupRecordError, match="unknown member state 127"):
        decode(encode_key(RecordKind.CURRENT_ASSIGNMENT, "g", "m1"), value)
