from __future__ import annotations

import os

from broker_nodes.storage.cleaner import LogCleaner
from tests.broker_nodes.storage.conftest import START_MS, make_batch, read_all
from weir.records import iter_batch_positions

COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "1024", "file.delete.delay.ms": "0", "delete.retention.ms": "1000"}


def put(log, key: bytes, value: bytes | None) -> int:
    return log.append_as_leader(make_batch([value], keys=[key]), 0).first_offset


def test_compaction_keeps_the_latest_record_per_key_at_its_offset(open_log, clock) -> None:
    log = open_log(COMPACTED)
    expected: dict[bytes, tuple[int, bytes]] = {}
    for number in range(120):
        key = b"key-%d" % (number % 7)
        value = b"value-%03d" % number + b"." * 20
        expected[key] = (put(log, key, value), value)
    active_before = log.segments[-1]
    active_bytes = active_before.log_path.read_bytes()
    result = LogCleaner(clock).clean(log, clock.milliseconds())
    assert result is not None and result.records_removed > 0
    remaining = read_all(log)
    cleaned_end = log.segments[-1].base_offset
    closed_part = [(offset, key, value) for offset, key, value in remaining if offset < cleaned_end]
    keys_in_closed = [key for _, key, _ in closed_part]
    assert len(keys_in_closed) == len(set(keys_in_closed))
    for offset, key, value in remaining:
        if offset < cleaned_end and expected[key][0] < cleaned_end:
            assert (offset, value) == expected[key]
    assert log.segments[-1] is active_before
    assert active_before.log_path.read_bytes() == active_bytes


def test_compaction_preserves_batch_base_and_last_offsets(open_log, clock) -> None:
    log = open_log(COMPACTED)
    from weir.records import RecordBatchBuilder

    for round_number in range(10):
        builder = RecordBatchBuilder()
        for key in (b"a", b"b", b"c"):
            builder.append(START_MS, key, b"%s-%d" % (key, round_number) + b"." * 40)
        log.append_as_leader(builder.build(), 0)
    LogCleaner(clock).clean(log, clock.milliseconds())
    first = log.segments[0]
    headers = [header for _, header in iter_batch_positions(first.pread(first.size, 0))]
    assert all(header.base_offset % 3 == 0 and header.last_offset_delta == 2 for header in headers)
    offsets = [offset for offset, _, _ in read_all(log)]
    assert offsets == sorted(offsets)
    assert log.log_end_offset == 30


def test_tombstones_are_removed_only_after_delete_retention_ms(open_log, clock) -> None:
    log = open_log(COMPACTED)
    put(log, b"gone", b"v" * 50)
    tombstone_offset = put(log, b"gone", None)
    for number in range(20):
        put(log, b"other-%d" % number, b"w" * 50)
    log.roll()
    cleaner = LogCleaner(clock)
    cleaner.clean(log, clock.milliseconds())
    records = read_all(log)
    assert (tombstone_offset, b"gone", None) in records
    assert not any(key == b"gone" and value is not None for _, key, value in records)
    clock.advance(999)
    cleaner.clean(log, clock.milliseconds())
    assert (tombstone_offset, b"gone", None) in read_all(log)
    clock.advance(1)
    cleaner.clean(log, clock.milliseconds())
    assert not any(key == b"gone" for _, key, _ in read_all(log))


def test_min_compaction_lag_keeps_recent_segments_uncompacted(open_log, clock) -> None:
    log = open_log({**COMPACTED, "min.compaction.lag.ms": "60000"})
    for number in range(40):
        put(log, b"same", b"value-%d" % number + b"." * 30)
    assert LogCleaner(clock).clean(log, clock.milliseconds()) is None
    clock.advance(60_000)
    assert LogCleaner(clock).clean(log, clock.milliseconds()) is not None


def test_min_cleanable_dirty_ratio_defers_compaction(open_log, clock) -> None:
    log = open_log({**COMPACTED, "min.cleanable.dirty.ratio": "0.9"})
    for number in range(60):
        put(log, b"key-%d" % number, b"x" * 40)
    cleaner = LogCleaner(clock)
    assert cleaner.clean(log, clock.milliseconds()) is not None  # first pass: nothing is clean yet
    for number in range(12):
        put(log, b"key-%d" % number, b"y" * 40)
    log.roll()
    assert cleaner.clean(log, clock.milliseconds()) is None
    assert cleaner.clean(log, clock.milliseconds(), force=True) is not None


def test_delete_policy_logs_are_not_compacted(open_log, clock) -> None:
    log = open_log({"segment.bytes": "1024"})
    for _number in range(40):
        put(log, b"same", b"v" * 40)
    assert LogCleaner(clock).clean(log, clock.milliseconds()) is None


def test_compacted_log_survives_reopening(open_log, clock, tmp_path) -> None:
    log = open_log(COMPACTED)
    for number in range(80):
        put(log, b"key-%d" % (number % 5), b"value-%d" % number + b"." * 30)
    LogCleaner(clock).clean(log, clock.milliseconds())
    before = read_all(log)
    log.close()
    assert not any(name.endswith((".cleaned", ".swap")) for name in os.listdir(tmp_path / "orders-0"))
    reopened = open_log(COMPACTED, clean_shutdown=False)
    assert read_all(reopened) == before
    assert reopened.log_end_offset == 80
