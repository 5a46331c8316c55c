"""A follower's log following its leader's start: truncate_fully_and_start_at and increase_log_start_offset.

Crashes are simulated by making one step of the truncation fail with an I/O error, dropping the
log object without a clean shutdown, and reopening the directory as the broker would after a
crash (unclean, with the checkpoints written before the truncation).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from broker_nodes.storage.errors import LogDirectoryError, OffsetOutOfRangeError
from broker_nodes.storage.leader_epoch_cache import LeaderEpochCache
from broker_nodes.storage.log import PartitionLog
from broker_nodes.storage.segment import LogSegment
from log_formats.log_files import DELETED_SUFFIX, LOG_SUFFIX
from tests.broker_nodes.storage.conftest import make_batch, read_all
from weir.records import assign_offsets, read_batch_header

SMALL_SEGMENTS = {"segment.bytes": "1024", "index.interval.bytes": "100"}
PRODUCER_ID = 7


def write_log(open_log, count: int = 30) -> PartitionLog:
    """``count`` idempotent single-record batches over several segments, in epochs 1 and then 2."""
    log = open_log(SMALL_SEGMENTS)
    for number in range(count):
        batch = make_batch([b"value-%03d" % number], producer_id=PRODUCER_ID, producer_epoch=0, base_sequence=number)
        log.append_as_leader(batch, 1 if number < count // 2 else 2)
    log.roll()  # writes a producer snapshot, so that there is one to remove
    return log


def leader_batch(base_offset: int, leader_epoch: int, values: list[bytes]) -> bytes:
    """A batch as a leader stores it: offsets and epoch assigned."""
    buffer = bytearray(make_batch(values))
    assign_offsets(buffer, 0, base_offset, leader_epoch)
    return bytes(buffer)


def file_names(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


def assert_valid(log: PartitionLog) -> None:
    """The invariants of a usable log: offsets in order, every stored record readable, epochs in range."""
    assert log.log_start_offset <= log.high_watermark <= log.log_end_offset
    assert log.recovery_point <= log.log_end_offset
    offsets = [offset for offset, _, _ in read_all(log)]
    assert offsets == list(range(log.log_start_offset, log.log_end_offset))
    assert all(log.log_start_offset <= start <= log.log_end_offset for _, start in log.leader_epoch_cache.entries)
    assert not [name for name in file_names(log.directory) if name.endswith(DELETED_SUFFIX)]


def test_truncate_fully_leaves_an_empty_log_at_the_offset(open_log) -> None:
    log = write_log(open_log)
    assert log.segment_count > 2 and log.producer_state(PRODUCER_ID) is not None
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark, log.recovery_point) == (100, 100, 100, 100)
    assert [segment.base_offset for segment in log.segments] == [100]
    assert log.leader_epoch_cache.entries == []
    assert log.producer_state(PRODUCER_ID) is None
    assert [name for name in file_names(log.directory) if name.endswith(LOG_SUFFIX)] == ["00000000000000000100.log"]
    assert not [name for name in file_names(log.directory) if name.endswith(".snapshot")]
    assert log.read(100, 1 << 20).records == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(99, 1 << 20)


def test_after_truncating_fully_a_follower_appends_from_the_offset_and_survives_reopening(open_log) -> None:
    log = write_log(open_log)
    log.truncate_fully_and_start_at(100)
    info = log.append_as_follower(leader_batch(100, 4, [b"a", b"b"]) + leader_batch(102, 4, [b"c"]))
    assert (info.first_offset, info.last_offset) == (100, 102)
    log.update_high_watermark(103)
    assert log.leader_epoch_cache.entries == [(4, 100)]
    log.flush()
    log.write_producer_snapshot()
    log.close()
    # The data directory's log-start checkpoint may still say 0: the segment's base wins.
    reopened = open_log(SMALL_SEGMENTS, clean_shutdown=True, log_start_offset=0, recovery_point=103)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (100, 103)
    assert [value for _, _, value in read_all(reopened)] == [b"a", b"b", b"c"]
    assert reopened.leader_epoch_cache.entries == [(4, 100)]
    assert reopened.append_as_leader(make_batch([b"d"]), 5).first_offset == 103


def test_truncate_fully_may_restart_below_the_old_log_start(open_log) -> None:
    log = write_log(open_log)
    log.truncate_fully_and_start_at(100)
    log.truncate_fully_and_start_at(100)  # the same base offset again: the old files are renamed first
    log.truncate_fully_and_start_at(5)
    assert (log.log_start_offset, log.log_end_offset) == (5, 5)
    assert log.append_as_leader(make_batch([b"x"]), 1).first_offset == 5
    assert_valid(log)


def test_truncate_fully_rejects_a_negative_offset(open_log) -> None:
    log = write_log(open_log, count=3)
    with pytest.raises(ValueError, match="negative offset -1"):
        log.truncate_fully_and_start_at(-1)
    assert log.log_end_offset == 3


def _fail_on_second_rename(monkeypatch: pytest.MonkeyPatch) -> None:
    original = LogSegment.rename_to_deleted
    calls = []

    def rename_to_deleted(segment: LogSegment) -> list[Path]:
        calls.append(segment.base_offset)
        if len(calls) == 2:
            raise OSError(5, "simulated crash while renaming segments")
        return original(segment)

    monkeypatch.setattr(LogSegment, "rename_to_deleted", rename_to_deleted)


def _fail_creating_the_new_segment(monkeypatch: pytest.MonkeyPatch) -> None:
    def create(*_args: object, **_kwargs: object) -> LogSegment:
        raise OSError(5, "simulated crash before the new segment exists")

    monkeypatch.setattr(LogSegment, "create", create)


def _fail_clearing_the_epochs(monkeypatch: pytest.MonkeyPatch) -> None:
    def clear(_cache: LeaderEpochCache) -> None:
        raise OSError(5, "simulated crash before the epoch checkpoint is rewritten")

    monkeypatch.setattr(LeaderEpochCache, "clear", clear)


# Each simulated crash point and the log the reopened directory must hold: (log start, log end)
# given the segment base offsets before the truncation.
CRASH_POINTS = {
    # One old segment renamed, the rest still there: the newer segments form the log.
    "renaming": (_fail_on_second_rename, lambda bases: (bases[1], 30)),
    # Every old segment gone, the new one not yet made: an empty log at the checkpointed start.
    "creating": (_fail_creating_the_new_segment, lambda bases: (0, 0)),
    # The new segment exists, the epoch checkpoint still lists the old epochs.
    "epochs": (_fail_clearing_the_epochs, lambda bases: (100, 100)),
}


@pytest.mark.parametrize("crash_point", list(CRASH_POINTS))
def test_a_crash_in_the_middle_of_truncating_fully_reopens_as_a_valid_log(open_log, crash_point: str, monkeypatch: pytest.MonkeyPatch) -> None:
    crash, expected_range = CRASH_POINTS[crash_point]
    log = write_log(open_log)
    bases = [segment.base_offset for segment in log.segments]
    assert log.leader_epoch_cache.entries == [(1, 0), (2, 15)]
    recovery_point = log.recovery_point
    with monkeypatch.context() as patch:
        crash(patch)
        with pytest.raises(LogDirectoryError, match="simulated crash"):
            log.truncate_fully_and_start_at(100)
    log.close()  # the process dies: descriptors go, nothing else is written

    reopened = open_log(SMALL_SEGMENTS, clean_shutdown=False, log_start_offset=0, recovery_point=recovery_point)
    assert (reopened.log_start_offset, reopened.log_end_offset) == expected_range(bases)
    assert_valid(reopened)
    # Producer state matches the reopened log: rebuilt from its batches, or empty without any.
    entry = reopened.producer_state(PRODUCER_ID)
    if reopened.log_end_offset > reopened.log_start_offset:
        assert entry is not None and entry.last_offset == 29
    else:
        assert entry is None
    # The follower meets the leader's log start again and finishes the job.
    reopened.truncate_fully_and_start_at(100)
    assert reopened.append_as_follower(leader_batch(100, 3, [b"after"])).first_offset == 100
    reopened.update_high_watermark(101)
    assert_valid(reopened)
    assert [value for _, _, value in read_all(reopened)] == [b"after"]
    assert reopened.leader_epoch_cache.entries == [(3, 100)]


def test_increase_log_start_offset_deletes_closed_segments_below_it(open_log) -> None:
    log = write_log(open_log)
    bases = [segment.base_offset for segment in log.segments]
    target = bases[2] + 1  # inside the third segment
    assert log.increase_log_start_offset(target)
    assert log.log_start_offset == target
    assert [segment.base_offset for segment in log.segments] == bases[2:]
    assert [offset for offset, _, _ in read_all(log)] == list(range(target, 30))
    with pytest.raises(OffsetOutOfRangeError):
        log.read(target - 1, 1 << 20)
    assert log.leader_epoch_cache.entries[0][1] == target
    assert not log.increase_log_start_offset(target)
    assert not log.increase_log_start_offset(3)


def test_increase_log_start_offset_stops_at_the_high_watermark(open_log) -> None:
    log = write_log(open_log)
    log.auto_advance_high_watermark = False
    log.update_high_watermark(20)
    log.append_as_leader(make_batch([b"not yet replicated"]), 2)
    assert log.increase_log_start_offset(25)
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (20, 20, 31)
    assert log.segments[0].base_offset <= 20 < log.segments[0].next_offset
    every_stored = log.read(20, 1 << 20, max_offset=log.log_end_offset).records
    assert read_batch_header(every_stored).base_offset == 20


def test_raised_log_start_survives_reopening_with_the_checkpointed_value(open_log) -> None:
    log = write_log(open_log)
    log.increase_log_start_offset(17)
    log.flush()
    log.write_producer_snapshot()
    log.close()
    reopened = open_log(SMALL_SEGMENTS, clean_shutdown=True, log_start_offset=17, recovery_point=30)
    assert reopened.log_start_offset == 17
    assert [offset for offset, _, _ in read_all(reopened)] == list(range(17, 30))
