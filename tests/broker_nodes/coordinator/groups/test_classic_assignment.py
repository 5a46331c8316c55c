"""A classic consumer's SyncGroup assignment bytes (ConsumerProtocolAssignment) read back as (topic, partition) pairs, for describe."""

from __future__ import annotations

import io
import struct

import pytest
from kio.schema.consumer_protocol_assignment.v0 import ConsumerProtocolAssignment as AssignmentV0
from kio.schema.consumer_protocol_assignment.v0.data import TopicPartition as TopicPartitionV0
from kio.schema.consumer_protocol_assignment.v3 import ConsumerProtocolAssignment as AssignmentV3
from kio.schema.consumer_protocol_assignment.v3.data import TopicPartition as TopicPartitionV3
from kio.serial import entity_writer

from broker_nodes.coordinator.groups.classic_assignment import assigned_partitions


def encoded(version: int, schema: type, assignment: object) -> bytes:
    buffer = io.BytesIO()
    entity_writer(schema)(buffer, assignment)  # type: ignore[arg-type]
    return struct.pack(">h", version) + buffer.getvalue()


def test_every_version_reads_back_sorted_pairs() -> None:
    v0 = AssignmentV0(assigned_partitions=(TopicPartitionV0(topic="orders", partitions=(1, 0)), TopicPartitionV0(topic="audit", partitions=(2,))))
    v3 = AssignmentV3(assigned_partitions=(TopicPartitionV3(topic="orders", partitions=(0,)),), user_data=b"sticky")

    assert assigned_partitions(encoded(0, AssignmentV0, v0)) == (("audit", 2), ("orders", 0), ("orders", 1))
    assert assigned_partitions(encoded(3, AssignmentV3, v3)) == (("orders", 0),)
    assert assigned_partitions(encoded(7, AssignmentV3, v3)) == (("orders", 0),)  # newer versions only add fields at the end


def test_no_bytes_is_no_assignment() -> None:
    assert assigned_partitions(b"") == ()


@pytest.mark.parametrize("raw", [b"\x00", b"\xff\xff\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05\x00\x03or"])
def test_bytes_that_are_no_assignment_read_as_none(raw: bytes) -> None:
    assert assigned_partitions(raw) is None
