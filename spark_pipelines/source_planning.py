"""From offset ranges per topic-partition to Spark input partitions (pure, no I/O).

One input partition reads one half-open range ``[from_offset, until_offset)`` of one
topic-partition. By default each topic-partition's range is one input partition, as in
Spark's Kafka source; two options split large ranges:

- ``maxRecordsPerPartition``: every range longer than N offsets is cut into
  ``ceil(size / N)`` near-equal pieces;
- ``minPartitions``: when there are fewer ranges than asked, the ranges that are large
  relative to the total are cut in proportion to their size (Spark's
  ``KafkaOffsetRangeCalculator``: a range gets ``round(size / total * minPartitions)``
  pieces, ranges getting one piece are left whole and the rest is shared by the others).

Sizes count offsets, not records: compaction or control batches make a range hold fewer
records than its size. Empty ranges are dropped (nothing to read).

Streaming's ``maxOffsetsPerTrigger`` is applied before ranges exist, to a micro-batch's end
offsets (:func:`limit_offsets`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition


@dataclass(frozen=True)
class OffsetRange(InputPartition):
    """Read ``topic`` [``partition``] from ``from_offset`` (inclusive) to ``until_offset`` (exclusive)."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        return self.until_offset - self.from_offset


def plan_input_partitions(
    ranges: Iterable[OffsetRange], *, min_partitions: int | None = None, max_records_per_partition: int | None = None
) -> list[OffsetRange]:
    """The input partitions reading ``ranges``, split per the module docstring, in (topic, partition, offset) order."""
    pieces = [piece for offset_range in ranges if offset_range.size > 0 for piece in _split_by_max(offset_range, max_records_per_partition)]
    if min_partitions is not None and len(pieces) < min_partitions:
        pieces = _split_for_min_partitions(pieces, min_partitions)
    return sorted(pieces, key=lambda piece: (piece.topic, piece.partition, piece.from_offset))


def _split_by_max(offset_range: OffsetRange, max_records: int | None) -> list[OffsetRange]:
    if max_records is None or offset_range.size <= max_records:
        return [offset_range]
    parts = -(-offset_range.size // max_records)
    return _split_evenly(offset_range, parts)


def _split_for_min_partitions(ranges: list[OffsetRange], min_partitions: int) -> list[OffsetRange]:
    total = sum(offset_range.size for offset_range in ranges)
    whole = [offset_range for offset_range in ranges if _part_count(offset_range.size, total, min_partitions) == 1]
    split_total = total - sum(offset_range.size for offset_range in whole)
    split_min_partitions = max(min_partitions - len(whole), 1)
    result = []
    for offset_range in ranges:
        parts = 1 if offset_range in whole else _part_count(offset_range.size, split_total, split_min_partitions)
        result += _split_evenly(offset_range, parts)
    return result


def _part_count(size: int, total: int, min_partitions: int) -> int:
    # Scala's math.round: half up.
    return max(int(size / total * min_partitions + 0.5), 1)


def _split_evenly(offset_range: OffsetRange, parts: int) -> list[OffsetRange]:
    """``parts`` consecutive pieces whose sizes differ by at most one (the later ones take the remainder)."""
    pieces = []
    remaining = offset_range.size
    start = offset_range.from_offset
    for index in range(parts):
        length = remaining // (parts - index)
        remaining -= length
        end = min(start + length, offset_range.until_offset)
        if end > start:
            pieces.append(OffsetRange(offset_range.topic, offset_range.partition, start, end))
        start = end
    return pieces


def limit_offsets(starts: Mapping[tuple[str, int], int], ends: Mapping[tuple[str, int], int], max_offsets: int) -> dict[tuple[str, int], int]:
    """End offsets moved back so that at most about ``max_offsets`` offsets are read in all (``maxOffsetsPerTrigger``).

    The limit is shared in proportion to each partition's backlog, rounding down (a share
    below one offset rounds up to one), as Spark's Kafka source does; partitions without a
    start (new ones) are not limited.
    """
    backlog = {key: until - starts.get(key, until) for key, until in ends.items()}
    total = sum(size for size in backlog.values() if size > 0)
    if total <= max_offsets:
        return dict(ends)
    limited = {}
    for key, until in ends.items():
        size = backlog[key]
        if size <= 0 or key not in starts:
            limited[key] = until
            continue
        share = max_offsets * size / total
        step = int(share) if share >= 1 else (1 if share > 0 else 0)
        limited[key] = min(until, starts[key] + step)
    return limited
