"""The record-level validator: valid batches pass, every kind of bad batch is refused by name,
and no corruption of the records makes it raise anything but its typed errors."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker_nodes.storage.batch_validation import (
    CorruptBatchRecordsError,
    InvalidBatchRecordsError,
    InvalidRecordTimestampError,
    validate_batch_records,
)
from broker_nodes.storage.errors import CorruptRecordError, InvalidRecordError, InvalidTimestampError
from broker_nodes.storage.log_config import LogConfig
from weir.records import (
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    RecordBatchBuilder,
    compress,
    crc32c,
    decompress,
    read_batch_header,
)

NOW_MS = 1_700_000_000_000
HOUR_MS = 3_600_000
DEFAULT = LogConfig.default()
COMPACTED = LogConfig.from_overrides({"cleanup.policy": "compact"})


def build(records, codec=COMPRESSION_NONE, **options) -> bytes:
    builder = RecordBatchBuilder(codec, **options)
    for timestamp, key, value, headers in records:
        builder.append(timestamp, key, value, headers)
    return builder.build()


def with_records_section(batch: bytes, section: bytes, *, records_count: int | None = None, max_timestamp: int | None = None) -> bytes:
    """``batch`` with its records section replaced (raw, already compressed if the codec says so) and a correct CRC."""
    out = bytearray(batch[:HEADER_SIZE] + section)
    struct.pack_into(">i", out, 8, len(out) - 12)
    if records_count is not None:
        struct.pack_into(">i", out, 57, records_count)
    if max_timestamp is not None:
        struct.pack_into(">q", out, 35, max_timestamp)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def validate(batch: bytes, config: LogConfig = DEFAULT, now_ms: int = NOW_MS) -> None:
    validate_batch_records(batch, 0, read_batch_header(batch), config, now_ms, partition=3, batch_index=0)


@pytest.mark.parametrize("codec", [COMPRESSION_NONE, COMPRESSION_LZ4, COMPRESSION_SNAPPY, COMPRESSION_ZSTD])
def test_valid_batches_with_keys_nulls_and_headers_are_accepted(codec):
    records = [(NOW_MS + i, b"k%d" % i if i % 2 else None, None if i == 3 else b"v" * i, [("h", b"x"), ("n", None)] if i == 2 else None) for i in range(6)]
    validate(build(records, codec))


def test_invalid_compressed_payload_with_a_correct_crc_is_corrupt():
    batch = build([(NOW_MS, None, b"value", None)], COMPRESSION_SNAPPY)
    bad = with_records_section(batch, b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", 4) + b"\xff\xff\xff\xff")
    with pytest.raises(CorruptBatchRecordsError, match=r"partition 3, batch 0\): snappy records section cannot be decompressed") as raised:
        validate(bad)
    assert isinstance(raised.value, CorruptRecordError)


def test_record_count_above_what_the_records_hold_is_invalid():
    batch = build([(NOW_MS, None, b"a", None), (NOW_MS, None, b"b", None)])
    section = batch[HEADER_SIZE:]
    bad = with_records_section(batch, section + b"\x10\x00", records_count=3)  # a third record of 8 bytes, cut short
    with pytest.raises(CorruptBatchRecordsError, match="record 2"):
        validate(bad)
    short = with_records_section(batch, section, records_count=3)
    with pytest.raises(InvalidBatchRecordsError, match="header says 3 records but the records section holds 2"):
        validate(short)


def test_trailing_bytes_after_the_last_record_are_invalid():
    batch = build([(NOW_MS, None, b"a", None)])
    with pytest.raises(InvalidBatchRecordsError, match="3 bytes follow the last of the 1 records"):
        validate(with_records_section(batch, batch[HEADER_SIZE:] + b"\x00\x00\x00"))


def test_offset_deltas_out_of_order_are_invalid():
    builder = RecordBatchBuilder()
    builder.append(NOW_MS, None, b"a", offset_delta=0)
    builder.append(NOW_MS, None, b"b", offset_delta=2)
    batch = builder.build(last_offset_delta=1)
    with pytest.raises(InvalidBatchRecordsError, match=r"record 1\): offset delta 2 where 1 was expected"):
        validate(batch)


def test_a_record_length_that_disagrees_with_its_fields_is_corrupt():
    batch = build([(NOW_MS, None, b"abc", None)])
    section = bytearray(batch[HEADER_SIZE:])
    section[0] += 2  # length varint: one more byte than the record has
    with pytest.raises(CorruptBatchRecordsError, match="record 0"):
        validate(with_records_section(batch, bytes(section) + b"\x00"))


def test_compacted_topics_refuse_records_without_a_key():
    batch = build([(NOW_MS, b"k", b"a", None), (NOW_MS, None, b"b", None)])
    validate(batch)
    with pytest.raises(InvalidBatchRecordsError, match=r"record 1\): a compacted topic cannot accept a record without a key") as raised:
        validate(batch, COMPACTED)
    assert isinstance(raised.value, InvalidRecordError)


def test_record_timestamps_outside_the_window_are_refused_by_record():
    inside = build([(NOW_MS - 5, None, b"a", None), (NOW_MS + HOUR_MS, None, b"b", None)])
    validate(inside)
    future = build([(NOW_MS, None, b"a", None), (NOW_MS + HOUR_MS + 1, None, b"b", None)])
    with pytest.raises(InvalidRecordTimestampError, match=r"record 1\): timestamp .* message.timestamp.after.max.ms=3600000") as raised:
        validate(future)
    assert isinstance(raised.value, InvalidTimestampError)
    ancient = build([(NOW_MS, None, b"a", None), (-(2**62), None, b"b", None)], base_timestamp=NOW_MS)
    validate(ancient)  # before.max.ms defaults to Long.MAX, as in Kafka
    strict = LogConfig.from_overrides({"message.timestamp.before.max.ms": "1000"})
    with pytest.raises(InvalidRecordTimestampError, match=r"record 1\): timestamp -4611686018427387904 is more than message.timestamp.before.max.ms=1000"):
        validate(ancient, strict)
    log_append = LogConfig.from_overrides({"message.timestamp.type": "LogAppendTime"})
    validate(future, log_append)


def test_records_without_a_timestamp_are_exempt_from_the_window():
    validate(build([(-1, None, b"a", None)]), LogConfig.from_overrides({"message.timestamp.before.max.ms": "1000"}))


def test_a_max_timestamp_that_is_not_the_largest_record_timestamp_is_refused():
    batch = build([(NOW_MS, None, b"a", None), (NOW_MS + 10, None, b"b", None)])
    with pytest.raises(InvalidRecordTimestampError, match="largest record timestamp is"):
        validate(with_records_section(batch, batch[HEADER_SIZE:], max_timestamp=NOW_MS))


def test_header_keys_must_be_utf8():
    batch = build([(NOW_MS, None, b"a", [("key", b"v")])])
    section = batch[HEADER_SIZE:].replace(b"key", b"\xff\xfey")
    with pytest.raises(InvalidBatchRecordsError, match="header key is not UTF-8"):
        validate(with_records_section(batch, section))


# ---------------------------------------------------------------- properties

record_strategy = st.tuples(
    st.integers(min_value=NOW_MS - 10**9, max_value=NOW_MS + HOUR_MS),
    st.one_of(st.none(), st.binary(max_size=40)),
    st.one_of(st.none(), st.binary(max_size=300)),
    st.one_of(st.none(), st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=3)),
)
codec_strategy = st.sampled_from([COMPRESSION_NONE, COMPRESSION_LZ4, COMPRESSION_ZSTD, COMPRESSION_SNAPPY])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record_strategy, min_size=1, max_size=30), codec_strategy)
def test_any_batch_the_builder_makes_is_accepted(records, codec):
    validate(build(records, codec))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record_strategy, min_size=1, max_size=10), codec_strategy, st.data())
def test_a_changed_byte_of_the_records_is_refused_or_still_a_valid_batch(records, codec, data):
    batch = build(records, codec)
    section = bytearray(decompress(codec, batch[HEADER_SIZE:]))
    index = data.draw(st.integers(min_value=0, max_value=len(section) - 1))
    replacement = data.draw(st.integers(min_value=0, max_value=255).filter(lambda byte: byte != section[index]))
    section[index] = replacement
    bad = with_records_section(batch, compress(codec, bytes(section)))
    try:
        validate(bad)
    except (CorruptRecordError, InvalidRecordError, InvalidTimestampError) as error:
        assert "partition 3, batch 0" in str(error)
        return
    # A change inside a key, value or header value (or one that keeps every rule) leaves a valid
    # batch: then every reader must decode it.
    from weir.records import batch_records_bytes, decode_records

    header = read_batch_header(bad)
    decoded = decode_records(batch_records_bytes(bad, 0, header), header)
    assert len(decoded) == header.records_count
