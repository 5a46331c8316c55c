from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_nodes.clock import ManualClock
from broker_nodes.storage.file_names import CLEAN_SHUTDOWN_MARKER, LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT
from broker_nodes.storage.log_config import LogConfig
from broker_nodes.storage.log_manager import LogManager
from tests.broker_nodes.storage.conftest import make_batch, read_all
from weir.records import iter_records

SHARED_MEMORY = "/dev/shm"  # tmpfs on Linux

DAY_MS = 24 * 3600 * 1000


def start(data_dir: Path, clock: ManualClock, configs: dict | None = None, **options: object) -> LogManager:
    manager = LogManager(data_dir, clock=clock, **options)  # type: ignore[arg-type]
    manager.startup(configs or {})
    return manager


def test_clean_restart_reopens_every_partition_without_recovery(tmp_path: Path, clock: ManualClock) -> None:
    manager = start(tmp_path, clock)
    for partition in range(3):
        log = manager.get_or_create_log("orders", partition, LogConfig.default())
        for _ in range(partition + 1):
            log.append_as_leader(make_batch([b"v"]), 0)
    manager.shutdown()
    assert (tmp_path / CLEAN_SHUTDOWN_MARKER).exists()
    manager = LogManager(tmp_path, clock=clock)
    report = manager.startup({})
    assert (report.partitions, report.recovered_partitions, report.truncated_bytes) == (3, 0, 0)
    assert not (tmp_path / CLEAN_SHUTDOWN_MARKER).exists()
    assert [manager.get_log("orders", partition).log_end_offset for partition in range(3)] == [1, 2, 3]
    manager.shutdown()


def test_unclean_restart_recovers_and_reports(tmp_path: Path, clock: ManualClock) -> None:
    manager = start(tmp_path, clock)
    log = manager.get_or_create_log("orders", 0, LogConfig.default())
    for _ in range(5):
        log.append_as_leader(make_batch([b"value"]), 0)
    segment_path = log.segments[-1].log_path
    # Simulate a crash: no shutdown, and a torn last batch.
    os.truncate(segment_path, segment_path.stat().st_size - 3)
    manager.file_cache.close_all()
    manager = LogManager(tmp_path, clock=clock)
    report = manager.startup({})
    assert report.recovered_partitions == 1
    assert report.truncated_bytes == len(make_batch([b"value"])) - 3
    assert any("dropped" in detail for detail in report.details)
    assert manager.get_log("orders", 0).log_end_offset == 4
    manager.shutdown()


def test_startup_ignores_foreign_files_and_directories(tmp_path: Path, clock: ManualClock) -> None:
    (tmp_path / "server-state").mkdir(parents=True)
    (tmp_path / "meta.properties").write_text("node.id=1\n")
    manager = start(tmp_path, clock)
    assert manager.logs() == []
    manager.shutdown()
    assert (tmp_path / "meta.properties").exists()


def test_get_or_create_log_is_idempotent(tmp_path: Path, clock: ManualClock) -> None:
    manager = start(tmp_path, clock)
    first = manager.get_or_create_log("orders", 0, LogConfig.default())
    assert manager.get_or_create_log("orders", 0, LogConfig.default()) is first
    manager.shutdown()


def test_delete_log_removes_the_partition_for_good(tmp_path: Path, clock: ManualClock) -> None:
    manager = start(tmp_path, clock)
    manager.get_or_create_log("orders", 0, LogConfig.default()).append_as_leader(make_batch([b"v"]), 0)
    manager.delete_log("orders", 0)
    assert manager.get_log("orders", 0) is None
    assert not (tmp_path / "orders-0").exists()
    manager.shutdown()
    manager = start(tmp_path, clock)
    assert manager.get_log("orders", 0) is None
    manager.shutdown()


def test_maintenance_applies_retention_and_writes_checkpoints(tmp_path: Path, clock: ManualClock) -> None:
    config = LogConfig.from_overrides({"segment.bytes": "1024", "retention.ms": str(DAY_MS), "file.delete.delay.ms": "0"})
    manager = start(tmp_path, clock)
    log = manager.get_or_create_log("orders", 0, config)
    for _ in range(30):
        log.append_as_leader(make_batch([b"x" * 100]), 0)
    clock.advance(DAY_MS + 1)
    manager.run_maintenance()
    assert log.log_start_offset > 0
    text = (tmp_path / LOG_START_OFFSET_CHECKPOINT).read_text().splitlines()
    assert text[:2] == ["0", "1"] and text[2] == f"orders 0 {log.log_start_offset}"
    assert (tmp_path / RECOVERY_POINT_CHECKPOINT).exists()
    manager.shutdown()
    manager = start(tmp_path, clock, {"orders": config})
    assert manager.get_log("orders", 0).log_start_offset == log.log_start_offset
    manager.shutdown()


