"""Which closed segments retention deletes: by age, by partition size, or below the log start.

Pure selection over a snapshot of the segment list; ``PartitionLog.apply_retention`` performs
the deletion. Only whole closed segments are ever chosen, always a prefix of the log (the
oldest ones), and never a segment holding offsets at or above the high watermark, so a
consumer can always read what was acknowledged to a producer.
"""

from __future__ import annotations

from collections.abc import Sequence

from broker_nodes.storage.log_config import LogConfig
from broker_nodes.storage.segment import LogSegment


def segment_age_reference_ms(segment: LogSegment) -> int:
    """The time retention.ms counts from: the newest batch timestamp, or the file's mtime without one."""
    largest = segment.max_timestamp
    return largest if largest >= 0 else segment.last_modified_ms()


def count_expired_by_time(segments: Sequence[LogSegment], retention_ms: int, now_ms: int) -> int:
    """Length of the prefix of ``segments`` whose newest record is older than ``retention_ms``."""
    if retention_ms < 0:
        return 0
    count = 0
    for segment in segments:
        if now_ms - segment_age_reference_ms(segment) <= retention_ms:
            break
        count += 1
    return count


def count_over_size(segments: Sequence[LogSegment], total_size: int, retention_bytes: int) -> int:
    """Length of the prefix to delete so that the partition fits in ``retention_bytes``."""
    if retention_bytes < 0:
        return 0
    excess = total_size - retention_bytes
    count = 0
    for segment in segments:
        if excess - segment.size < 0:
            break
        excess -= segment.size
        count += 1
    return count


def count_below_log_start(segments: Sequence[LogSegment], log_start_offset: int) -> int:
    """Length of the prefix holding only offsets below the log start offset."""
    count = 0
    for segment in segments:
        if segment.next_offset > log_start_offset:
            break
        count += 1
    return count


def select_segments_to_delete(segments: Sequence[LogSegment], config: LogConfig, now_ms: int, high_watermark: int, log_start_offset: int) -> list[LogSegment]:
    """The oldest closed segments that retention removes now (possibly none)."""
    closed = list(segments[:-1])
    eligible = []
    for segment in closed:
        if segment.next_offset > high_watermark:
            break
        eligible.append(segment)
    count = count_below_log_start(eligible, log_start_offset)
    if config.deletes:
        total_size = sum(segment.size for segment in segments)
        count = max(
            count,
            count_expired_by_time(eligible, config.retention_ms, now_ms),
            count_over_size(eligible, total_size, config.retention_bytes),
        )
    return eligible[:count]
