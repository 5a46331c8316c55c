"""Opening a partition directory cheaply: one listing, indexes read on first use, no fsync before serving."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from broker_nodes.clock import ManualClock
from broker_nodes.storage.file_cache import FileHandleCache
from broker_nodes.storage.log_config import LogConfig
from broker_nodes.storage.log_manager import LogManager
from broker_nodes.storage.offset_index import OffsetIndex
from broker_nodes.storage.producer_state import ProducerStateManager
from broker_nodes.storage.transaction_index import AbortedTransaction, TransactionIndex
from tests.broker_nodes.storage.conftest import make_batch, read_all

INDEX_BYTES = 10 * 1024 * 1024


def idempotent(sequence: int) -> bytes:
    return make_batch([b"v" * 300], producer_id=7, producer_epoch=0, base_sequence=sequence)


def test_opening_a_partition_lists_its_directory_once(open_log, monkeypatch: pytest.MonkeyPatch) -> None:
    log = open_log({"segment.bytes": "1024"})
    for sequence in range(6):
        log.append_as_leader(idempotent(sequence), 0)  # rolls write producer snapshots
    assert log.segment_count > 1
    log.close()
    listed: list[str] = []
    real_listdir = os.listdir

    def counting_listdir(path: str | os.PathLike[str] = ".") -> list[str]:
        listed.append(os.fspath(path))
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", counting_listdir)
    reopened = open_log({"segment.bytes": "1024"}, clean_shutdown=False)
    assert listed == [os.fspath(log.directory)]
    assert reopened.log_end_offset == 6
    assert reopened.producer_state(7).last_sequence == 5


def test_a_missing_partition_directory_is_created_empty(open_log, tmp_path: Path) -> None:
    log = open_log(directory=tmp_path / "nested" / "orders-3", clean_shutdown=False)
    assert (log.log_start_offset, log.log_end_offset) == (0, 0)
    assert log.append_as_leader(make_batch([b"a"]), 0).first_offset == 0


def test_a_recovered_log_keeps_its_recovery_point_until_its_first_flush(open_log) -> None:
    log = open_log()
    for _ in range(3):
        log.append_as_leader(make_batch([b"a"]), 0)
    log.close()  # no flush: as after kill -9
    recovered = open_log(clean_shutdown=False, recovery_point=0)
    assert recovered.recovery.recovered
    assert (recovered.recovery_point, recovered.log_end_offset, recovered.flush_requested) == (0, 3, True)
    assert [value for _, _, value in read_all(recovered)] == [b"a"] * 3
    recovered.flush()
    assert (recovered.recovery_point, recovered.flush_requested) == (3, False)


def test_a_recovered_log_with_nothing_above_its_recovery_point_requests_no_flush(open_log) -> None:
    log = open_log()
    log.append_as_leader(make_batch([b"a"]), 0)
    log.flush()
    log.close()
    recovered = open_log(clean_shutdown=False, recovery_point=1)
    assert (recovered.recovery_point, recovered.flush_requested) == (1, False)


def test_the_first_maintenance_pass_flushes_logs_recovered_after_a_crash(tmp_path: Path, clock: ManualClock) -> None:
    manager = LogManager(tmp_path, clock=clock)
    manager.startup({})
    log = manager.get_or_create_log("orders", 0, LogConfig.default())  # flush.ms: never
    for _ in range(4):
        log.append_as_leader(make_batch([b"a"]), 0)
    manager.write_checkpoints()
    manager.file_cache.close_all()  # a crash: no shutdown
    restarted = LogManager(tmp_path, clock=clock)
    restarted.startup({})
    recovered = restarted.get_log("orders", 0)
    assert recovered is not None
    assert (recovered.recovery_point, recovered.log_end_offset) == (0, 4)
    restarted.run_maintenance()
    assert (recovered.recovery_point, recovered.flush_requested) == (4, False)
    restarted.shutdown()


def test_a_listing_given_to_the_producer_state_is_kept_current(tmp_path: Path) -> None:
    manager = ProducerStateManager(tmp_path, file_names=os.listdir(tmp_path))
    for offset in (10, 20, 30):
        manager.take_snapshot(offset)
    assert manager.snapshot_offsets() == ProducerStateManager(tmp_path).snapshot_offsets() == [20, 30]
    manager.delete_snapshots_above(25)
    assert manager.snapshot_offsets() == ProducerStateManager(tmp_path).snapshot_offsets() == [20]
    manager.truncate_fully()
    assert manager.snapshot_offsets() == ProducerStateManager(tmp_path).snapshot_offsets() == []


def test_an_index_reads_its_file_on_first_use_not_when_opened(tmp_path: Path) -> None:
    cache = FileHandleCache(4)
    path = tmp_path / "00000000000000000100.index"
    opened_early = OffsetIndex(path, 100, cache, INDEX_BYTES)  # the file does not exist yet
    writer = OffsetIndex(path, 100, cache, INDEX_BYTES)
    writer.append(105, 4096)
    writer.append(110, 8192)
    assert opened_early.entry_count == 2
    assert opened_early.lookup(107) == (105, 4096)
    opened_early.append(120, 12288)
    assert OffsetIndex(path, 100, cache, INDEX_BYTES).last_offset == 120
    cache.close_all()


def test_a_missing_index_reads_as_empty_but_fails_its_sanity_check(tmp_path: Path) -> None:
    cache = FileHandleCache(4)
    index = OffsetIndex(tmp_path / "00000000000000000000.index", 0, cache, INDEX_BYTES)
    assert (index.entry_count, index.lookup(50)) == (0, (0, 0))
    with pytest.raises(FileNotFoundError):
        index.sanity_check(log_size=0)
    cache.close_all()


def test_creating_a_transaction_index_empties_an_existing_one_or_makes_a_missing_one(tmp_path: Path) -> None:
    existing = TransactionIndex(tmp_path / "00000000000000000000.txnindex")
    existing.append(AbortedTransaction(producer_id=1, first_offset=0, last_offset=3, last_stable_offset=4))
    assert existing.path.stat().st_size > 0
    existing.create()
    assert (existing.path.stat().st_size, TransactionIndex(existing.path).entries) == (0, ())
    missing = TransactionIndex(tmp_path / "00000000000000000050.txnindex")
    missing.create()
    assert missing.path.exists() and missing.entries == ()
