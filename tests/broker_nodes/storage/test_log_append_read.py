from __future__ import annotations

import struct

import pytest

from broker_nodes.storage.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeForSegmentError,
    RecordTooLargeError,
)
from tests.broker_nodes.storage.conftest import START_MS, make_batch, read_all
from weir.records import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    iter_batch_positions,
    iter_records,
    read_batch_header,
)


def test_append_assigns_consecutive_offsets_and_read_returns_stored_batches(open_log) -> None:
    log = open_log()
    first = log.append_as_leader(make_batch([b"a", b"b"]), 3)
    second = log.append_as_leader(make_batch([b"c"]), 3)
    assert (first.first_offset, first.last_offset, first.record_count) == (0, 1, 2)
    assert (second.first_offset, second.last_offset) == (2, 2)
    assert log.log_end_offset == log.high_watermark == 3
    fetched = log.read(0, 1 << 20)
    headers = [header for _, header in iter_batch_positions(fetched.records)]
    assert [header.base_offset for header in headers] == [0, 2]
    assert {header.partition_leader_epoch for header in headers} == {3}
    assert [record.value for record in iter_records(fetched.records)] == [b"a", b"b", b"c"]


@pytest.mark.parametrize("codec", [COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD])
def test_compressed_batches_are_stored_byte_for_byte(open_log, codec: int) -> None:
    log = open_log()
    batch = make_batch([b"x" * 100, b"y" * 100], codec=codec)
    log.append_as_leader(batch, 0)
    stored = log.read(0, 1 << 20).records
    # Only baseOffset and partitionLeaderEpoch (outside the CRC) are rewritten by the broker.
    assert stored[8:12] == batch[8:12] and stored[16:] == batch[16:]
    assert read_batch_header(stored).compression == codec


def test_read_starting_mid_batch_returns_the_containing_batch(open_log) -> None:
    log = open_log()
    log.append_as_leader(make_batch([b"a", b"b", b"c"]), 0)
    fetched = log.read(1, 1 << 20)
    assert read_batch_header(fetched.records).base_offset == 0


def test_read_respects_max_bytes_with_whole_batches(open_log) -> None:
    log = open_log()
    for _ in range(5):
        log.append_as_leader(make_batch([b"x" * 100]), 0)
    batch_size = len(make_batch([b"x" * 100]))
    fetched = log.read(0, batch_size * 2 + 10)
    assert len(fetched.records) == batch_size * 2


def test_oversized_first_batch_is_returned_whole_only_with_min_one_batch(open_log) -> None:
    log = open_log()
    log.append_as_leader(make_batch([b"x" * 1000]), 0)
    assert len(log.read(0, 10).records) == len(make_batch([b"x" * 1000]))
    assert log.read(0, 10, min_one_batch=False).records == b""


def test_read_never_returns_batches_at_or_beyond_max_offset(open_log) -> None:
    log = open_log({"segment.bytes": "1024"})
    for number in range(20):
        log.append_as_leader(make_batch([b"%d" % number * 30]), 0)
    fetched = log.read(0, 1 << 20, max_offset=7)
    assert [header.base_offset for _, header in iter_batch_positions(fetched.records)][-1] == 6
    log.update_high_watermark(12)
    fetched = log.read(10, 1 << 20)
    assert [header.base_offset for _, header in iter_batch_positions(fetched.records)] == [10, 11]
    assert log.read(12, 1 << 20).records == b""


def test_read_at_log_end_is_empty_and_beyond_is_out_of_range(open_log) -> None:
    log = open_log()
    log.append_as_leader(make_batch([b"a"]), 0)
    assert log.read(1, 100).records == b""
    with pytest.raises(OffsetOutOfRangeError) as raised:
        log.read(2, 100)
    assert (raised.value.log_start_offset, raised.value.log_end_offset) == (0, 1)


def test_reads_span_many_rolled_segments(open_log) -> None:
    log = open_log({"segment.bytes": "1024", "index.interval.bytes": "100"})
    for number in range(200):
        log.append_as_leader(make_batch([b"value-%03d" % number], keys=[b"k"]), 0)
    assert log.segment_count > 5
    records = read_all(log)
    assert [offset for offset, _, _ in records] == list(range(200))
    assert records[123][2] == b"value-123"
    for offset in (0, 57, 150, 199):
        assert read_batch_header(log.read(offset, 50).records).base_offset == offset


