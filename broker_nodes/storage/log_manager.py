"""All partition logs of one broker data directory: startup recovery, maintenance, shutdown."""

from __future__ import annotations

import functools
import logging
import os
import shutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from broker_nodes.clock import Clock
from broker_nodes.storage.atomic_files import fsync_directory, write_atomically
from broker_nodes.storage.checkpoints import OffsetCheckpointFile
from broker_nodes.storage.cleaner import LogCleaner
from broker_nodes.storage.deletion_queue import FileDeletionQueue
from broker_nodes.storage.errors import CorruptCheckpointError, LogDirectoryError
from broker_nodes.storage.file_cache import FileHandleCache
from broker_nodes.storage.file_names import (
    CLEAN_SHUTDOWN_MARKER,
    CLEANER_OFFSET_CHECKPOINT,
    DELETED_DIRECTORY_PATTERN,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    deleted_directory_name,
)
from broker_nodes.storage.log import PartitionLog
from broker_nodes.storage.log_config import LogConfig
from log_formats.log_files import parse_partition_directory_name, partition_directory_name

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class RecoveryReport:
    """What ``LogManager.startup`` found and repaired."""

    partitions: int
    recovered_partitions: int
    truncated_bytes: int
    rebuilt_indexes: int
    details: list[str] = field(default_factory=list)


