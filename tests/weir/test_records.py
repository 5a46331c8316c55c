"""RecordBatch v2 codec: round trips, Kafka compatibility, and rejection of bad bytes."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from weir import records
from weir.records import (
    COMPRESSION_CODECS,
    HEADER_SIZE,
    BatchTooLargeError,
    RecordBatchBuilder,
    RecordFormatError,
    UnsupportedMagicError,
)

BASE_TIMESTAMP = 1_700_000_000_000

record_strategy = st.tuples(
    st.integers(min_value=-10_000, max_value=10_000_000),  # timestamp delta from the base
    st.one_of(st.none(), st.binary(max_size=300)),
    st.one_of(st.none(), st.binary(max_size=3000)),
    st.lists(st.tuples(st.text(max_size=20), st.one_of(st.none(), st.binary(max_size=50))), max_size=3),
)


def build(rows, codec=records.COMPRESSION_NONE, **options):
    builder = RecordBatchBuilder(codec, **options)
    for timestamp_delta, key, value, headers in rows:
        builder.append(BASE_TIMESTAMP + timestamp_delta, key, value, headers)
    return builder.build()


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(record_strategy, min_size=1, max_size=40), codec=st.sampled_from(sorted(COMPRESSION_CODECS.values())))
def test_round_trip_preserves_every_field(rows, codec):
    batch = build(rows, codec)
    header = records.validate_batch(batch)
    assert header.records_count == len(rows)
    assert header.last_offset_delta == len(rows) - 1
    assert header.compression == codec
    decoded = list(records.iter_records(batch))
    assert [record.offset for record in decoded] == list(range(len(rows)))
    for record, (timestamp_delta, key, value, headers) in zip(decoded, rows):
        assert record.timestamp == BASE_TIMESTAMP + timestamp_delta
        assert record.key == key
        assert record.value == value
        assert record.headers == tuple(headers)
    assert header.max_timestamp == max(BASE_TIMESTAMP + row[0] for row in rows)


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(record_strategy, min_size=1, max_size=20), codec=st.sampled_from(sorted(COMPRESSION_CODECS.values())))
def test_kafka_python_reads_what_we_write(rows, codec):
    batch = build(rows, codec, producer_id=7, producer_epoch=1, base_sequence=5)
    parsed = DefaultRecordBatch(bytes(batch))
    assert parsed.validate_crc()
    assert parsed.producer_id == 7 and parsed.base_sequence == 5
    for kafka_record, (timestamp_delta, key, value, headers) in zip(parsed, rows):
        assert kafka_record.key == key
        assert kafka_record.value == value
        assert kafka_record.timestamp == BASE_TIMESTAMP + timestamp_delta
        assert list(kafka_record.headers) == [(name, header_value) for name, header_value in headers]


@settings(max_examples=200, deadline=None)
@given(value=st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varint_round_trips_any_int64(value):
    encoded = records.encode_varint(value)
    assert records.decode_varint(encoded, 0) == (value, len(encoded))


def test_varint_table_holds_the_loops_encoding_of_every_small_value():
    assert all(records._VARINT_TABLE[value] == records._zigzag_varint(value) for value in range(records._VARINT_TABLE_SIZE))


def test_assign_offsets_keeps_the_crc_valid():
    batch = bytearray(build([(0, b"k", b"v", [])] * 3))
    records.assign_offsets(batch, 0, base_offset=1234, partition_leader_epoch=9)
    header = records.validate_batch(batch)
    assert (header.base_offset, header.partition_leader_epoch, header.last_offset) == (1234, 9, 1236)
    assert [record.offset for record in records.iter_records(batch)] == [1234, 1235, 1236]


def test_log_append_time_stamps_every_record_with_the_broker_clock():
    batch = bytearray(build([(0, None, b"a", []), (5, None, b"b", [])]))
    records.set_log_append_time(batch, 0, 1_800_000_000_000)
    header = records.validate_batch(batch)
    assert header.timestamp_type == records.TIMESTAMP_TYPE_LOG_APPEND_TIME
    assert {record.timestamp for record in records.iter_records(batch)} == {1_800_000_000_000}


def test_reject_batch_with_flipped_payload_byte():
    batch = bytearray(build([(0, b"key", b"value", [])]))
    batch[-2] ^= 0xFF
    with pytest.raises(RecordFormatError, match="CRC mismatch") as raised:
        records.validate_batch(batch)
    assert raised.value.corrupt


def test_reject_truncated_batch():
    batch = build([(0, b"key", b"value" * 10, [])])
    with pytest.raises(RecordFormatError, match="truncated"):
        records.validate_batch(batch[:-5])
    with pytest.raises(RecordFormatError, match="truncated"):
        records.validate_batch(batch[:7])


def test_reject_wrong_magic():
    batch = bytearray(build([(0, None, b"v", [])]))
    batch[records.MAGIC_OFFSET] = 1
    with pytest.raises(UnsupportedMagicError, match="magic 1"):
        records.validate_batch(batch)


def test_reject_batch_length_below_header():
    batch = bytearray(build([(0, None, b"v", [])]))
    struct.pack_into(">i", batch, records.BATCH_LENGTH_OFFSET, 10)
    with pytest.raises(RecordFormatError, match="below the minimum"):
        records.validate_batch(batch)


def test_reject_batch_over_the_size_limit():
    batch = build([(0, None, b"x" * 2000, [])])
    with pytest.raises(BatchTooLargeError) as raised:
        records.validate_batch(batch, max_batch_size=1000)
    assert raised.value.size == len(batch) and raised.value.limit == 1000


def test_iter_batch_positions_stops_at_a_trailing_partial_batch():
    first = build([(0, None, b"a", [])])
    second = build([(0, None, b"b" * 100, [])])
    positions = list(records.iter_batch_positions(first + second[: HEADER_SIZE + 10]))
    assert [position for position, _ in positions] == [0]


def test_iter_records_skips_records_below_min_offset():
    batch = bytearray(build([(0, None, bytes([index]), []) for index in range(10)]))
    records.assign_offsets(batch, 0, 100, 0)
    assert [record.offset for record in records.iter_records(batch, min_offset=105)] == [105, 106, 107, 108, 109]


def test_decode_rejects_record_length_that_disagrees_with_its_fields():
    builder = RecordBatchBuilder()
    builder.append(BASE_TIMESTAMP, None, b"abc")
    batch = bytearray(builder.build())
    # The record's length varint is the first byte of the records section; claim one byte more.
    batch[HEADER_SIZE] += 2
    header = records.read_batch_header(batch)
    with pytest.raises(RecordFormatError):
        records.decode_records(records.batch_records_bytes(batch, 0, header), header)


def test_decode_rejects_a_records_section_that_ends_inside_a_record():
    batch = build([(0, b"key", b"value", [])])
    header = records.read_batch_header(batch)
    data = records.batch_records_bytes(batch, 0, header)
    # The header announces a second record that the section does not hold.
    with pytest.raises(RecordFormatError, match="records section ends inside a record"):
        records.decode_records(data, header._replace(records_count=2))


def test_decode_rejects_a_header_key_that_is_not_utf8():
    batch = build([(0, None, b"value", [("h\u00e9", b"x")])])
    header = records.read_batch_header(batch)
    data = bytearray(records.batch_records_bytes(batch, 0, header))
    position = data.index("h\u00e9".encode())
    data[position + 1 : position + 3] = b"\xff\xfe"  # same length, not UTF-8
    with pytest.raises(RecordFormatError, match="a header key is not UTF-8"):
        records.decode_records(bytes(data), header)


def test_snappy_uses_kafka_xerial_framing():
    batch = build([(0, None, b"x" * 100_000, [])], records.COMPRESSION_SNAPPY)
    assert batch[HEADER_SIZE : HEADER_SIZE + 8] == b"\x82SNAPPY\x00"
    assert next(records.iter_records(batch)).value == b"x" * 100_000


def test_compaction_style_build_keeps_offset_gaps_and_last_offset_delta():
    builder = RecordBatchBuilder(base_offset=50)
    builder.append(BASE_TIMESTAMP, b"a", b"1", offset_delta=2)
    builder.append(BASE_TIMESTAMP, b"b", b"2", offset_delta=7)
    batch = builder.build(last_offset_delta=9)
    header = records.validate_batch(batch)
    assert header.last_offset == 59
    assert [record.offset for record in records.iter_records(batch)] == [52, 57]


def test_rebuild_batch_keeps_offsets_producer_fields_and_last_offset_in_another_codec():
    batch = bytearray(build([(index, f"k{index}".encode(), b"v" * 50, []) for index in range(5)], producer_id=9, producer_epoch=2, base_sequence=40))
    records.assign_offsets(batch, 0, base_offset=100, partition_leader_epoch=3)
    header = records.validate_batch(batch)
    kept = [(record.offset, record.timestamp, record.key, record.value, record.headers) for record in records.iter_records(batch) if record.offset != 102]
    rebuilt = records.rebuild_batch(header, kept, codec=records.COMPRESSION_ZSTD)
    new_header = records.validate_batch(rebuilt)
    assert new_header.compression == records.COMPRESSION_ZSTD
    assert (new_header.base_offset, new_header.last_offset, new_header.records_count) == (100, 104, 4)
    assert (new_header.producer_id, new_header.producer_epoch, new_header.base_sequence, new_header.partition_leader_epoch) == (9, 2, 40, 3)
    assert [(record.offset, record.key, record.timestamp) for record in records.iter_records(rebuilt)] == [
        (offset, key, timestamp) for offset, timestamp, key, _, _ in kept
    ]
