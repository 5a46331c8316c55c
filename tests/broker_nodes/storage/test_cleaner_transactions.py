"""Compaction of transactional logs as Kafka's LogCleaner: aborted batches go, markers after their horizon."""

from __future__ import annotations

import os

import pytest

from broker_nodes.storage.cleaner import LogCleaner
from broker_nodes.storage.log import PartitionLog
from broker_nodes.storage.segment import LogSegment
from log_formats.log_files import SWAP_SUFFIX
from tests.broker_nodes.storage.conftest import make_batch, read_all
from tests.broker_nodes.storage.test_transactions import LEADER_EPOCH, committed_values, marker, txn_batch

RETENTION_MS = 60_000
CONFIG = {"cleanup.policy": "compact", "segment.bytes": "1024", "file.delete.delay.ms": "0", "delete.retention.ms": str(RETENTION_MS)}
FILLER = b"." * 100


def write_transactions(log: PartitionLog) -> None:
    """Producer 1 commits, producer 2 aborts then commits (same keys), producer 3 aborts its only batch; a tail rolls segments."""
    log.append_as_leader(txn_batch(1, 0, [b"c1" + FILLER, b"c2" + FILLER], keys=[b"k1", b"k2"]), LEADER_EPOCH)
    marker(log, 1, commit=True)
    log.append_as_leader(txn_batch(2, 0, [b"a1" + FILLER], keys=[b"k1"]), LEADER_EPOCH)
    log.append_as_leader(txn_batch(2, 1, [b"a2" + FILLER], keys=[b"k3"]), LEADER_EPOCH)
    marker(log, 2, commit=False)
    log.append_as_leader(txn_batch(3, 0, [b"a3" + FILLER], keys=[b"k4"]), LEADER_EPOCH)
    marker(log, 3, commit=False)
    log.append_as_leader(txn_batch(2, 0, [b"c3" + FILLER], keys=[b"k5"], epoch=1), LEADER_EPOCH)
    marker(log, 2, commit=True, epoch=1)
    for number in range(8):
        log.append_as_leader(make_batch([b"tail-%d" % number + FILLER], keys=[b"tail-%d" % number]), LEADER_EPOCH)


def uncommitted_values(log: PartitionLog) -> list[bytes | None]:
    return [value for _, _, value in read_all(log)]


def markers(log: PartitionLog) -> list[tuple[int, int]]:
    """(offset, producer id) of every control batch in the log."""
    return [(header.base_offset, header.producer_id) for segment in log.segments for _, header in segment.iter_headers() if header.is_control]


def aborted_producers(log: PartitionLog) -> list[int]:
    return [entry.producer_id for entry in log.aborted_transactions(0, log.log_end_offset)]


def test_aborted_batches_go_and_readers_at_both_levels_see_the_committed_records(open_log, clock) -> None:
    log = open_log(CONFIG)
    write_transactions(log)
    committed = committed_values(log)
    assert b"a1" + FILLER in uncommitted_values(log) and b"a1" + FILLER not in committed
    result = LogCleaner(clock).clean(log, clock.milliseconds(), force=True)
    assert result is not None and result.records_removed == 3  # a1, a2 and a3 (whose batch stays, emptied)
    assert committed_values(log) == committed
    assert uncommitted_values(log) == committed  # nothing aborted is left for a read_uncommitted reader either
    assert len(markers(log)) == 4  # every marker stays until its horizon
    assert aborted_producers(log) == [2, 3]
    # Producer 3's only batch stays, emptied, so its sequence survives; so does its marker.
    kept = [header for segment in log.segments for _, header in segment.iter_headers() if header.producer_id == 3 and not header.is_control]
    assert [header.records_count for header in kept] == [0]


def test_markers_of_transactions_without_batches_vanish_after_the_delete_horizon(open_log, clock) -> None:
    log = open_log(CONFIG)
    write_transactions(log)
    committed = committed_values(log)
    all_markers = markers(log)
    cleaner = LogCleaner(clock)
    assert cleaner.clean(log, clock.milliseconds(), force=True) is not None
    clock.advance(RETENTION_MS - 1)
    cleaner.clean(log, clock.milliseconds(), force=True)
    assert markers(log) == all_markers
    clock.advance(1)
    # Due without force: the markers' horizon has passed.
    result = cleaner.clean(log, clock.milliseconds())
    assert result is not None
    aborted_marker_of_2 = all_markers[1]
    assert aborted_marker_of_2 not in markers(log)
    # Kept: markers of transactions whose batches remain (producer 1, producer 2's commit, producer 3's emptied batch).
    assert markers(log) == [all_markers[0], all_markers[2], all_markers[3]]
    # The removed marker's .txnindex entry went with it: producer 2's later committed batch is read.
    assert aborted_producers(log) == [3]
    assert committed_values(log) == committed
    assert b"c3" + FILLER in committed
    assert uncommitted_values(log) == committed
    # Nothing more to do until something changes.
    assert cleaner.clean(log, clock.milliseconds()) is None


@pytest.mark.parametrize("crash_after_commit", [True, False])
def test_a_crash_during_the_swap_recovers_the_log_and_its_txn_index(open_log, clock, monkeypatch, crash_after_commit: bool) -> None:
    log = open_log(CONFIG)
    write_transactions(log)
    committed = committed_values(log)
    cleaner = LogCleaner(clock)
    cleaner.clean(log, clock.milliseconds(), force=True)
    clock.advance(RETENTION_MS)
    directory = log.directory
    active_base = log.segments[-1].base_offset

    def crash(segment: LogSegment) -> list:
        if crash_after_commit:
            assert any(name.endswith(".txnindex" + SWAP_SUFFIX) for name in os.listdir(directory))
        raise OSError("killed")

    if crash_after_commit:
        monkeypatch.setattr(LogSegment, "rename_to_deleted", crash)
    else:
        monkeypatch.setattr(os, "rename", lambda *args: (_ for _ in ()).throw(OSError("killed")))
    with pytest.raises(OSError, match="killed"):
        cleaner.clean(log, clock.milliseconds(), force=True)
    monkeypatch.undo()
    # Recovery scans only the active segment: the compacted one keeps the .txnindex the swap left.
    reopened = open_log(CONFIG, clean_shutdown=False, recovery_point=active_base)
    assert reopened.recovery.txn_index_rebuild_from == active_base
    assert not any(name.endswith((".cleaned", SWAP_SUFFIX)) for name in os.listdir(directory))
    assert committed_values(reopened) == committed
    assert aborted_producers(reopened) == ([3] if crash_after_commit else [2, 3])
    assert len(markers(reopened)) == (3 if crash_after_commit else 4)
