"""log_formats.dump_log against segment files built by hand in tmp_path (no broker)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from log_formats.dump_log import DumpLogError, dump, files_to_dump
from log_formats.log_files import OFFSET_INDEX_ENTRY, TIME_INDEX_ENTRY, segment_file_name
from weir.records import COMPRESSION_GZIP, COMPRESSION_NONE, CRC_OFFSET, RecordBatchBuilder

BASE_TIMESTAMP = 1_700_000_000_000


def make_batch(
    base_offset: int, values: list[bytes], *, first_timestamp: int = BASE_TIMESTAMP, codec: int = COMPRESSION_NONE, key: bytes | None = None, headers=None
) -> bytes:
    builder = RecordBatchBuilder(codec, base_offset=base_offset, partition_leader_epoch=0)
    for number, value in enumerate(values):
        builder.append(first_timestamp + number, key, value, headers)
    return builder.build()


class Segment:
    """A segment written to disk: its batches back to back, and where each one starts."""

    def __init__(self, directory: Path, base_offset: int, batches: list[bytes]) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.positions = []
        position = 0
        for batch in batches:
            self.positions.append(position)
            position += len(batch)
        self.log = directory / segment_file_name(base_offset, ".log")
        self.log.write_bytes(b"".join(batches))
        self.index = directory / segment_file_name(base_offset, ".index")
        self.time_index = directory / segment_file_name(base_offset, ".timeindex")

    def write_index(self, entries: list[tuple[int, int]], zero_entries: int = 0) -> Path:
        """``entries`` are (absolute offset, position); ``zero_entries`` mimic preallocation."""
        data = b"".join(OFFSET_INDEX_ENTRY.pack(offset - self.base_offset, position) for offset, position in entries)
        self.index.write_bytes(data + bytes(OFFSET_INDEX_ENTRY.size * zero_entries))
        return self.index

    def write_time_index(self, entries: list[tuple[int, int]], zero_entries: int = 0) -> Path:
        """``entries`` are (timestamp, absolute offset)."""
        data = b"".join(TIME_INDEX_ENTRY.pack(timestamp, offset - self.base_offset) for timestamp, offset in entries)
        self.time_index.write_bytes(data + bytes(TIME_INDEX_ENTRY.size * zero_entries))
        return self.time_index


def three_batch_segment(directory: Path, base_offset: int = 0) -> Segment:
    """Offsets base..base+1, base+2..base+4, base+5: max timestamps +1, +12, +20."""
    return Segment(
        directory,
        base_offset,
        [
            make_batch(base_offset, [b"a", b"b"]),
            make_batch(base_offset + 2, [b"c", b"d", b"e"], first_timestamp=BASE_TIMESTAMP + 10),
            make_batch(base_offset + 5, [b"f"], first_timestamp=BASE_TIMESTAMP + 20),
        ],
    )


def run_dump(path: Path, **options) -> tuple[object, str]:
    out = io.StringIO()
    report = dump(path, out, **options)
    return report, out.getvalue()


# ------------------------------------------------------------------ .log files


def test_dump_valid_log_prints_every_batch_and_reports_ok(tmp_path: Path) -> None:
    segment = three_batch_segment(tmp_path)

    report, text = run_dump(segment.log)

    assert report.ok
    assert (report.batches, report.records) == (3, 6)
    batch_lines = [line for line in text.splitlines() if line.startswith("baseOffset:")]
    assert len(batch_lines) == 3
    assert batch_lines[1].startswith("baseOffset: 2 lastOffset: 4 count: 3 ")
    assert f"position: {segment.positions[1]} " in batch_lines[1]
    assert f"CreateTime: {BASE_TIMESTAMP + 12} " in batch_lines[1]
    assert "magic: 2 compresscodec: none" in batch_lines[1]
    assert batch_lines[1].endswith("isValid: true")
    assert "| offset:" not in text


def test_dump_with_print_data_prints_each_record(tmp_path: Path) -> None:
    batches = [
        make_batch(0, [b"hello", b"\xff\x00"], key=b"user-1", headers=[("trace", b"abc")]),
        make_batch(2, [b"compressed"], codec=COMPRESSION_GZIP),
    ]
    segment = Segment(tmp_path, 0, batches)

    report, text = run_dump(segment.log, print_data=True)

    assert report.ok
    record_lines = [line for line in text.splitlines() if line.startswith("| offset:")]
    assert record_lines[0] == (f"| offset: 0 CreateTime: {BASE_TIMESTAMP} keySize: 6 valueSize: 5 sequence: -1 headers: [trace=abc] key: user-1 payload: hello")
    assert record_lines[1].endswith(r"payload: b'\xff\x00'")
    assert record_lines[2].endswith("key: null payload: compressed")
    assert "compresscodec: gzip" in text


def test_dump_empty_log_reports_no_batches(tmp_path: Path) -> None:
    segment = Segment(tmp_path, 0, [])

    report, text = run_dump(segment.log)

    assert report.ok
    assert report.batches == 0
    assert "Log starting offset: 0" in text


def test_dump_log_with_corrupt_crc_reports_position_and_stops(tmp_path: Path) -> None:
    segment = three_batch_segment(tmp_path)
    data = bytearray(segment.log.read_bytes())
    data[segment.positions[1] + CRC_OFFSET] ^= 0xFF
    segment.log.write_bytes(bytes(data))

    report, text = run_dump(segment.log)

    assert not report.ok
    assert report.batches == 1
    [problem] = report.problems
    assert problem.position == segment.positions[1]
    assert "corrupt batch" in problem.message and "CRC mismatch" in problem.message
    assert "baseOffset: 5" not in text


def test_dump_log_with_torn_tail_reports_bytes_left_over(tmp_path: Path) -> None:
    segment = three_batch_segment(tmp_path)
    data = segment.log.read_bytes()
    segment.log.write_bytes(data[:-7])
    left_over = len(data) - 7 - segment.positions[2]

    report, _ = run_dump(segment.log)

    assert report.batches == 2
    [problem] = report.problems
    assert problem.position == segment.positions[2]
    assert f"torn tail: {left_over} bytes left over" in problem.message


def test_dump_log_with_offsets_going_backwards_reports_the_batch(tmp_path: Path) -> None:
    segment = Segment(tmp_path, 0, [make_batch(0, [b"a", b"b"]), make_batch(1, [b"c"])])

    report, _ = run_dump(segment.log)

    assert report.batches == 2
    [problem] = report.problems
    assert problem.position == segment.positions[1]
    assert "does not follow the previous batch's last offset 1" in problem.message


def test_dump_with_max_bytes_stops_before_the_batch_that_passes_it(tmp_path: Path) -> None:
    segment = three_batch_segment(tmp_path)

    report, text = run_dump(segment.log, max_bytes=segment.positions[2])

    assert report.ok
    assert report.batches == 2
    assert f"Stopped after {segment.positions[2]} bytes" in text


def test_dump_reports_progress_for_every_byte_read(tmp_path: Path) -> None:
    segment = three_batch_segment(tmp_path)
    segment.write_index([(4, segment.positions[1])])
    advances: list[int] = []

    dump(tmp_path, io.StringIO(), progress=advances.append)

    assert sum(advances) == segment.log.stat().st_size + segment.index.stat().st_size


# ------------------------------------------------------------------ .index files


def test_dump_valid_offset_index_checks_entries_against_log(tmp_path: Path) -> None:
    segment = three_batch_segment(tmp_path, base_offset=100)
    segment.write_index([(104, segment.positions[1]), (105, segment.positions[2])], zero_entries=3)

    report, text = run_dump(segment.index)

    assert report.ok, report.problems
    assert f"offset: 104 position: {segment.positions[1]}" in text
    assert "3 unused preallocated entries" in text


def test_dump_offset_index_reports_every_mismatch(tmp_path: Path) -> None:
    segment = three_batch_segment(tmp_path)
    index = segment.write_index(
        [
            (1, segment.positions[1]),  # the batch at that position holds 2..4
            (4, segment.positions[1] + 3),  # not a batch start
            (3, segment.positions[2]),  # offset goes backwards
            (9, segment.positions[2] + 1000),  # past the end of the log
        ]
    )

    report, _ = run_dump(index)

    messages = [problem.message for problem in report.problems]
    assert len(messages) == 5, messages
    assert "holds offsets 2..4" in messages[0]
    assert "is not the start of a batch" in messages[1]
    assert "does not follow the previous entry" in messages[2]
    assert "holds offsets 5..5" in messages[3]
    assert "points past the last batch" in messages[4]
    assert [problem.position for problem in report.problems] == [0, 8, 16, 16, 24]


def test_dump_offset_index_with_partial_entry_reports_left_over_bytes(tmp_path: Path) -> None:
    segment = three_batch_segment(tmp_path)
    segment.index.write_bytes(OFFSET_INDEX_ENTRY.pack(4, segment.positions[1]) + b"\x00\x01\x02")

    report, _ = run_dump(segment.index)

    [problem] = report.problems
    assert problem.position == OFFSET_INDEX_ENTRY.size
    assert "3 bytes left over" in problem.message


def test_dump_index_without_sibling_log_prints_entries_and_reports_it(tmp_path: Path) -> None:
    segment = three_batch_segment(tmp_path)
    segment.write_index([(4, segment.positions[1])])
    segment.log.unlink()

    report, text = run_dump(segment.index)

    assert "offset: 4 position:" in text
    [problem] = report.problems
    assert "no sibling log" in problem.message


def test_dump_with_verify_index_only_prints_problems_but_not_entries(tmp_path: Path) -> None:
    segment = three_batch_segment(tmp_path)
    segment.write_index([(4, segment.positions[1]), (5, segment.positions[2] + 1)])

    report, text = run_dump(tmp_path, verify_index_only=True)

    assert len(report.problems) == 1
    assert "offset: 4 position:" not in text
    assert "baseOffset:" not in text
    assert "PROBLEM:" in text and "is not the start of a batch" in text


# ------------------------------------------------------------------ .timeindex files


def test_dump_valid_time_index_checks_timestamps_against_batches(tmp_path: Path) -> None:
    segment = three_batch_segment(tmp_path)
    # Either the first or the last offset of the batch may name it.
    segment.write_time_index([(BASE_TIMESTAMP + 1, 1), (BASE_TIMESTAMP + 12, 2), (BASE_TIMESTAMP + 20, 5)], zero_entries=2)

    report, text = run_dump(segment.time_index)

    assert report.ok, report.problems
    assert f"timestamp: {BASE_TIMESTAMP + 12} offset: 2" in text
    assert "2 unused preallocated entries" in text


def test_dump_time_index_reports_wrong_timestamp_and_disorder(tmp_path: Path) -> None:
    segment = three_batch_segment(tmp_path)
    segment.write_time_index(
        [
            (BASE_TIMESTAMP + 12, 3),
            (BASE_TIMESTAMP + 11, 4),  # not increasing, and not the batch's max timestamp
            (BASE_TIMESTAMP + 30, 9),  # no such offset in the log
        ]
    )

    report, _ = run_dump(segment.time_index)

    messages = [problem.message for problem in report.problems]
    assert len(messages) == 3, messages
    assert "is not above the previous entry's timestamp" in messages[0]
    assert f"has max timestamp {BASE_TIMESTAMP + 12}" in messages[1]
    assert "no batch of the log holds offset 9" in messages[2]


# ------------------------------------------------------------------ directories and paths


def test_dump_partition_directory_dumps_segments_in_offset_order(tmp_path: Path) -> None:
    partition = tmp_path / "orders-0"
    partition.mkdir()
    later = three_batch_segment(partition, base_offset=6)
    first = three_batch_segment(partition, base_offset=0)
    first.write_index([(4, first.positions[1])])
    later.write_time_index([(BASE_TIMESTAMP + 20, 11)])
    (partition / "leader-epoch-checkpoint").write_text("0\n")

    report, _ = run_dump(partition)

    assert report.ok, report.problems
    assert report.files == [first.log, first.index, later.log, later.time_index]
    assert report.batches == 6


def test_dump_missing_path_raises(tmp_path: Path) -> None:
    with pytest.raises(DumpLogError, match="no such file"):
        dump(tmp_path / "absent.log", io.StringIO())


def test_files_to_dump_rejects_other_files_and_empty_directories(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("x")
    with pytest.raises(DumpLogError, match="not a segment file"):
        files_to_dump(other)
    with pytest.raises(DumpLogError, match="no segment files"):
        files_to_dump(tmp_path)
