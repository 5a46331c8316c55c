"""Names and byte layouts of a partition's files on disk, as Kafka lays them out.

The broker's storage engine writes these files; ``weir-dump-log`` reads them. Both take the
layouts from here, so the format is defined once.

A partition is a directory ``<topic>-<partition>/`` holding segments named by the 20-digit,
zero-padded offset of their first record:

- ``00000000000000000000.log``: RecordBatch v2 batches back to back (see ``weir.records``).
- ``.index``: sparse offset index, 8-byte entries ``(relative offset int32, file position
  int32)``, one per ``index.interval.bytes`` of log, offsets and positions strictly increasing.
- ``.timeindex``: time index, 12-byte entries ``(timestamp int64, relative offset int32)``,
  timestamps strictly increasing; the offset is the first batch with that max timestamp.
- ``.txnindex``: aborted-transaction index, 34-byte entries ``(version int16, producer id
  int64, first offset int64, last offset int64, last stable offset int64)``, one per ABORT
  marker written into the segment, last offsets strictly increasing (Kafka's TransactionIndex).

Files are preallocated up to ``segment.index.bytes`` while the segment is active and trimmed
to their entries when it rolls; an all-zero tail entry marks the end of a preallocated index.
"""

from __future__ import annotations

import re
import struct

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
# Appended to a file name while it awaits removal (file.delete.delay.ms) or replacement.
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"

OFFSET_INDEX_ENTRY = struct.Struct(">ii")  # relative offset, position in the .log file
TIME_INDEX_ENTRY = struct.Struct(">qi")  # max timestamp so far, relative offset
TXN_INDEX_ENTRY = struct.Struct(">hqqqq")  # version, producer id, first offset, last offset, last stable offset
TXN_INDEX_ENTRY_VERSION = 0  # the only version Kafka writes

SEGMENT_NAME_DIGITS = 20
PARTITION_DIRECTORY_SEPARATOR = "-"  # between the topic and the partition number: ``orders-0``
# The longest name one directory entry may have (NAME_MAX of ext4, XFS, btrfs, APFS): a
# partition directory name longer than this cannot be created, so topic names are bounded by it.
MAX_DIRECTORY_NAME_BYTES = 255
_SEGMENT_NAME = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex)$")


def segment_file_name(base_offset: int, suffix: str) -> str:
    """``00000000000000000042.log`` for base offset 42 and suffix ``.log``."""
    return f"{base_offset:0{SEGMENT_NAME_DIGITS}d}{suffix}"


def parse_segment_file_name(name: str) -> tuple[int, str] | None:
    """(base offset, suffix) for a segment file name, None for any other name."""
    match = _SEGMENT_NAME.match(name)
    if match is None:
        return None
    return int(match.group(1)), "." + match.group(2)


def partition_directory_name(topic: str, partition: int) -> str:
    return f"{topic}{PARTITION_DIRECTORY_SEPARATOR}{partition}"


def parse_partition_directory_name(name: str) -> tuple[str, int] | None:
    """(topic, partition) for ``<topic>-<partition>``; None when the name has another form."""
    topic, separator, partition = name.rpartition(PARTITION_DIRECTORY_SEPARATOR)
    if not separator or not topic or not partition.isdigit():
        return None
    return topic, int(partition)
