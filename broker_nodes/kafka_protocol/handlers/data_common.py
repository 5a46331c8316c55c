"""What the data handlers (Metadata, Produce, Fetch, ListOffsets, ...) share beyond ``admin_common``.

Kafka answers per topic, each with its partitions, in the order the request named them; the
neutral layer answers a flat list of partitions in request order, so :func:`by_topic` groups
it back without reordering.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from typing import TypeVar

Item = TypeVar("Item")


def throttle_time(throttle_ms: int) -> datetime.timedelta:
    """kio's ``throttle_time`` for the neutral layer's ``throttle_ms`` (the connection mutes for that long)."""
    return datetime.timedelta(milliseconds=max(throttle_ms, 0))


def by_topic(items: Iterable[Item], topic_of: Callable[[Item], str]) -> dict[str, list[Item]]:
    """Items grouped by topic, topics in first-seen order, items in their order."""
    grouped: dict[str, list[Item]] = {}
    for item in items:
        grouped.setdefault(topic_of(item), []).append(item)
    return grouped
