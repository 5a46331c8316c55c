"""What the data handlers (Metadata, Produce, Fetch, ListOffsets, ...) share beyond ``admin_common``.

Kafka answers per topic, each with its partitions, in the order the request named them; the
neutral layer answers a flat list of partitions in request order, so :func:`by_topic` groups
it back without reordering.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build
from broker_nodes.requests.outcomes import LeaderHint

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


def current_leader(schema: Any, hint: LeaderHint | None) -> Any:
    """kio's ``current_leader`` (KIP-951) for a partition's answer: the new leader, or Kafka's "unknown" (-1, -1)."""
    return build(schema.LeaderIdAndEpoch, leader_id=hint.leader_id if hint else -1, leader_epoch=hint.leader_epoch if hint else -1)


def leader_endpoints(context: api.KafkaRequestContext, schema: Any, hints: Iterable[LeaderHint | None]) -> tuple[Any, ...]:
    """``node_endpoints`` (KIP-951): the Kafka endpoint of every leader named in ``hints``, so the client can connect without Metadata."""
    wanted = {hint.leader_id for hint in hints if hint is not None}
    if not wanted:
        return ()
    return tuple(
        build(schema.NodeEndpoint, node_id=endpoint.node_id, host=endpoint.host, port=endpoint.port, rack=endpoint.rack or None)
        for endpoint in api.kafka_endpoints(context.broker, context.listener)
        if endpoint.node_id in wanted
    )
