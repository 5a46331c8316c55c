"""The numpy decoding of binary ``__usage`` rows over whole Arrow batches (no Spark): every field
the brokers' codec writes comes back, and a row that may be unusable keeps its bytes for Spark."""

from __future__ import annotations

import random

import pyarrow as pa

from log_formats.usage_records import PartitionRow, TrafficRow, UsageRow, decode, encode, encode_json
from spark_pipelines.usage_binary import (
    ASCII_COLUMN,
    BINARY_COLUMN,
    DECODED_COLUMNS,
    EXPECTED_SIZE_COLUMN,
    KIND_CODE_COLUMN,
    SIZE_COLUMN,
    UNDECODED_COLUMN,
    decode_usage_batch,
    decode_usage_batches,
)


def batch(values: list[bytes | None]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array([7] * len(values), pa.int32()), pa.array(range(len(values)), pa.int64()), pa.array(values, pa.binary())],
        names=["source_partition", "source_offset", "value"],
    )


def random_rows(count: int, seed: int = 7) -> list[UsageRow]:
    chooser = random.Random(seed)
    rows: list[UsageRow] = []
    for index in range(count):
        common = (
            chooser.randrange(1, 2**40),
            chooser.choice(["i1", "incarnation-é", ""]),
            chooser.randrange(0, 2**62),
            1_772_323_200_000 + index * 60_000,
            1_772_323_260_000 + index * 60_000,
            chooser.choice(["tn-a", "tn-" + "x" * chooser.randrange(0, 40), "tn-ü"]),
            chooser.choice(["orders", "commandes-ß", "t" * chooser.randrange(1, 300)]),
            chooser.randrange(0, 2**31),
        )
        if chooser.random() < 0.5:
            counters = [chooser.randrange(0, 2**63) for _ in range(7)]
            rows.append(TrafficRow(*common, *counters))
        else:
            rows.append(PartitionRow(*common, chooser.randrange(0, 2**63), -1, chooser.randrange(-1, 2**40), -1, chooser.randrange(-1, 100)))
    return rows


def decoded_fields(decoded: pa.RecordBatch, index: int) -> dict[str, object]:
    return {name: decoded.column(name)[index].as_py() for name in DECODED_COLUMNS}


def test_every_field_of_every_row_is_what_the_codec_wrote() -> None:
    rows = random_rows(500)
    decoded = decode_usage_batch(batch([encode(row) for row in rows]))
    assert decoded.schema.names == list(DECODED_COLUMNS)
    for index, row in enumerate(rows):
        fields = decoded_fields(decoded, index)
        assert decode(encode(row)) == row
        for name in row.__dataclass_fields__:
            expected = getattr(row, name)
            assert fields[name] == (expected.encode() if isinstance(expected, str) else expected), (index, name)
        other_kind = [name for name in ("bytes_in", "log_size_bytes") if name not in row.__dataclass_fields__]
        assert all(fields[name] is None for name in other_kind)
        assert fields[BINARY_COLUMN] is True
        assert fields[KIND_CODE_COLUMN] == (0 if isinstance(row, TrafficRow) else 1)
        assert fields[SIZE_COLUMN] == fields[EXPECTED_SIZE_COLUMN] == len(encode(row))
        assert fields[ASCII_COLUMN] == all(getattr(row, name).isascii() for name in ("incarnation", "tenant_id", "topic"))
        # Valid ASCII rows are decoded whole: their bytes do not travel back to Spark.
        assert (fields[UNDECODED_COLUMN] is None) == fields[ASCII_COLUMN]


def test_a_slice_of_a_larger_array_reads_its_own_values() -> None:
    rows = random_rows(30, seed=3)
    whole = batch([encode(row) for row in rows])
    decoded = decode_usage_batch(whole.slice(11, 7))
    assert [value.as_py() for value in decoded.column("node_id")] == [row.node_id for row in rows[11:18]]
    assert [value.as_py() for value in decoded.column("topic")] == [row.topic.encode() for row in rows[11:18]]


def test_json_null_empty_and_malformed_values_keep_their_bytes_for_spark() -> None:
    good = encode(TrafficRow(1, "i1", 0, 0, 60_000, "tn-a", "orders", 0, bytes_in=5))
    as_json = encode_json(TrafficRow(1, "i1", 0, 0, 60_000, "tn-a", "orders", 0))
    values: list[bytes | None] = [as_json, None, b"", good[:60], good + b"!", good[:1] + b"\x09" + good[2:], good[:-2] + b"\xc3\x28", good]
    decoded = decode_usage_batch(batch(values))
    fields = [decoded_fields(decoded, index) for index in range(len(values))]
    assert [row[BINARY_COLUMN] for row in fields] == [False, False, False, True, True, True, True, True]
    assert [row[UNDECODED_COLUMN] for row in fields] == [*values[:2], b"", *values[3:7], None]
    assert (fields[3][SIZE_COLUMN], fields[3][EXPECTED_SIZE_COLUMN], fields[3]["node_id"]) == (60, None, None)
    assert (fields[4][SIZE_COLUMN], fields[4][EXPECTED_SIZE_COLUMN]) == (len(good) + 1, len(good))
    assert fields[5][KIND_CODE_COLUMN] == 9
    assert fields[5]["bytes_in"] is None and fields[5]["log_size_bytes"] is None
    assert fields[6][ASCII_COLUMN] is False and fields[6]["topic"] == b"orde\xc3\x28"
    assert fields[7]["bytes_in"] == 5


def test_a_window_ending_before_it_starts_keeps_its_bytes() -> None:
    backwards = encode(TrafficRow(1, "i1", 0, 60_000, 0, "tn-a", "orders", 0))
    decoded = decode_usage_batch(batch([backwards]))
    assert decoded.column(UNDECODED_COLUMN)[0].as_py() == backwards


def test_batches_are_decoded_one_by_one_and_an_empty_batch_stays_empty() -> None:
    row = encode(PartitionRow(2, "i2", 3, 0, 60_000, "tn-b", "logs", 4, 4096, 0, 10, 10, 0))
    out = list(decode_usage_batches(iter([batch([]), batch([row, row])])))
    assert [len(decoded) for decoded in out] == [0, 2]
    assert out[1].column("log_size_bytes").to_pylist() == [4096, 4096]
