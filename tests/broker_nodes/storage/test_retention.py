from __future__ import annotations

from tests.broker_nodes.storage.conftest import START_MS, make_batch, read_all

DAY_MS = 24 * 3600 * 1000


def fill(log, count: int, timestamp: int) -> None:
    for _ in range(count):
        log.append_as_leader(make_batch([b"x" * 100], timestamp=timestamp), 0)


def test_retention_by_time_deletes_expired_closed_segments(open_log, clock) -> None:
    log = open_log({"segment.bytes": "1024", "retention.ms": str(DAY_MS), "file.delete.delay.ms": "0"})
    fill(log, 20, START_MS)
    segments_before = log.segment_count
    assert log.apply_retention(START_MS + DAY_MS) == 0
    clock.advance(DAY_MS)
    fill(log, 10, START_MS + DAY_MS)
    deleted = log.apply_retention(START_MS + DAY_MS + 1)
    # Every segment closed before the clock moved; the old active one also took new records.
    assert deleted == segments_before - 1
    assert log.log_start_offset == log.segments[0].base_offset
    assert read_all(log)[0][0] == log.log_start_offset
    assert all(segment.max_timestamp >= START_MS + DAY_MS for segment in log.segments[1:])


def test_retention_never_deletes_the_active_segment(open_log) -> None:
    log = open_log({"retention.ms": "1"})
    fill(log, 3, START_MS)
    assert log.apply_retention(START_MS + DAY_MS) == 0
    assert log.log_end_offset == 3


def test_retention_by_size_keeps_the_partition_under_retention_bytes(open_log) -> None:
    log = open_log({"segment.bytes": "1024", "retention.bytes": "2048", "retention.ms": "-1"})
    fill(log, 50, START_MS)
    deleted = log.apply_retention(START_MS)
    assert deleted > 0
    # As in Kafka: delete the oldest segments while the rest still holds at least retention.bytes.
    assert log.size_in_bytes - log.segments[0].size < 2048 <= log.size_in_bytes + 1024
    assert log.log_start_offset == log.segments[0].base_offset


def test_compact_only_policy_does_not_delete_by_retention(open_log) -> None:
    log = open_log({"segment.bytes": "1024", "retention.bytes": "100", "cleanup.policy": "compact"})
    for _ in range(30):  # keyed: a compacted log refuses records without a key
        log.append_as_leader(make_batch([b"x" * 100], keys=[b"k"], timestamp=START_MS), 0)
    assert log.apply_retention(START_MS + 10 * DAY_MS) == 0


def test_retention_spares_segments_above_the_high_watermark(open_log) -> None:
    log = open_log({"segment.bytes": "1024", "retention.ms": "1"})
    log.auto_advance_high_watermark = False
    fill(log, 30, START_MS)
    log.update_high_watermark(0)
    assert log.apply_retention(START_MS + DAY_MS) == 0


def test_deleted_segments_are_removed_after_the_file_delete_delay(open_log, clock, tmp_path) -> None:
    from broker_nodes.storage.deletion_queue import FileDeletionQueue

    queue = FileDeletionQueue()
    log = open_log({"segment.bytes": "1024", "retention.ms": "1", "file.delete.delay.ms": "60000"}, deletion_queue=queue)
    fill(log, 30, START_MS)
    clock.advance(DAY_MS)
    assert log.apply_retention(clock.milliseconds()) > 0
    pending = [name for name in (tmp_path / "orders-0").iterdir() if name.name.endswith(".deleted")]
    assert pending
    assert queue.delete_due(clock.milliseconds() + 59_999) == 0
    assert queue.delete_due(clock.milliseconds() + 60_000) > 0
    assert not any(name.name.endswith(".deleted") for name in (tmp_path / "orders-0").iterdir())


def test_an_empty_cleanup_policy_neither_deletes_nor_compacts(open_log, clock) -> None:
    # Kafka 4.0 (KIP-1030): cleanup.policy="" keeps every record until delete_records moves the log start.
    from broker_nodes.storage.cleaner import LogCleaner

    log = open_log({"segment.bytes": "1024", "retention.ms": "1", "retention.bytes": "100", "cleanup.policy": ""})
    assert (log.config.deletes, log.config.compacts) == (False, False)
    for _ in range(30):  # the same key throughout: compaction would keep one record
        log.append_as_leader(make_batch([b"x" * 100], keys=[b"k"], timestamp=START_MS), 0)
    log.append_as_leader(make_batch([b"no key"], timestamp=START_MS), 0)  # no key required, unlike compact
    assert log.apply_retention(START_MS + 10 * DAY_MS) == 0
    assert LogCleaner(clock).clean(log, clock.milliseconds(), force=True) is None
    assert len(read_all(log)) == 31
    log.increase_log_start_offset(20)  # delete_records still removes records below an offset
    log.apply_retention(START_MS + 10 * DAY_MS)
    assert log.log_start_offset == 20 and [offset for offset, *_ in read_all(log)] == list(range(20, 31))
