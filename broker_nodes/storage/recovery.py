"""Opening a partition directory: finish or discard interrupted work, then load and check segments.

Order of work, as in Kafka's LogLoader:

1. Remove temporary files, files awaiting deletion (``*.deleted``) and half-written cleaner
   output (``*.cleaned``). Complete committed swaps: a ``<base>.log.swap`` exists only after
   the cleaner finished writing and fsyncing the replacement, so it replaces the live files
   (a ``.txnindex.swap`` replaces the live ``.txnindex``, which stays when there is none);
   index ``.swap`` files without a log ``.swap`` belong to an uncommitted swap and go.
2. Load segments by the ``.log`` files present; remove orphan index files.
3. After a clean shutdown, only sanity-check each index (rebuild a missing or corrupt one).
   After an unclean one, scan every batch of every segment from the one holding the
   recovery point: check length, magic, CRC and offset order, rebuild the indexes, cut the
   log after the last valid batch and drop all later segments, logging what was dropped.
4. Aborted-transaction indexes (``.txnindex``) cannot be rebuilt from one segment alone: an
   entry needs the producers' open transactions when its ABORT marker was written. So the
   first segment whose index is missing, damaged or was scanned in step 3 is noted in
   ``PartitionRecovery.txn_index_rebuild_from``, the indexes of that segment and every later
   one are emptied, and the log refills them while it replays producer state from a snapshot
   at or below that segment (``PartitionLog._load_producer_state``).
"""

from __future__ import annotations

import bisect
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from broker_nodes.storage.file_cache import FileHandleCache
from broker_nodes.storage.file_names import TEMPORARY_SUFFIX
from broker_nodes.storage.log_config import LogConfig
from broker_nodes.storage.segment import LogSegment
from log_formats.log_files import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    parse_segment_file_name,
    segment_file_name,
)

logger = logging.getLogger(__name__)

_SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)


@dataclass
class PartitionRecovery:
    """What opening one partition directory did."""

    recovered: bool = False  # segments were scanned because the last shutdown was unclean
    truncated_bytes: int = 0
    rebuilt_indexes: int = 0
    details: list[str] = field(default_factory=list)
    # Base offset of the first segment whose .txnindex was emptied to be rebuilt; None when all are sound.
    txn_index_rebuild_from: int | None = None
    # (leader epoch, first offset) at each change of epoch in the scanned batches: the log re-assigns them,
    # as the leader-epoch checkpoint is not fsynced when an epoch begins (LeaderEpochCache).
    leader_epoch_starts: list[tuple[int, int]] = field(default_factory=list)


