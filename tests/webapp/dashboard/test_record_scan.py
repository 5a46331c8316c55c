"""The message browser's scan logic without a broker: filters, JSON paths, the merge of
partitions, the byte and time budget, live-tail positions, downloads and content detection."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime

import pytest

from webapp.dashboard.data_plane import BrowsedRecord
from webapp.dashboard.record_export import records_csv, records_json
from webapp.dashboard.record_rendering import Format, detect_format, render_bytes
from webapp.dashboard.record_scan import (
    CHUNK_RECORDS,
    Budget,
    Chunk,
    Direction,
    InvalidFilter,
    JsonPath,
    Order,
    PartitionRange,
    RecordFilter,
    merge,
    parse_expected_json,
    scan,
)


def record(
    partition: int, offset: int, timestamp_ms: int = 0, *, key: bytes | None = None, value: bytes | None = b"v", headers=(), error: str = ""
) -> BrowsedRecord:  # type: ignore[no-untyped-def]
    return BrowsedRecord(
        offset=offset,
        timestamp=datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC),
        timestamp_is_log_append_time=False,
        key=key,
        value=value,
        headers=list(headers),
        timestamp_ms=timestamp_ms,
        error=error,
        last_offset=offset if not error else offset + 1,
        partition=partition,
    )


class FakeLog:
    """Partitions as lists of records (offset = index); counts the chunks read."""

    def __init__(self, partitions: dict[int, list[BrowsedRecord]]) -> None:
        self.partitions = partitions
        self.reads: list[tuple[int, int, int]] = []

    def __call__(self, partition: int, first: int, end: int, seconds: float) -> Chunk:
        self.reads.append((partition, first, end))
        return Chunk([r for r in self.partitions[partition] if first <= r.offset < end], complete=True)

    def ranges(self) -> list[PartitionRange]:
        return [PartitionRange(p, 0, len(records), 0) for p, records in sorted(self.partitions.items())]


def json_log(count: int, partitions: int = 3) -> FakeLog:
    """Record i of partition p: value {"n": i, "p": p, "status": paid|open}, timestamp i*10+p."""
    return FakeLog(
        {
            p: [
                record(p, i, i * 10 + p, key=f"k{i}".encode(), value=json.dumps({"n": i, "p": p, "status": "paid" if i % 3 == 0 else "open"}).encode())
                for i in range(count)
            ]
            for p in range(partitions)
        }
    )


# ---------------------------------------------------------------- JSON paths and filters


def test_json_path_parses_names_quoted_names_and_indexes() -> None:
    path = JsonPath.parse("$.order['line items'][0][\"sku\"][-1]")
    assert path.steps == ("order", "line items", 0, "sku", -1)
    assert path.find({"order": {"line items": [{"sku": ["a", "b"]}]}}) == "b"


@pytest.mark.parametrize("bad", ["order.id", "$.order..id", "$[foo]", "$.order[0", "$.a b"])
def test_an_invalid_json_path_is_refused_naming_where(bad: str) -> None:
    with pytest.raises(InvalidFilter) as refused:
        JsonPath.parse(bad)
    assert refused.value.field == "json_path"
    assert "$" in refused.value.message


def test_json_equality_compares_json_values_and_reads_bare_text_as_a_string() -> None:
    paid = RecordFilter(json_path=JsonPath.parse("$.status"), json_equals=parse_expected_json("paid"))
    assert paid.matches(record(0, 0, value=b'{"status": "paid"}'))
    assert not paid.matches(record(0, 0, value=b'{"status": "open"}'))
    assert not paid.matches(record(0, 0, value=b"not json"))
    number = RecordFilter(json_path=JsonPath.parse("$.n"), json_equals=parse_expected_json("1"))
    assert number.matches(record(0, 0, value=b'{"n": 1.0}'))
    assert not number.matches(record(0, 0, value=b'{"n": true}'))
    assert not number.matches(record(0, 0, value=b'{"n": "1"}'))
    exists = RecordFilter(json_path=JsonPath.parse("$.items[1]"))
    assert exists.matches(record(0, 0, value=b'{"items": [1, null]}'))
    assert not exists.matches(record(0, 0, value=b'{"items": [1]}'))


def test_key_value_header_and_time_filters_all_apply() -> None:
    wanted = record(0, 0, 1000, key=b"customer-7", value=b"hello world", headers=[("source", b"web-shop"), ("trace", None)])
    assert RecordFilter(key_contains="omer-7", value_contains="lo wo", header_name="source", header_value="shop", time_from_ms=1000, time_to_ms=1001).matches(
        wanted
    )
    assert not RecordFilter(key_contains="Customer").matches(wanted)  # case-sensitive
    assert not RecordFilter(header_name="sourc").matches(wanted)  # names are exact
    assert not RecordFilter(header_name="trace", header_value="x").matches(wanted)
    assert RecordFilter(header_name="trace").matches(wanted)
    assert not RecordFilter(time_to_ms=1000).matches(wanted)
    assert not RecordFilter(key_contains="x").matches(record(0, 0, key=None))
    bad_batch = record(0, 5, error="cannot be decoded")
    assert RecordFilter().matches(bad_batch) and not RecordFilter(value_contains="v").matches(bad_batch)


# ---------------------------------------------------------------- scanning and merging


def test_newest_first_interleaves_partitions_by_timestamp_and_returns_exactly_the_matches() -> None:
    log = json_log(50)
    paid = RecordFilter(json_path=JsonPath.parse("$.status"), json_equals="paid")
    result = scan(log, log.ranges(), paid, direction=Direction.NEWEST_FIRST, order=Order.TIMESTAMP, limit=6, budget=Budget())
    assert [(r.partition, r.offset) for r in result.records] == [(2, 48), (1, 48), (0, 48), (2, 45), (1, 45), (0, 45)]
    assert result.stopped_at == "" and result.partitions_scanned == 3


def test_forward_scan_from_offsets_reads_only_what_it_needs() -> None:
    log = json_log(3 * CHUNK_RECORDS)
    ranges = [PartitionRange(p, 0, 3 * CHUNK_RECORDS, start=10) for p in range(3)]
    result = scan(log, ranges, RecordFilter(), direction=Direction.FORWARD, order=Order.PARTITION, limit=3, budget=Budget())
    assert [(r.partition, r.offset) for r in result.records] == [(0, 10), (0, 11), (0, 12)]
    assert len(log.reads) == 3  # one chunk per partition
    assert result.next_offsets == {0: 13, 1: 13, 2: 13}


def test_a_partition_keeps_its_offset_order_when_timestamps_go_back() -> None:
    records = [record(0, 0, 500), record(0, 1, 100), record(1, 0, 300)]
    assert [(r.partition, r.offset) for r in merge(records, direction=Direction.FORWARD, order=Order.TIMESTAMP)] == [(1, 0), (0, 0), (0, 1)]
    assert [(r.partition, r.offset) for r in merge(records, direction=Direction.NEWEST_FIRST, order=Order.PARTITION)] == [(0, 1), (0, 0), (1, 0)]


def test_the_scan_stops_at_its_byte_budget_and_says_so() -> None:
    log = json_log(4 * CHUNK_RECORDS, partitions=2)
    never = RecordFilter(key_contains="no such key")
    result = scan(log, log.ranges(), never, direction=Direction.NEWEST_FIRST, order=Order.TIMESTAMP, limit=10, budget=Budget(max_bytes=10_000))
    assert result.stopped_at == "bytes" and result.records == []
    assert 10_000 <= result.bytes_scanned < 10_000 + CHUNK_RECORDS * 100
    assert result.records_scanned < 8 * CHUNK_RECORDS


def test_the_scan_stops_at_its_time_budget_and_says_so() -> None:
    now = [0.0]

    def slow_reader(partition: int, first: int, end: int, seconds: float) -> Chunk:
        now[0] += 1.0  # each chunk costs a second of the injected clock
        return Chunk([record(partition, offset) for offset in range(first, end)], complete=True)

    ranges = [PartitionRange(p, 0, 10 * CHUNK_RECORDS) for p in range(2)]
    budget = Budget(max_seconds=3.0, clock=lambda: now[0])
    result = scan(slow_reader, ranges, RecordFilter(key_contains="x"), direction=Direction.FORWARD, order=Order.TIMESTAMP, limit=5, budget=budget)
    assert result.stopped_at == "time"
    assert result.records_scanned == 3 * CHUNK_RECORDS


def test_an_incomplete_forward_chunk_keeps_the_tail_position_after_the_last_record() -> None:
    def partial(partition: int, first: int, end: int, seconds: float) -> Chunk:
        return Chunk([record(partition, first), record(partition, first + 1)], complete=False)

    result = scan(partial, [PartitionRange(0, 0, 100, start=40)], RecordFilter(), direction=Direction.FORWARD, order=Order.TIMESTAMP, limit=50, budget=Budget())
    assert result.next_offsets == {0: 42} and len(result.records) == 2


# ---------------------------------------------------------------- downloads and rendering


def test_downloads_round_trip_text_and_binary_payloads() -> None:
    records = [record(1, 7, 1_700_000_000_123, key=b"k", value=b"\xff\x00", headers=[("h", b"x")]), record(0, 2, 5, key=None, value=b'{"a": 1}')]
    documents = json.loads(records_json(records))
    assert documents[0]["value_encoding"] == "base64" and documents[0]["value"] == "/wA="
    assert documents[0]["timestamp_utc"] == "2023-11-14T22:13:20.123000Z"
    assert documents[1]["key"] is None and documents[1]["key_encoding"] == "null"
    rows = list(csv.DictReader(io.StringIO(records_csv(records))))
    assert [(row["partition"], row["offset"], row["value"]) for row in rows] == [("1", "7", "/wA="), ("0", "2", '{"a": 1}')]
    assert json.loads(rows[0]["headers"]) == [{"name": "h", "value": "x", "encoding": "text"}]


def test_values_are_decoded_by_content_and_long_ones_collapse() -> None:
    assert detect_format(b'{"a": 1}') is Format.JSON
    assert detect_format(b"[1, 2") is Format.TEXT
    assert detect_format(b"plain") is Format.TEXT
    assert detect_format(b"\x00\xff") is Format.HEX
    assert render_bytes(b'{"a":1}', Format.AUTO).text == '{\n  "a": 1\n}'
    long = render_bytes(json.dumps({f"field{i}": i for i in range(40)}).encode(), Format.AUTO)
    assert long.is_long and long.summary == "{"
    assert not render_bytes(b"short", Format.AUTO).is_long
