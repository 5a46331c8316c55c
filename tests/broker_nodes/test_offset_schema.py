import struct

import pytest

from log_formats.offset_commit_records import (
    OFFSET_COMMIT_KEY_VERSIONS,
    OffsetAndMetadata,
    OffsetCommitKey,
    OffsetSchemaError,
    decode_key,
    decode_offset_commit_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
    java_string_hash_code,
    key_version,
    partition_for_group,
)
from log_formats.topic_names import qualify, split_qualified_name


@pytest.mark.parametrize(
    "text, expected",
    [("", 0), ("a", 97), ("hello", 99162322), ("polygenelubricants", -(2**31)), ("\U0001f600", 0xD83D * 31 + 0xDE00)],
)
def test_java_string_hash_code_matches_java(text, expected):
    assert java_string_hash_code(text) == expected


def test_group_with_minimum_hash_maps_to_partition_zero_like_kafka_utils_abs():
    # Java's Math.abs(Integer.MIN_VALUE) is negative; Kafka's Utils.abs masks it to 0.
    assert partition_for_group("polygenelubricants", 50) == 0
    assert partition_for_group("hello", 50) == 99162322 % 50


def test_key_layout_is_kafkas_version_1():
    key = encode_offset_commit_key(OffsetCommitKey("g", "orders", 7))
    assert key == struct.pack(">hh1sh6si", 1, 1, b"g", 6, b"orders", 7)
    assert decode_key(key) == OffsetCommitKey("g", "orders", 7)


def test_value_layout_is_kafkas_version_3():
    value = encode_offset_commit_value(OffsetAndMetadata(42, 5, "meta", 1_700_000_000_000))
    assert value == struct.pack(">hqih4sq", 3, 42, 5, 4, b"meta", 1_700_000_000_000)
    assert decode_offset_commit_value(value) == OffsetAndMetadata(42, 5, "meta", 1_700_000_000_000)


def test_value_version_1_with_expire_timestamp_decodes():
    value = struct.pack(">hqh2sqq", 1, 9, 2, b"md", 111, 222)
    assert decode_offset_commit_value(value) == OffsetAndMetadata(9, -1, "md", 111)


def test_group_metadata_key_is_skipped():
    assert decode_key(struct.pack(">hh1s", 2, 1, b"g")) is None


@pytest.mark.parametrize("data", [b"", b"\x00", struct.pack(">hh", 1, 50), struct.pack(">h", 9) + b"rest"])
def test_malformed_keys_raise_schema_error(data):
    with pytest.raises(OffsetSchemaError):
        decode_key(data)


def test_truncated_value_raises_schema_error():
    value = encode_offset_commit_value(OffsetAndMetadata(1, 0, "", 0))
    with pytest.raises(OffsetSchemaError):
        decode_offset_commit_value(value[:-3])


def test_key_version_tells_commits_from_group_records():
    commit = encode_offset_commit_key(OffsetCommitKey("g", "orders", 0))
    assert key_version(commit) in OFFSET_COMMIT_KEY_VERSIONS
    assert key_version(struct.pack(">hh1s", 3, 1, b"g")) not in OFFSET_COMMIT_KEY_VERSIONS
    with pytest.raises(OffsetSchemaError):
        key_version(b"\x00")


@pytest.mark.parametrize(
    "qualified, expected",
    [("tn-a1~orders", ("tn-a1", "orders")), ("orders", ("", "orders")), ("tn-a1~g~x", ("tn-a1", "g~x")), ("__consumer_offsets", ("", "__consumer_offsets"))],
)
def test_split_qualified_name_splits_at_the_first_separator(qualified, expected):
    assert split_qualified_name(qualified) == expected
    assert qualify(*expected) == qualified
