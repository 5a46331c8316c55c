"""The range an incremental job reads next: from its cursor to the ends it pinned for this run.

Both jobs keep a cursor (offset per partition of the topic they read, saved with their state
only after their results are written) and pin the ends with ``resolve_offsets`` before reading,
so records arriving during the run wait for the next one.
"""

from __future__ import annotations

from collections.abc import Mapping

Offsets = dict[str, dict[str, int]]  # topic -> partition (as a JSON key) -> offset


def pending_range(cursor: Offsets, ends: Mapping[str, Mapping[int, int]]) -> tuple[Offsets, Offsets]:
    """``(startingOffsets, endingOffsets)`` of the read: the cursor's partitions that still exist,
    and every partition's pinned end. Partitions the cursor lacks start at the log start."""
    ending = {topic: {str(partition): offset for partition, offset in sorted(partitions.items())} for topic, partitions in ends.items()}
    starting = {topic: {partition: offset for partition, offset in cursor.get(topic, {}).items() if partition in ending[topic]} for topic in ending}
    return {topic: partitions for topic, partitions in starting.items() if partitions}, ending


def nothing_to_read(starting: Offsets, ending: Offsets) -> bool:
    """True when every partition's start is known and equals its end."""
    return all(starting.get(topic, {}).get(partition) == offset for topic, partitions in ending.items() for partition, offset in partitions.items())
