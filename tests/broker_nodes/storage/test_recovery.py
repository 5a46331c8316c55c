from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from log_formats.log_files import CLEANED_SUFFIX, SWAP_SUFFIX
from tests.broker_nodes.storage.conftest import make_batch, read_all

SMALL_SEGMENTS = {"segment.bytes": "1024", "index.interval.bytes": "100"}


def write_log(open_log, count: int = 40):
    log = open_log(SMALL_SEGMENTS)
    for number in range(count):
        log.append_as_leader(make_batch([b"value-%03d" % number]), 0)
    log.close()
    return log


def test_torn_tail_is_dropped_and_logged(open_log, caplog: pytest.LogCaptureFixture) -> None:
    log = write_log(open_log)
    active = log.segments[-1].log_path
    size = active.stat().st_size
    os.truncate(active, size - 7)
    with caplog.at_level(logging.WARNING, logger="broker_nodes.storage"):
        recovered = open_log(SMALL_SEGMENTS, clean_shutdown=False)
    assert recovered.log_end_offset == 39
    assert recovered.recovery.truncated_bytes == len(make_batch([b"value-039"])) - 7
    assert any(active.name in message and "dropped" in message for message in caplog.messages)
    assert [value for _, _, value in read_all(recovered)][-1] == b"value-038"


def test_flipped_byte_drops_that_batch_and_everything_after(open_log) -> None:
    log = write_log(open_log)
    first_segment = log.segments[0]
    batch_size = len(make_batch([b"value-000"]))
    with open(first_segment.log_path, "r+b") as file:
        file.seek(batch_size * 3 + 40)
        byte = file.read(1)
        file.seek(batch_size * 3 + 40)
        file.write(bytes([byte[0] ^ 0x55]))
    recovered = open_log(SMALL_SEGMENTS, clean_shutdown=False)
    assert recovered.log_end_offset == 3
    assert recovered.segment_count == 1
    assert [offset for offset, _, _ in read_all(recovered)] == [0, 1, 2]
    assert recovered.append_as_leader(make_batch([b"next"]), 0).first_offset == 3


def test_garbage_appended_after_the_last_batch_is_dropped(open_log) -> None:
    log = write_log(open_log)
    with open(log.segments[-1].log_path, "ab") as file:
        file.write(b"\x00" * 100 + b"\xde\xad\xbe\xef" * 10)
    recovered = open_log(SMALL_SEGMENTS, clean_shutdown=False)
    assert recovered.log_end_offset == 40
    assert recovered.recovery.truncated_bytes == 140


def test_deleted_index_is_rebuilt_after_clean_shutdown(open_log) -> None:
    log = write_log(open_log, count=200)
    segment = log.segments[1]
    entries_before = segment.offset_index.entry_count
    os.unlink(segment.offset_index.path)
    recovered = open_log(SMALL_SEGMENTS, clean_shutdown=True)
    assert recovered.recovery.rebuilt_indexes == 1
    assert recovered.segments[1].offset_index.entry_count == entries_before > 0
    for offset in range(0, 200, 7):
        fetched = recovered.read(offset, 1)
        assert fetched.records[:8] == offset.to_bytes(8, "big")


def test_corrupt_index_is_rebuilt(open_log) -> None:
    log = write_log(open_log, count=200)
    with open(log.segments[0].offset_index.path, "ab") as file:
        file.write(b"\x7f\xff")
    recovered = open_log(SMALL_SEGMENTS, clean_shutdown=True)
    assert recovered.recovery.rebuilt_indexes == 1
    assert [offset for offset, _, _ in read_all(recovered)] == list(range(200))


def test_index_files_without_their_log_are_deleted(open_log) -> None:
    log = write_log(open_log)
    directory = log.segments[-1].log_path.parent
    next_base = log.log_end_offset + 1000
    orphans = [directory / f"{next_base:020d}.index", directory / f"{next_base:020d}.timeindex"]
    for orphan in orphans:
        orphan.write_bytes(b"")
    recovered = open_log(SMALL_SEGMENTS, clean_shutdown=True)
    assert not any(orphan.exists() for orphan in orphans)
    assert [offset for offset, _, _ in read_all(recovered)] == list(range(40))


def test_clean_shutdown_skips_scanning(open_log) -> None:
    log = write_log(open_log)
    with open(log.segments[-1].log_path, "ab") as file:
        file.write(b"\x00" * 30)
    recovered = open_log(SMALL_SEGMENTS, clean_shutdown=True)
    assert not recovered.recovery.recovered
    assert recovered.recovery.truncated_bytes == 0


def test_recovery_starts_at_the_recovery_point_segment(open_log) -> None:
    log = write_log(open_log, count=200)
    # Damage an early segment that the recovery point says is already safe: it is not scanned.
    with open(log.segments[0].log_path, "r+b") as file:
        file.seek(30)
        file.write(b"\xff")
    late = log.segments[-2].base_offset
    recovered = open_log(SMALL_SEGMENTS, clean_shutdown=False, recovery_point=late)
    assert recovered.log_end_offset == 200
    assert recovered.recovery.truncated_bytes == 0


def test_committed_swap_is_completed_and_uncommitted_one_discarded(open_log, tmp_path: Path) -> None:
    log = write_log(open_log, count=100)
    directory = log.directory
    first = log.segments[0]
    replacement = make_batch([b"compacted"])
    # A committed swap of segment 0: its .log.swap exists.
    (directory / (first.log_path.name + SWAP_SUFFIX)).write_bytes(replacement)
    # An uncommitted swap of segment 1: only .cleaned files.
    second = log.segments[1]
    (directory / (second.log_path.name + CLEANED_SUFFIX)).write_bytes(b"partial")
    recovered = open_log(SMALL_SEGMENTS, clean_shutdown=True)
    assert not any(name.endswith((SWAP_SUFFIX, CLEANED_SUFFIX)) for name in os.listdir(directory))
    assert first.log_path.read_bytes() == replacement
    assert read_all(recovered)[0] == (0, None, b"compacted")
    assert recovered.log_end_offset == 100