def _remove(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def list_partition_directory(directory: Path) -> list[str]:
    """The names in the partition directory ``directory``, which is created (empty) when missing.

    Opening a partition lists its directory this once and hands the names to every step
    below: a broker of 10,000 partitions restarted after kill -9 spent a third of its time in
    the four listings (and the mkdir) each partition's opening used to make.
    """
    try:
        return os.listdir(directory)
    except FileNotFoundError:
        directory.mkdir(parents=True, exist_ok=True)
        return []


def prepare_directory(directory: Path, names: list[str], file_cache: FileHandleCache, recovery: PartitionRecovery) -> list[str]:
    """Step 1 above: leave only live segment files and the partition's own checkpoints.

    ``names`` lists the directory; returns the names it holds afterwards.
    """
    changed = False
    for name in names:
        if name.endswith(TEMPORARY_SUFFIX) or name.endswith(DELETED_SUFFIX) or name.endswith(CLEANED_SUFFIX):
            _remove(directory / name)
            changed = True
    committed = {
        parsed[0]
        for name in names
        if name.endswith(SWAP_SUFFIX) and (parsed := parse_segment_file_name(name[: -len(SWAP_SUFFIX)])) is not None and parsed[1] == LOG_SUFFIX
    }
    for name in names:
        if not name.endswith(SWAP_SUFFIX):
            continue
        parsed = parse_segment_file_name(name[: -len(SWAP_SUFFIX)])
        if parsed is None or parsed[0] not in committed:
            _remove(directory / name)
            changed = True
    for base_offset in sorted(committed):
        for suffix in (*_SEGMENT_SUFFIXES, TXN_INDEX_SUFFIX):
            live = directory / segment_file_name(base_offset, suffix)
            swap = live.with_name(live.name + SWAP_SUFFIX)
            file_cache.invalidate(live)
            if swap.exists():
                os.replace(swap, live)
            elif suffix != TXN_INDEX_SUFFIX:  # no .txnindex.swap: the cleaner kept the live index
                # The replacement's index was not written; the stale one must not be used.
                _remove(live)
        message = f"{directory.name}: completed an interrupted compaction swap of segment {base_offset}"
        logger.warning(message)
        recovery.details.append(message)
    # Leftovers are rare (a crash during a roll, a deletion or a compaction): list again then.
    return os.listdir(directory) if changed or committed else names


def load_segments(
    directory: Path,
    names: list[str],
    config: LogConfig,
    file_cache: FileHandleCache,
    *,
    now_ms: int,
    log_start_offset: int,
    recovery_point: int,
    clean_shutdown: bool,
    recovery: PartitionRecovery,
) -> list[LogSegment]:
    """Steps 2 and 3 above, for the directory holding ``names``; returns the segments in offset order (at least one)."""
    log_bases = _log_bases_without_orphan_indexes(directory, names)

    def open_segment(base_offset: int) -> LogSegment:
        return LogSegment(
            directory,
            base_offset,
            file_cache,
            index_max_bytes=config.segment_index_bytes,
            index_interval_bytes=config.index_interval_bytes,
            created_ms=now_ms,
        )

    segments = [open_segment(base_offset) for base_offset in sorted(log_bases)]
    if not segments:
        return [
            LogSegment.create(
                directory,
                log_start_offset,
                file_cache,
                index_max_bytes=config.segment_index_bytes,
                index_interval_bytes=config.index_interval_bytes,
                created_ms=now_ms,
            )
        ]
    first_to_scan = len(segments)
    if not clean_shutdown:
        recovery.recovered = True
        bases = [segment.base_offset for segment in segments]
        first_to_scan = max(0, bisect.bisect_right(bases, recovery_point) - 1)
    for segment in segments[:first_to_scan]:
        problem = segment.sanity_check_indexes()
        if problem is not None:
            segment.rebuild_indexes()
            _note(recovery, f"{directory.name}: rebuilt the indexes of segment {segment.base_offset}: {problem}")
            recovery.rebuilt_indexes += 1
    kept = _recover_from(directory, segments, first_to_scan, recovery)
    _prepare_txn_index_rebuild(directory, kept, first_to_scan, recovery)
    # The active segment keeps receiving appends; segment.ms counts from its first batch, as
    # in Kafka, not from this process's start.
    kept[-1].created_ms = _first_batch_time(kept[-1], now_ms)
    return kept


def _prepare_txn_index_rebuild(directory: Path, segments: list[LogSegment], first_scanned: int, recovery: PartitionRecovery) -> None:
    """Step 4 above: empty the ``.txnindex`` files from the first unsound (or scanned) segment on."""
    rebuild_index = min(first_scanned, len(segments))
    for index, segment in enumerate(segments[:rebuild_index]):
        problem = segment.txn_index.sanity_check()
        if problem is not None:
            _note(recovery, f"{directory.name}: rebuilding the aborted-transaction indexes from segment {segment.base_offset}: {problem}")
            rebuild_index = index
            break
    if rebuild_index >= len(segments):
        return
    recovery.txn_index_rebuild_from = segments[rebuild_index].base_offset
    for segment in segments[rebuild_index:]:
        segment.txn_index.create()


def _log_bases_without_orphan_indexes(directory: Path, names: list[str]) -> set[int]:
    """The base offsets of the log files among ``names``; index files without their log are deleted."""
    log_bases: set[int] = set()
    index_files: list[tuple[int, str]] = []
    for name in names:
        parsed = parse_segment_file_name(name)
        if parsed is None:
            continue
        if parsed[1] == LOG_SUFFIX:
            log_bases.add(parsed[0])
        else:
            index_files.append((parsed[0], name))
    for base_offset, name in index_files:
        if base_offset not in log_bases:
            _remove(directory / name)
    return log_bases


def _recover_from(directory: Path, segments: list[LogSegment], first_to_scan: int, recovery: PartitionRecovery) -> list[LogSegment]:
    """Scan ``segments[first_to_scan:]`` batch by batch; the segments kept (those after the first corrupt one are deleted)."""
    kept = segments[:first_to_scan]
    for index in range(first_to_scan, len(segments)):
        segment = segments[index]
        problem = segment.sanity_check_indexes()
        if problem is not None:
            recovery.rebuilt_indexes += 1
            _note(recovery, f"{directory.name}: rebuilt the indexes of segment {segment.base_offset}: {problem}")
        expected = kept[-1].next_offset if kept else None
        result = segment.recover(expected_start_offset=expected)
        recovery.leader_epoch_starts.extend(result.epoch_starts)
        kept.append(segment)
        if result.truncated_bytes == 0:
            continue
        recovery.truncated_bytes += result.truncated_bytes
        _note(
            recovery,
            f"{directory.name}: dropped {result.truncated_bytes} bytes of {segment.log_path.name} from position {result.valid_bytes}: {result.reason}",
        )
        _delete_after_corrupt(directory, segments[index + 1 :], segment.base_offset, recovery)
        break
    return kept


def _delete_after_corrupt(directory: Path, later: list[LogSegment], corrupt_base_offset: int, recovery: PartitionRecovery) -> None:
    """Delete the segments after a truncated one: their offsets no longer follow the log's end."""
    for segment in later:
        recovery.truncated_bytes += segment.size
        _note(
            recovery,
            f"{directory.name}: dropped {segment.size} bytes of {segment.log_path.name} from position 0: it follows the corrupt segment {corrupt_base_offset}",
        )
        segment.close()
        for path in [*segment.file_paths(), segment.txn_index.path]:
            _remove(path)


def _first_batch_time(segment: LogSegment, now_ms: int) -> int:
    for _, header in segment.iter_headers(0):
        return header.max_timestamp if header.max_timestamp >= 0 else now_ms
    return now_ms


def _note(recovery: PartitionRecovery, message: str) -> None:
    logger.warning(message)
    recovery.details.append(message)