def test_segment_rolls_after_segment_ms(open_log, clock) -> None:
    log = open_log({"segment.ms": "1000"})
    log.append_as_leader(make_batch([b"a"]), 0)
    clock.advance(999)
    log.append_as_leader(make_batch([b"b"], timestamp=START_MS + 999), 0)
    assert log.segment_count == 1
    clock.advance(2)
    log.append_as_leader(make_batch([b"c"], timestamp=START_MS + 1001), 0)
    assert log.segment_count == 2
    assert log.segments[-1].base_offset == 2


def test_segment_rolls_when_the_index_is_full(open_log) -> None:
    log = open_log({"segment.index.bytes": "64", "index.interval.bytes": "0"})
    for _ in range(20):
        log.append_as_leader(make_batch([b"a"]), 0)
    assert log.segment_count > 1
    assert all(segment.offset_index.entry_count <= 8 for segment in log.segments)
    assert [offset for offset, _, _ in read_all(log)] == list(range(20))


def test_bad_batch_in_a_request_leaves_the_log_unchanged(open_log) -> None:
    log = open_log()
    log.append_as_leader(make_batch([b"good"]), 0)
    size_before = log.size_in_bytes
    corrupt = bytearray(make_batch([b"bad"]))
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(make_batch([b"also good"]) + bytes(corrupt), 0)
    assert log.log_end_offset == 1
    assert log.size_in_bytes == size_before
    assert [value for _, _, value in read_all(log)] == [b"good"]


def test_truncated_batch_is_corrupt(open_log) -> None:
    log = open_log()
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(make_batch([b"abc"])[:-2], 0)
    assert log.log_end_offset == 0


def test_wrong_magic_is_invalid(open_log) -> None:
    batch = bytearray(make_batch([b"abc"]))
    batch[16] = 1
    with pytest.raises(InvalidRecordError):
        open_log().append_as_leader(bytes(batch), 0)


def test_inconsistent_last_offset_delta_is_invalid(open_log) -> None:
    from weir.records import RecordBatchBuilder

    builder = RecordBatchBuilder()
    builder.append(START_MS, None, b"a")
    with pytest.raises(InvalidRecordError):
        open_log().append_as_leader(builder.build(last_offset_delta=3), 0)


def test_batch_over_max_message_bytes_is_too_large(open_log) -> None:
    log = open_log({"max.message.bytes": "200"})
    with pytest.raises(RecordTooLargeError) as raised:
        log.append_as_leader(make_batch([b"x" * 300]), 0)
    assert raised.value.limit == 200


def test_batch_over_segment_bytes_is_too_large_for_segment(open_log) -> None:
    log = open_log({"segment.bytes": "1024"})
    with pytest.raises(RecordBatchTooLargeForSegmentError):
        log.append_as_leader(make_batch([b"x" * 2000]), 0)


def test_create_time_outside_the_allowed_window_is_rejected(open_log) -> None:
    log = open_log({"message.timestamp.before.max.ms": "1000", "message.timestamp.after.max.ms": "500"})
    with pytest.raises(InvalidTimestampError):
        log.append_as_leader(make_batch([b"old"], timestamp=START_MS - 1001), 0)
    with pytest.raises(InvalidTimestampError):
        log.append_as_leader(make_batch([b"future"], timestamp=START_MS + 501), 0)
    log.append_as_leader(make_batch([b"ok"], timestamp=START_MS - 1000), 0)
    assert log.log_end_offset == 1


def test_log_append_time_stamps_batches_with_the_broker_clock(open_log, clock) -> None:
    log = open_log({"message.timestamp.type": "LogAppendTime"})
    clock.advance(5000)
    info = log.append_as_leader(make_batch([b"a", b"b"], timestamp=1), 0)
    assert info.log_append_time_ms == START_MS + 5000
    records = list(iter_records(log.read(0, 1 << 20).records))
    assert [record.timestamp for record in records] == [START_MS + 5000] * 2


def test_topic_compression_type_recompresses_batches(open_log) -> None:
    log = open_log({"compression.type": "zstd"})
    log.append_as_leader(make_batch([b"a" * 200, b"b"], keys=[b"k1", b"k2"]), 0)
    stored = log.read(0, 1 << 20).records
    assert read_batch_header(stored).compression == COMPRESSION_ZSTD
    assert [(record.offset, record.key, record.value) for record in iter_records(stored)] == [
        (0, b"k1", b"a" * 200),
        (1, b"k2", b"b"),
    ]


