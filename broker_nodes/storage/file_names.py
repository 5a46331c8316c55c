"""Names of the storage engine's own files, defined once.

Segment file names (``.log``, ``.index``, ``.timeindex`` and their ``.cleaned`` / ``.swap`` /
``.deleted`` variants) come from ``log_formats.log_files``; this module adds the checkpoints,
snapshots and markers that only the broker writes.
"""

from __future__ import annotations

import re
import uuid

from log_formats.log_files import MAX_DIRECTORY_NAME_BYTES, SEGMENT_NAME_DIGITS

# In the data directory: present only between a clean shutdown and the next startup.
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
# In the data directory: per partition, the offset below which everything is fsynced.
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
# In the data directory: per partition, the first offset still readable.
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
# In the data directory: per partition, the offset where the cleaner's next pass starts.
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
# In a partition directory: leader epoch -> first offset written in that epoch.
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
# In a partition directory: producer state as of an offset, ``<offset>.snapshot``.
PRODUCER_SNAPSHOT_SUFFIX = ".snapshot"
# Appended to a file being written atomically; never read, removed at startup.
TEMPORARY_SUFFIX = ".tmp"
# A deleted partition directory is renamed ``<dir>.<32 hex digits>-delete`` before removal.
DELETED_DIRECTORY_SUFFIX = "-delete"
DELETED_DIRECTORY_PATTERN = re.compile(r"^.+\.[0-9a-f]{32}-delete$")

_SNAPSHOT_NAME = re.compile(rf"^(\d{{{SEGMENT_NAME_DIGITS}}})\.snapshot$")


def deleted_directory_name(directory_name: str) -> str:
    """``<dir>.<32 hex digits>-delete`` for a partition directory about to be removed, with
    ``<dir>`` cut short (as Kafka does) when the whole would not fit a directory entry: a
    directory whose name already fills one must still be removable."""
    suffix = f".{uuid.uuid4().hex}{DELETED_DIRECTORY_SUFFIX}"
    room = MAX_DIRECTORY_NAME_BYTES - len(suffix)
    kept = directory_name.encode("utf-8")[:room].decode("utf-8", errors="ignore")
    return f"{kept}{suffix}"


def producer_snapshot_file_name(offset: int) -> str:
    """``00000000000000000042.snapshot`` for offset 42."""
    return f"{offset:0{SEGMENT_NAME_DIGITS}d}{PRODUCER_SNAPSHOT_SUFFIX}"


def parse_producer_snapshot_file_name(name: str) -> int | None:
    """The offset of a snapshot file name, None for any other name."""
    match = _SNAPSHOT_NAME.match(name)
    return int(match.group(1)) if match else None
