"""The live-throughput parts of the topic and overview pages: readings of the brokers' traffic
totals kept in Django's cache, shared by every web process (``webapp.dashboard.throughput``) turned into rates per partition,
per topic and for the tenant, with the charts of the last minutes.

Each page view and each refresh of a part reads the brokers once (DescribeState) and keeps a
reading per (partition, broker); rates come from consecutive readings of the same broker
process, so a leader change or a broker restart starts a new series instead of a wrong rate.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from webapp.catalog.facade import Topic
from webapp.dashboard.charts import LineChart, Series, format_bytes, format_count, line_chart
from webapp.dashboard.throughput import KEEP, Rates, Reading, ThroughputHistory, rate_series, summed
from webapp.provisioning.facade import PartitionDescription, PartitionTraffic

# Readings of the partitions shown (in Django's cache: every web process shares them).
HISTORY = ThroughputHistory()
# How often the pages refresh their live throughput.
REFRESH_SECONDS = 5
WAITING = "Measuring: rates appear at the next refresh (two readings of the brokers' counters)."


def rate_charts(total: Sequence[Rates], now: datetime) -> list[LineChart]:
    """Records/s and bytes/s, in and out, over the last ``KEEP`` before ``now``."""
    start, end = now - KEEP, now + timedelta(seconds=1)
    records = [Series("in", [(r.at, r.records_in) for r in total]), Series("out", [(r.at, r.records_out) for r in total])]
    volume = [Series("in", [(r.at, r.bytes_in) for r in total]), Series("out", [(r.at, r.bytes_out) for r in total])]
    return [
        line_chart("Records per second", records, start, end, format_count, empty_message=WAITING),
        line_chart("Bytes per second", volume, start, end, format_bytes, binary=True, empty_message=WAITING),
    ]


def _keep(entries: Sequence[tuple[tuple[object, ...], str, tuple[int, int, int, int]]], now: datetime) -> list[list[Rates]]:
    """Keep a reading of each ``(key, counted_by, totals)`` (when a broker counted it) and return
    each key's rates, in order: one read and one write of the shared history for them all."""
    readings = [(key, Reading(now, counted_by, totals[0], totals[1], totals[2], totals[3]) if counted_by else None) for key, counted_by, totals in entries]
    return [rate_series(kept) for kept in HISTORY.record_many(readings, now)]


def topic_panel(topic: Topic, partitions: Iterable[PartitionDescription], now: datetime) -> dict[str, Any]:
    """The topic page's part: each partition's latest rates at its leader (None before two
    readings) and the topic's charts."""
    partitions = list(partitions)
    entries = [
        (
            ("partition", str(topic.topic_id), partition.partition, partition.leader),
            partition.counted_by or "",
            (partition.bytes_in_total, partition.records_in_total, partition.bytes_out_total, partition.records_out_total),
        )
        for partition in partitions
    ]
    series = _keep(entries, now)
    rows = [(partition.partition, rates[-1] if rates else None) for partition, rates in zip(partitions, series, strict=True)]
    total = summed(series)
    return {"throughput_rows": rows, "throughput_charts": rate_charts(total, now), "throughput_known": bool(total), "throughput_seconds": REFRESH_SECONDS}


def tenant_panel(topics: Iterable[Topic], traffic: Iterable[PartitionTraffic], now: datetime) -> dict[str, Any]:
    """The overview's part: each topic's current rates (busiest first) and the tenant's charts."""
    names = {str(topic.topic_id): topic.name for topic in topics}
    shown = [entry for entry in traffic if entry.topic_id in names]
    entries = [
        (
            ("partition", entry.topic_id, entry.partition, entry.node_id),
            entry.counted_by,
            (entry.bytes_in_total, entry.records_in_total, entry.bytes_out_total, entry.records_out_total),
        )
        for entry in shown
    ]
    by_topic: dict[str, list[list[Rates]]] = {}
    for entry, rates in zip(shown, _keep(entries, now), strict=True):
        by_topic.setdefault(entry.topic_id, []).append(rates)
    rows = []
    for topic_id, series in by_topic.items():
        topic_total = summed(series)
        if topic_total:
            rows.append((names[topic_id], topic_total[-1]))
    rows.sort(key=lambda row: (-(row[1].bytes_in + row[1].bytes_out), row[0]))
    total = summed(series for all_series in by_topic.values() for series in all_series)
    return {"throughput_topics": rows, "throughput_charts": rate_charts(total, now), "throughput_known": bool(total), "throughput_seconds": REFRESH_SECONDS}
