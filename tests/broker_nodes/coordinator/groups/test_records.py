"""Group records: Kafka's byte layouts, and replaying the records of every change rebuilds the group."""

from __future__ import annotations

import pytest

from broker_nodes.coordinator.groups.group import ConsumerGroup, Heartbeat
from broker_nodes.coordinator.groups.loaded_groups import LoadedGroups
from broker_nodes.coordinator.groups.records import (
    GroupMetadataValue,
    GroupRecordError,
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
