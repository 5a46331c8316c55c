import json
import re
import subprocess
import sys

import pytest

from log_formats.usage_records import (
    BINARY_HEADER_SIZE,
    BINARY_LAYOUT,
    SPARK_SCHEMA_DDL,
    InvalidUsageFieldError,
    MalformedUsageRecordError,
    MissingUsageFieldError,
    PartitionRow,
    TrafficRow,
    UnsupportedUsageSchemaError,
    UsageRecordError,
    decode,
    encode,
    encode_json,
    identity,
)

TRAFFIC = TrafficRow(
    3,
    "9f2c",
    7,
    1_700_000_040_000,
    1_700_000_100_000,
    "tn-abc",
    "orders",
    2,
    bytes_in=120,
    records_in=4,
    bytes_out=240,
    records_out=8,
    produce_requests=1,
    fetch_requests=2,
    throttle_time_ms=15,
)
PARTITION = PartitionRow(
    3,
    "9f2c",
    7,
    1_700_000_040_000,
    1_700_000_100_000,
    "tn-abc",
    "orders",
    2,
    log_size_bytes=4096,
    log_start_offset=0,
    log_end_offset=40,
    high_watermark=38,
    leader_epoch=5,
)


@pytest.mark.parametrize("row", [TRAFFIC, PARTITION])
def test_a_row_decodes_to_what_was_encoded(row):
    assert decode(encode(row)) == row


@pytest.mark.parametrize("row", [TRAFFIC, PARTITION])
def test_rows_stored_as_json_before_the_binary_encoding_decode_to_the_same_row(row):
    assert decode(encode_json(row)) == row


def test_the_binary_encoding_has_its_format_byte_first_and_fixed_width_fields_where_the_layout_says():
    data = encode(TRAFFIC)
    assert data[0] == 1 and data[:1] != b"{"
    assert len(data) == BINARY_HEADER_SIZE + len("9f2c") + len("tn-abc") + len("orders") < len(encode_json(TRAFFIC)) / 2

    def field(name: str) -> int:
        offset, size = BINARY_LAYOUT[name]
        return int.from_bytes(data[offset : offset + size], "big", signed=True)

    assert (field("kind"), field("node_id"), field("sequence"), field("partition"), field("slot0"), field("slot6")) == (0, 3, 7, 2, 120, 15)
    assert data[BINARY_HEADER_SIZE:] == b"9f2ctn-abcorders"


@pytest.mark.parametrize(
    "mangle, problem",
    [
        (lambda data: data[:50], "shorter than its 100-byte header"),
        (lambda data: data + b"x", "its header says"),
        (lambda data: data[:1] + b"\x07" + data[2:], "'kind'"),
        (lambda data: data[:-6] + b"\xff" + data[-5:], "'topic' must be UTF-8 text"),
        (lambda data: data[:38] + (-5).to_bytes(8, "big", signed=True) + data[46:], "'bytes_in' must be an integer of 0 or more"),
        (lambda data: data[:26] + (1).to_bytes(8, "big") + data[34:], "'window_end_ms'"),
    ],
)
def test_a_malformed_binary_row_is_refused_naming_the_problem(mangle, problem):
    with pytest.raises(UsageRecordError, match=re.escape(problem)):
        decode(mangle(encode(TRAFFIC)))


def test_the_stored_value_is_a_json_object_with_the_schema_and_kind_first():
    document = json.loads(encode_json(TRAFFIC))
    assert list(document)[:3] == ["schema", "kind", "node_id"]
    assert (document["schema"], document["kind"], document["tenant_id"], document["topic"]) == ("weir.usage/1", "traffic", "tn-abc", "orders")
    assert "log_size_bytes" not in document
    assert json.loads(encode_json(PARTITION))["kind"] == "partition"


def test_identity_is_node_incarnation_sequence_kind_tenant_topic_partition():
    assert identity(TRAFFIC) == (3, "9f2c", 7, "traffic", "tn-abc", "orders", 2)
    assert identity(PARTITION) == (3, "9f2c", 7, "partition", "tn-abc", "orders", 2)
    assert identity(TRAFFIC) == identity(decode(encode(TRAFFIC)))


def test_fields_the_reader_does_not_know_are_ignored():
    document = json.loads(encode_json(PARTITION)) | {"added_in_a_later_version": 1}
    assert decode(json.dumps(document).encode()) == PARTITION


@pytest.mark.parametrize("data", [b"\xff\xfe", b"{not json", b"[1, 2]", b"42"])
def test_bytes_that_are_not_a_json_object_are_malformed(data):
    with pytest.raises(MalformedUsageRecordError):
        decode(data)


@pytest.mark.parametrize("schema", ["weir.usage/2", None, 1])
def test_another_schema_version_is_refused_naming_it(schema):
    document = json.loads(encode_json(TRAFFIC))
    if schema is None:
        del document["schema"]
    else:
        document["schema"] = schema
    with pytest.raises(UnsupportedUsageSchemaError) as raised:
        decode(json.dumps(document).encode())
    assert raised.value.schema == schema
    assert "weir.usage/1" in str(raised.value)


def test_a_missing_field_is_named_with_the_kind():
    document = json.loads(encode_json(PARTITION))
    del document["high_watermark"]
    with pytest.raises(MissingUsageFieldError, match="'high_watermark' of a 'partition' row") as raised:
        decode(json.dumps(document).encode())
    assert raised.value.field_name == "high_watermark"


@pytest.mark.parametrize(
    "field, value",
    [("kind", "storage"), ("bytes_in", "12"), ("records_out", True), ("bytes_out", -1), ("topic", 5), ("partition", 1.5), ("window_end_ms", 1_700_000_000_000)],
)
def test_a_field_of_the_wrong_type_or_range_is_named(field, value):
    document = json.loads(encode_json(TRAFFIC)) | {field: value}
    with pytest.raises(InvalidUsageFieldError) as raised:
        decode(json.dumps(document).encode())
    assert raised.value.field_name == field


def test_offsets_of_an_empty_log_may_be_negative():
    row = PartitionRow(1, "a", 0, 0, 1000, "", "t", 0, log_size_bytes=0, log_start_offset=0, log_end_offset=0, high_watermark=0, leader_epoch=-1)
    assert decode(encode(row)).leader_epoch == -1


def test_the_spark_schema_names_every_field_of_both_kinds_once():
    names = re.findall(r"`(\w+)` (?:STRING|INT|BIGINT)", SPARK_SCHEMA_DDL)
    expected = {"schema", "kind", *json.loads(encode_json(TRAFFIC)), *json.loads(encode_json(PARTITION))}
    assert sorted(names) == sorted(expected)
    assert "`partition` INT" in SPARK_SCHEMA_DDL and "`tenant_id` STRING" in SPARK_SCHEMA_DDL and "`bytes_in` BIGINT" in SPARK_SCHEMA_DDL


def test_the_codec_imports_neither_brokers_nor_spark():
    code = "import sys, log_formats.usage_records; print(sorted(m for m in sys.modules if m.split('.')[0] in ('broker_nodes', 'pyspark', 'webapp')))"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert completed.stdout.strip() == "[]"
