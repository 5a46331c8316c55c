"""Fixtures and builders for storage tests: a manual clock, a descriptor cache, logs and batches."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from broker_nodes.clock import ManualClock
from broker_nodes.storage.deletion_queue import FileDeletionQueue
from broker_nodes.storage.file_cache import FileHandleCache
from broker_nodes.storage.log import PartitionLog
from broker_nodes.storage.log_config import LogConfig
from weir.records import COMPRESSION_NONE, RecordBatchBuilder, iter_records

START_MS = 1_700_000_000_000


def make_batch(
    values: Sequence[bytes | None],
    *,
    keys: Sequence[bytes | None] | None = None,
    timestamp: int = START_MS,
    codec: int = COMPRESSION_NONE,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """One batch of records with the given values (and keys), all stamped ``timestamp``."""
    builder = RecordBatchBuilder(codec, producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence)
    for index, value in enumerate(values):
        builder.append(timestamp, keys[index] if keys is not None else None, value)
    return builder.build()


def read_all(log: PartitionLog, start: int | None = None) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record readable from ``start`` (default log start) to the high watermark."""
    offset = log.log_start_offset if start is None else start
    result = []
    for _ in range(10_000):
        fetched = log.read(offset, 1 << 20)
        if not fetched.records:
            return result
        records = list(iter_records(fetched.records, offset))
        for record in records:
            result.append((record.offset, record.key, record.value))
        offset = records[-1].offset + 1 if records else offset + 1
        last_batch_end = _last_batch_next_offset(fetched.records)
        offset = max(offset, last_batch_end)
    raise AssertionError("read_all did not reach the end of the log")


def _last_batch_next_offset(data: bytes) -> int:
    from weir.records import iter_batch_positions

    next_offset = 0
    for _, header in iter_batch_positions(data):
        next_offset = header.next_offset
    return next_offset


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START_MS)


@pytest.fixture
def file_cache() -> Iterator[FileHandleCache]:
    cache = FileHandleCache(32)
    yield cache
    cache.close_all()


@pytest.fixture
def open_log(tmp_path: Path, clock: ManualClock, file_cache: FileHandleCache) -> Iterator[Callable[..., PartitionLog]]:
    """``open_log(overrides={...}, clean_shutdown=True, directory=...)`` opens a PartitionLog; all closed after the test."""
    opened: list[PartitionLog] = []

    def factory(
        overrides: dict[str, str] | None = None,
        *,
        clean_shutdown: bool = True,
        directory: Path | None = None,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        deletion_queue: FileDeletionQueue | None = None,
    ) -> PartitionLog:
        log = PartitionLog.open(
            directory or tmp_path / "orders-0",
            LogConfig.from_overrides(overrides or {}),
            clock=clock,
            file_cache=file_cache,
            deletion_queue=deletion_queue,
            clean_shutdown=clean_shutdown,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
        )
        opened.append(log)
        return log

    yield factory
    for log in opened:
        if not log.closed:
            log.close()
