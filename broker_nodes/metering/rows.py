"""One closed window -> its ``__usage`` rows (schema ``weir.usage/1``, see ``log_formats.usage_records``).

Brokers keep a tenant's topic under its qualified name (``tn-…~orders``); rows carry the
tenant id and the plain name separately, ``""`` as tenant for topics without one. Rows come
out sorted (traffic first, then partitions, each by topic and partition), so that a window
always encodes to the same records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import TypedDict

from broker_nodes import names
from broker_nodes.metering.counters import PartitionKey, PartitionTraffic
from broker_nodes.metering.partition_stats import PartitionStats
from broker_nodes.metering.windows import Window
from log_formats.usage_records import PartitionRow, TrafficRow, UsageRow


class _WindowFields(TypedDict):
    """The fields every row of one window shares."""

    node_id: int
    incarnation: str
    sequence: int
    window_start_ms: int
    window_end_ms: int


def window_rows(
    *,
    node_id: int,
    incarnation: str,
    sequence: int,
    window: Window,
    traffic: Mapping[PartitionKey, PartitionTraffic],
    partitions: Iterable[PartitionStats],
) -> list[UsageRow]:
    """The traffic rows of every partition with client traffic and the partition rows of every led partition."""
    common: _WindowFields = {
        "node_id": node_id,
        "incarnation": incarnation,
        "sequence": sequence,
        "window_start_ms": window.start_ms,
        "window_end_ms": window.end_ms,
    }
    rows: list[UsageRow] = []
    for (topic, partition), counted in sorted(traffic.items()):
        tenant_id, plain = names.split(topic)
        rows.append(
            TrafficRow(
                **common,
                tenant_id=tenant_id,
                topic=plain,
                partition=partition,
                **asdict(counted),  # PartitionTraffic's fields are TrafficRow's counters, by name
            )
        )
    for stats in sorted(partitions, key=lambda item: (item.topic, item.partition)):
        tenant_id, plain = names.split(stats.topic)
        rows.append(
            PartitionRow(
                **common,
                tenant_id=tenant_id,
                topic=plain,
                partition=stats.partition,
                log_size_bytes=stats.log_size_bytes,
                log_start_offset=stats.log_start_offset,
                log_end_offset=stats.log_end_offset,
                high_watermark=stats.high_watermark,
                leader_epoch=stats.leader_epoch,
            )
        )
    return rows