def test_offset_for_timestamp_finds_the_first_record_at_or_after(open_log) -> None:
    log = open_log({"segment.bytes": "1024", "index.interval.bytes": "64"})
    builder_timestamps = []
    for number in range(60):
        timestamp = START_MS + number * 10
        builder_timestamps.append(timestamp)
        log.append_as_leader(make_batch([b"v" * 40], timestamp=timestamp), 0)
    assert log.offset_for_timestamp(START_MS + 205) == (21, START_MS + 210)
    assert log.offset_for_timestamp(START_MS + 210) == (21, START_MS + 210)
    assert log.offset_for_timestamp(START_MS - 1) == (0, START_MS)
    assert log.offset_for_timestamp(START_MS + 10_000) is None
    assert log.offset_for_timestamp(-2) == (0, -1)
    assert log.offset_for_timestamp(-1) == (60, -1)
    assert log.offset_for_timestamp(-3) == (59, START_MS + 590)


def test_offset_for_timestamp_decodes_to_the_exact_record_in_a_batch(open_log) -> None:
    from weir.records import RecordBatchBuilder

    builder = RecordBatchBuilder()
    for number in range(5):
        builder.append(START_MS + number * 100, None, b"v")
    log = open_log()
    log.append_as_leader(builder.build(), 0)
    assert log.offset_for_timestamp(START_MS + 250) == (3, START_MS + 300)
    assert log.offset_for_timestamp(-3) == (4, START_MS + 400)


def test_truncate_to_removes_whole_batches_at_and_above_offset(open_log) -> None:
    log = open_log({"segment.bytes": "1024"})
    for _number in range(30):
        log.append_as_leader(make_batch([b"v" * 40]), 2)
    log.truncate_to(12)
    assert log.log_end_offset == 12
    assert [offset for offset, _, _ in read_all(log)] == list(range(12))
    info = log.append_as_leader(make_batch([b"again"]), 3)
    assert info.first_offset == 12
    assert log.leader_epoch_cache.entries == [(2, 0), (3, 12)]


def test_follower_append_keeps_the_leaders_offsets(open_log, tmp_path) -> None:
    leader = open_log()
    for _ in range(3):
        leader.append_as_leader(make_batch([b"a", b"b"]), 5)
    follower = open_log(directory=tmp_path / "orders-1")
    data = leader.read(0, 1 << 20).records
    info = follower.append_as_follower(data)
    assert (info.first_offset, info.last_offset) == (0, 5)
    assert follower.read(0, 1 << 20, max_offset=6).records == data
    with pytest.raises(InvalidRecordError):
        follower.append_as_follower(data)


def test_flush_messages_advances_the_recovery_point(open_log) -> None:
    log = open_log({"flush.messages": "3"})
    log.append_as_leader(make_batch([b"a", b"b"]), 0)
    assert log.recovery_point == 0
    log.append_as_leader(make_batch([b"c"]), 0)
    assert log.recovery_point == 3


def test_empty_request_is_invalid(open_log) -> None:
    with pytest.raises(InvalidRecordError):
        open_log().append_as_leader(b"", 0)


def test_batch_length_below_minimum_is_corrupt(open_log) -> None:
    batch = bytearray(make_batch([b"abc"]))
    struct.pack_into(">i", batch, 8, 10)
    with pytest.raises(CorruptRecordError):
        open_log().append_as_leader(bytes(batch), 0)


def test_concurrent_reads_see_only_whole_appended_batches(open_log) -> None:
    import threading

    log = open_log({"segment.bytes": "2048", "index.interval.bytes": "128"})
    problems: list[str] = []
    done = threading.Event()

    def reader() -> None:
        for _ in range(2000):
            if done.is_set():
                return
            fetched = log.read(0, 1 << 16)
            offsets = [record.offset for record in iter_records(fetched.records)]
            if offsets != list(range(len(offsets))) or (offsets and offsets[-1] >= fetched.high_watermark):
                problems.append(f"unexpected offsets {offsets[:3]}..{offsets[-3:]}")
                return

    thread = threading.Thread(target=reader)
    thread.start()
    for number in range(300):
        log.append_as_leader(make_batch([b"value-%03d" % number]), 0)
    done.set()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert problems == []
