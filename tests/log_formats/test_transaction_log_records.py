"""``__transaction_state`` keys and values are Kafka's bytes: hand-laid examples from TransactionLogKey/Value's schemas, and round trips."""

from __future__ import annotations

import dataclasses
import struct

import pytest

from log_formats.offset_commit_records import partition_for_group
from log_formats.transaction_log_records import (
    STATE_COMPLETE_COMMIT,
    STATE_EMPTY,
    STATE_ONGOING,
    TAG_CLIENT_TRANSACTION_VERSION,
    TAG_UNWRITTEN_MARKERS,
    TransactionLogSchemaError,
    TransactionLogValue,
    UnwrittenMarkers,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for_transactional_id,
    partitions_by_topic,
)


def test_key_is_version_zero_then_an_int16_length_string():
    assert encode_key("t~app") == b"\x00\x00" + b"\x00\x05" + b"t~app"
    assert decode_key(b"\x00\x00\x00\x05t~app") == "t~app"


def test_key_of_another_version_or_truncated_is_refused():
    with pytest.raises(TransactionLogSchemaError):
        decode_key(b"\x00\x01\x00\x01a")
    with pytest.raises(TransactionLogSchemaError):
        decode_key(b"\x00\x00\x00\x09abc")


def test_ongoing_value_matches_kafkas_flexible_v1_layout():
    value = TransactionLogValue(
        producer_id=7,
        producer_epoch=3,
        timeout_ms=60000,
        state=STATE_ONGOING,
        partitions={"t~a": (0, 2)},
        last_update_timestamp_ms=1000,
        start_timestamp_ms=900,
    )
    expected = b"".join(
        (
            struct.pack(">h", 1),  # value version 1
            struct.pack(">q", 7),  # ProducerId
            struct.pack(">h", 3),  # ProducerEpoch
            struct.pack(">i", 60000),  # TransactionTimeoutMs
            struct.pack(">b", 1),  # TransactionStatus: Ongoing
            b"\x02",  # compact array of 1 topic
            b"\x04t~a",  # compact string of 3 bytes
            b"\x03" + struct.pack(">ii", 0, 2),  # compact array of 2 partition ids
            b"\x00",  # the topic struct's tagged fields
            struct.pack(">q", 1000),  # TransactionLastUpdateTimestampMs
            struct.pack(">q", 900),  # TransactionStartTimestampMs
            b"\x01",  # one tagged field:
            b"\x02\x02" + struct.pack(">h", 2),  # tag 2 ClientTransactionVersion, 2 bytes, value 2
        )
    )
    assert encode_value(value) == expected
    assert decode_value(expected) == value


def test_empty_state_writes_null_partitions_and_tagged_producer_ids():
    value = TransactionLogValue(7, 0, 1000, STATE_EMPTY, {}, 5, -1, previous_producer_id=6, next_producer_id=8)
    encoded = encode_value(value)
    head = struct.pack(">hqhib", 1, 7, 0, 1000, STATE_EMPTY)
    assert encoded.startswith(head + b"\x00")  # null array
    assert encoded.endswith(b"\x03" + b"\x00\x08" + struct.pack(">q", 6) + b"\x01\x08" + struct.pack(">q", 8) + b"\x02\x02" + struct.pack(">h", 2))
    assert decode_value(encoded) == value


def test_version_zero_value_decodes():
    # v0: int16 string and int32 array lengths, no tagged fields.
    data = b"".join(
        (
            struct.pack(">hqhib", 0, 11, 4, 30000, STATE_COMPLETE_COMMIT),
            struct.pack(">i", 1) + struct.pack(">h", 1) + b"x" + struct.pack(">i", 1) + struct.pack(">i", 5),
            struct.pack(">qq", 77, 66),
        )
    )
    decoded = decode_value(data)
    assert decoded == TransactionLogValue(11, 4, 30000, STATE_COMPLETE_COMMIT, {"x": (5,)}, 77, 66, client_transaction_version=0)


@pytest.mark.parametrize(
    "data",
    [b"\x00\x02" + bytes(30), b"\x00\x01" + bytes(5), struct.pack(">hqhib", 1, 1, 0, 1, 9) + bytes(20)],
    ids=["unknown version", "truncated", "unknown state"],
)
def test_bad_values_are_refused(data):
    with pytest.raises(TransactionLogSchemaError):
        decode_value(data)


def test_placement_hashes_like_kafka_and_like_groups():
    # Kafka places transactional ids exactly as groups: Utils.abs(id.hashCode()) % N.
    for transactional_id in ("t~app", "orders-writer", "x"):
        assert partition_for_transactional_id(transactional_id, 50) == partition_for_group(transactional_id, 50)
    # "a".hashCode() == 97
    assert partition_for_transactional_id("a", 50) == 97 % 50


def test_partitions_grouped_by_topic_and_sorted():
    assert partitions_by_topic([("b", 2), ("a", 1), ("b", 0), ("b", 2)]) == {"a": (1,), "b": (0, 2)}


def test_an_ongoing_value_naming_unwritten_markers_round_trips_and_a_value_without_them_reads_none():
    unwritten = UnwrittenMarkers(producer_id=7, producer_epoch=3, commit=True, partitions={"t~a": (0, 2), "t~b": (1,)})
    value = TransactionLogValue(7, 3, 60000, STATE_ONGOING, {"t~a": (0,)}, 1000, 1000, unwritten_markers=unwritten)
    encoded = encode_value(value)
    assert decode_value(encoded) == value
    without = encode_value(dataclasses.replace(value, unwritten_markers=None))
    assert decode_value(without).unwritten_markers is None
    # Both are v1 with the same fields up to the tagged section (one more tagged field, Weir's, which Kafka's tools skip).
    tagged_section = 1 + 1 + 1 + 2  # count, then ClientTransactionVersion's tag, size and int16
    assert encoded[:2] == without[:2] == struct.pack(">h", 1)
    assert encoded[: len(without) - tagged_section] == without[:-tagged_section]
    assert TAG_UNWRITTEN_MARKERS > TAG_CLIENT_TRANSACTION_VERSION


def test_unwritten_markers_that_do_not_decode_are_refused():
    value = TransactionLogValue(7, 3, 60000, STATE_ONGOING, {"t~a": (0,)}, 1000, 1000, unwritten_markers=UnwrittenMarkers(7, 3, False, {"t~a": (0,)}))
    encoded = bytearray(encode_value(value))
    struct_size = 8 + 2 + 1 + (1 + 1 + 3 + 1 + 4 + 1) + 1  # the markers' struct ends the value (the highest tag)
    commit_at = len(encoded) - struct_size + 8 + 2
    assert encoded[commit_at] == 0
    encoded[commit_at] = 5
    with pytest.raises(TransactionLogSchemaError):
        decode_value(bytes(encoded))