def test_maintenance_compacts_compacted_topics(tmp_path: Path, clock: ManualClock) -> None:
    config = LogConfig.from_overrides({"segment.bytes": "1024", "cleanup.policy": "compact", "file.delete.delay.ms": "0"})
    manager = start(tmp_path, clock)
    log = manager.get_or_create_log("profiles", 0, config)
    for number in range(60):
        log.append_as_leader(make_batch([b"v%d" % number + b"." * 40], keys=[b"user-%d" % (number % 3)]), 0)
    size_before = log.size_in_bytes
    manager.run_maintenance()
    assert log.size_in_bytes < size_before
    assert {key for _, key, _ in read_all(log)} == {b"user-0", b"user-1", b"user-2"}
    manager.shutdown()


def test_flush_ms_flushes_on_maintenance(tmp_path: Path, clock: ManualClock) -> None:
    config = LogConfig.from_overrides({"flush.ms": "1000"})
    manager = start(tmp_path, clock)
    log = manager.get_or_create_log("orders", 0, config)
    log.append_as_leader(make_batch([b"v"]), 0)
    manager.run_maintenance()
    assert log.recovery_point == 0
    clock.advance(1000)
    manager.run_maintenance()
    assert log.recovery_point == 1
    manager.shutdown()


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def memory_path(tmp_path: Path) -> Iterator[Path]:
    """A directory in memory (tmpfs) when the machine has one, else ``tmp_path``: the 20,000 file
    creations and fsyncs of 2,000 partitions took 76 s on a busy disk, and disk speed is not what
    the test checks (descriptors are opened and closed the same on tmpfs)."""
    if not os.path.isdir(SHARED_MEMORY):
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir=SHARED_MEMORY, prefix="weir-test-") as directory:
        yield Path(directory)


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to count descriptors")
def test_thousands_of_partitions_use_a_bounded_number_of_descriptors(memory_path: Path, clock: ManualClock) -> None:
    baseline = _open_descriptors()
    manager = start(memory_path, clock, max_open_files=64)
    config = LogConfig.default()
    batch = make_batch([b"value"])
    for partition in range(2000):
        manager.get_or_create_log("wide", partition, config).append_as_leader(batch, 0)
        if partition % 250 == 0:
            assert _open_descriptors() - baseline <= 64 + 8
    assert _open_descriptors() - baseline <= 64 + 8
    for partition in range(0, 2000, 97):
        assert [record.value for record in iter_records(manager.get_log("wide", partition).read(0, 1000).records)] == [b"value"]
    manager.shutdown()
    assert _open_descriptors() - baseline <= 8
    manager = LogManager(memory_path, clock=clock, max_open_files=64)
    report = manager.startup({})
    assert report.partitions == 2000
    assert _open_descriptors() - baseline <= 64 + 8
    manager.shutdown()


def checkpoint(path: Path) -> dict[tuple[str, int], int]:
    entries = path.read_text().splitlines()[2:]
    return {(topic, int(partition)): int(offset) for topic, partition, offset in (line.split() for line in entries)}


def test_checkpoints_follow_every_change_and_an_unchanged_pass_reads_no_log(tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    manager = start(tmp_path, clock)
    log = manager.get_or_create_log("orders", 0, LogConfig.default())
    for _ in range(3):
        log.append_as_leader(make_batch([b"v"]), 0)
    manager.write_checkpoints()
    assert checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT) == {("orders", 0): 0}
    # Nothing changed: the pass reads no log's offsets (a 10,000-partition broker runs it every second).
    reads: list[int] = []
    logs = manager.logs
    monkeypatch.setattr(manager, "logs", lambda: reads.append(1) or logs())
    manager.write_checkpoints()
    assert reads == []
    log.flush()  # the recovery point moves
    manager.write_checkpoints()
    assert checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT) == {("orders", 0): 3}
    assert log.increase_log_start_offset(2)  # the log start moves (DeleteRecords)
    manager.write_checkpoints()
    assert checkpoint(tmp_path / LOG_START_OFFSET_CHECKPOINT) == {("orders", 0): 2}
    manager.get_or_create_log("orders", 1, LogConfig.default())  # a new log
    manager.write_checkpoints()
    assert set(checkpoint(tmp_path / LOG_START_OFFSET_CHECKPOINT)) == {("orders", 0), ("orders", 1)}
    manager.delete_log("orders", 0)  # a log removed
    manager.write_checkpoints()
    assert set(checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT)) == {("orders", 1)}
    log_one = manager.get_log("orders", 1)
    log_one.append_as_leader(make_batch([b"v"]), 0)
    log_one.flush()
    manager.write_checkpoints()
    assert checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT) == {("orders", 1): 1}
    log_one.truncate_to(0)  # a truncation below the recovery point moves it back
    manager.write_checkpoints()
    assert checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT) == {("orders", 1): 0}
    assert len(reads) == 6  # one pass per change, none between
    manager.shutdown()