class LogManager:
    """Owns every ``<topic>-<partition>/`` directory under ``data_dir``.

    Data directory layout: one directory per partition (see ``PartitionLog``), the
    checkpoints ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint`` and
    ``cleaner-offset-checkpoint``, and ``.kafka_cleanshutdown`` between a clean shutdown and
    the next startup. Other files and directories belong to the server and are left alone.

    Thread-safety: the table of logs is guarded by a lock; each log guards itself. One
    background thread (``start_background``) runs maintenance; ``run_maintenance`` may also
    be called directly (tests), but not concurrently with that thread.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        clock: Clock,
        max_open_files: int = 1024,
        retention_check_interval_ms: int = 300_000,
        flush_check_interval_ms: int = 1000,
        cleaner_enabled: bool = True,
        cleaner_backoff_ms: int = 15_000,
    ) -> None:
        self.data_dir = Path(data_dir)
        self._clock = clock
        self._file_cache = FileHandleCache(max_open_files)
        self._deletion_queue = FileDeletionQueue()
        self._retention_check_interval_ms = retention_check_interval_ms
        self._flush_check_interval_ms = flush_check_interval_ms
        self._cleaner_enabled = cleaner_enabled
        self._cleaner_backoff_ms = cleaner_backoff_ms
        self._lock = threading.Lock()
        self._maintenance_lock = threading.Lock()
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._recovery_points = OffsetCheckpointFile(self.data_dir / RECOVERY_POINT_CHECKPOINT)
        self._log_start_offsets = OffsetCheckpointFile(self.data_dir / LOG_START_OFFSET_CHECKPOINT)
        # Bumped whenever a log is added or removed or one's log start offset or recovery point moves: the
        # checkpoint pass (every log.flush.scheduler.interval.ms) reads 10,000 partitions' offsets only after a
        # change, not every second (about half of an idle 10,000-partition broker's CPU). A lost increment
        # between two threads still leaves the count changed.
        self._offsets_generation = 0
        self._checkpointed_generation = -1
        self._cleaner: LogCleaner | None = None
        self._next_cleaning_ms: dict[TopicPartition, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = False

    @property
    def file_cache(self) -> FileHandleCache:
        return self._file_cache

    # -------------------------------------------------------------- startup

    def startup(self, configs: Mapping[str, LogConfig]) -> RecoveryReport:
        """Open every partition directory, recovering them after an unclean shutdown."""
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            marker = self.data_dir / CLEAN_SHUTDOWN_MARKER
            clean_shutdown = marker.exists()
            recovery_points = self._read_checkpoint(self._recovery_points)
            log_start_offsets = self._read_checkpoint(self._log_start_offsets)
            self._cleaner = LogCleaner(self._clock, self.data_dir / CLEANER_OFFSET_CHECKPOINT, self._deletion_queue)
            partitions = recovered = truncated = rebuilt = 0
            details: list[str] = []
            for entry in sorted(os.scandir(self.data_dir), key=lambda item: item.name):
                if not entry.is_dir():
                    continue
                if DELETED_DIRECTORY_PATTERN.match(entry.name):
                    shutil.rmtree(entry.path, ignore_errors=True)
                    continue
                parsed = parse_partition_directory_name(entry.name)
                if parsed is None:
                    continue
                topic, _ = parsed
                log = PartitionLog.open(
                    Path(entry.path),
                    configs.get(topic) or LogConfig.default(),
                    clock=self._clock,
                    file_cache=self._file_cache,
                    deletion_queue=self._deletion_queue,
                    log_start_offset=log_start_offsets.get(parsed, 0),
                    recovery_point=recovery_points.get(parsed, 0),
                    clean_shutdown=clean_shutdown,
                )
                log.checkpointed_offsets_changed = self._offsets_changed
                with self._lock:
                    self._logs[parsed] = log
                    self._offsets_changed()
                partitions += 1
                recovered += 1 if log.recovery.recovered else 0
                truncated += log.recovery.truncated_bytes
                rebuilt += log.recovery.rebuilt_indexes
                details.extend(log.recovery.details)
            if clean_shutdown:
                marker.unlink()
                fsync_directory(self.data_dir)
            self._started = True
            self.write_checkpoints()
        except OSError as error:
            raise LogDirectoryError(self.data_dir, str(error)) from error
        report = RecoveryReport(partitions, recovered, truncated, rebuilt, details)
        logger.info(
            "loaded %d partition(s) from %s (%s shutdown): %d recovered, %d bytes truncated, %d index(es) rebuilt",
            partitions,
            self.data_dir,
            "clean" if clean_shutdown else "unclean",
            recovered,
            truncated,
            rebuilt,
        )
        return report

    def _read_checkpoint(self, checkpoint: OffsetCheckpointFile) -> dict[TopicPartition, int]:
        try:
            return checkpoint.read()
        except CorruptCheckpointError as error:
            # Without the recovery point every segment is scanned; without the log start
            # offset it falls back to the first segment. Both are safe, only slower or wider.
            logger.warning("ignoring %s", error)
            return {}

    # -------------------------------------------------------------- the table of logs

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        with self._lock:
            return self._logs.get((topic, partition))

    def get_or_create_log(self, topic: str, partition: int, config: LogConfig, *, sync_directory: bool = True) -> PartitionLog:
        """The partition's log, created empty with ``config`` if it does not exist yet.

        A created log's directory is made durable in the data directory (fsync) before this
        returns; with ``sync_directory=False`` the caller does that once for many new logs with
        :meth:`sync_data_directory` (one fsync instead of one per partition: creating 10,000
        partitions spent most of its time in these fsyncs).
        """
        key = (topic, partition)
        with self._lock:
            log = self._logs.get(key)
            if log is not None:
                return log
            directory = self.data_dir / partition_directory_name(topic, partition)
            log = PartitionLog.open(
                directory,
                config,
                clock=self._clock,
                file_cache=self._file_cache,
                deletion_queue=self._deletion_queue,
                clean_shutdown=True,
            )
            log.checkpointed_offsets_changed = self._offsets_changed
            self._logs[key] = log
            self._offsets_changed()
        if sync_directory:
            self.sync_data_directory()
        return log

    def sync_data_directory(self) -> None:
        """fsync the data directory: partition directories created in it survive a crash."""
        try:
            fsync_directory(self.data_dir)
        except OSError as error:
            raise LogDirectoryError(self.data_dir, str(error)) from error

    def delete_log(self, topic: str, partition: int) -> None:
        """Close the partition's log and remove its directory (renamed first, so it never loads again)."""
        key = (topic, partition)
        with self._lock:
            log = self._logs.pop(key, None)
            self._offsets_changed()
        directory = self.data_dir / partition_directory_name(topic, partition)
        if log is not None:
            log.close()
        if self._cleaner is not None:
            self._cleaner.forget(topic, partition)
        self._file_cache.invalidate_directory(directory)
        if not directory.exists():
            return
        doomed = directory.with_name(deleted_directory_name(directory.name))
        try:
            os.rename(directory, doomed)
            fsync_directory(self.data_dir)
        except OSError as error:
            raise LogDirectoryError(directory, str(error)) from error
        shutil.rmtree(doomed, ignore_errors=True)

    def update_topic_config(self, topic: str, config: LogConfig) -> None:
        for log in self.logs():
            if log.topic == topic:
                log.update_config(config)

    def logs(self) -> list[PartitionLog]:
        with self._lock:
            return list(self._logs.values())

    # -------------------------------------------------------------- maintenance

    def run_maintenance(self, now_ms: int | None = None) -> None:
        """One pass of every periodic task: flush.ms, retention, compaction, checkpoints, file removal."""
        now_ms = self._clock.milliseconds() if now_ms is None else now_ms
        with self._maintenance_lock:
            self._flush_due_logs(now_ms)
            self._apply_retention(now_ms)
            if self._cleaner_enabled:
                self._clean_logs(now_ms)
            self.write_checkpoints()
            self._deletion_queue.delete_due(now_ms)

    def _flush_due_logs(self, now_ms: int) -> None:
        for log in self.logs():
            if log.closed or log.recovery_point >= log.log_end_offset:
                continue
            if log.flush_requested or now_ms - log.last_flush_ms >= log.config.flush_ms:
                self._guarded(log, log.flush)

    def _apply_retention(self, now_ms: int) -> None:
        for log in self.logs():
            if not log.closed:
                self._guarded(log, functools.partial(log.apply_retention, now_ms))

    def _clean_logs(self, now_ms: int) -> None:
        if self._cleaner is None:
            self._cleaner = LogCleaner(self._clock, self.data_dir / CLEANER_OFFSET_CHECKPOINT, self._deletion_queue)
        cleaner = self._cleaner
        for log in self.logs():
            key = (log.topic, log.partition)
            if log.closed or not log.config.compacts or now_ms < self._next_cleaning_ms.get(key, 0):
                continue
            result = self._guarded(log, functools.partial(cleaner.clean, log, now_ms))
            if result is None:
                # Nothing was due: check again after the backoff rather than on every pass.
                self._next_cleaning_ms[key] = now_ms + self._cleaner_backoff_ms

    def _guarded(self, log: PartitionLog, task: Callable[[], _T]) -> _T | None:
        # One failing partition must not stop maintenance of the others.
        try:
            return task()
        except Exception:
            logger.exception("maintenance of %s failed", log.directory.name)
            return None

    def _offsets_changed(self) -> None:
        self._offsets_generation += 1

    def write_checkpoints(self) -> None:
        """Write the recovery-point, log-start-offset and cleaner checkpoints (the first two only after a change)."""
        generation = self._offsets_generation  # read first: a change while the offsets are read counts for the next pass
        try:
            if generation != self._checkpointed_generation:
                logs = self.logs()
                self._recovery_points.write({(log.topic, log.partition): log.recovery_point for log in logs})
                self._log_start_offsets.write({(log.topic, log.partition): log.log_start_offset for log in logs})
                self._checkpointed_generation = generation
            if self._cleaner is not None:
                self._cleaner.write_checkpoint()
        except OSError as error:
            raise LogDirectoryError(self.data_dir, str(error)) from error

    def start_background(self) -> None:
        """Start one daemon thread that runs the periodic tasks on their intervals."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._background_loop, name="weir-log-maintenance", daemon=True)
        self._thread.start()

    def _background_loop(self) -> None:
        interval_s = max(min(self._flush_check_interval_ms, self._retention_check_interval_ms), 1) / 1000.0
        next_retention = self._clock.monotonic() + self._retention_check_interval_ms / 1000.0
        while not self._stop.wait(interval_s):
            now_ms = self._clock.milliseconds()
            try:
                with self._maintenance_lock:
                    self._flush_due_logs(now_ms)
                    if self._clock.monotonic() >= next_retention:
                        next_retention = self._clock.monotonic() + self._retention_check_interval_ms / 1000.0
                        self._apply_retention(now_ms)
                        if self._cleaner_enabled:
                            self._clean_logs(now_ms)
                    self.write_checkpoints()
                    self._deletion_queue.delete_due(now_ms)
            except Exception:
                logger.exception("log maintenance pass failed")

    # -------------------------------------------------------------- shutdown

    def shutdown(self) -> None:
        """Stop maintenance, fsync everything, write snapshots, checkpoints and the clean-shutdown marker."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        if not self._started:
            return
        try:
            with self._maintenance_lock:
                for log in self.logs():
                    log.flush()
                    log.write_producer_snapshot()
                self.write_checkpoints()
                for log in self.logs():
                    log.close()
                self._deletion_queue.delete_all()
                write_atomically(self.data_dir / CLEAN_SHUTDOWN_MARKER, b"")
        except OSError as error:
            raise LogDirectoryError(self.data_dir, str(error)) from error
        finally:
            self._file_cache.close_all()
            self._started = False
        logger.info("log manager shut down cleanly (%s)", self.data_dir)
