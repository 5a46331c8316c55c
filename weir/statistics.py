"""librdkafka-shaped client statistics for ``stats_cb``, every ``statistics.interval.ms``.

confluent-kafka hands ``stats_cb`` a JSON string of librdkafka's statistics (its
STATISTICS.md) from ``poll()``; dashboards and exporters read a known set of its fields.
Weir's clients emit the same shape with the fields that have a meaning over gRPC:

- top level: ``name``, ``client_id``, ``type`` (producer/consumer), ``ts`` (monotonic µs),
  ``time`` (wall-clock s), ``age`` (µs since the client started), ``msg_cnt`` / ``msg_size``
  (records and bytes produced and not yet reported), ``tx``/``tx_bytes``/``rx``/``rx_bytes``
  (requests and responses over all brokers), ``txmsgs``/``txmsg_bytes``/``rxmsgs``/
  ``rxmsg_bytes`` (records produced / consumed);
- ``brokers``: per broker (``host:port/node_id``) ``name``, ``nodeid``, ``nodename``,
  ``state``, ``tx``, ``txbytes``, ``txerrs``, ``rx``, ``rxbytes``, ``outbuf_msg_cnt`` and
  ``rtt`` (``min``/``max``/``avg``/``p50``/``p95``/``p99``/``cnt`` in µs over the interval);
- ``topics``: per topic ``topic``, ``age``, ``metadata_age`` and ``partitions`` keyed by the
  partition number as a string, each with ``partition``, ``leader``, ``txmsgs``, ``txbytes``,
  ``rxmsgs``, ``rxbytes`` and, for consumers, ``fetch_state``, ``next_offset``,
  ``committed_offset``, ``hi_offset``, ``lo_offset`` and ``consumer_lag`` (when known);
- consumers add ``cgrp`` (``state``, ``join_state``, ``rebalance_cnt``, ``assignment_size``).

:class:`ClientCounters` is updated by the client's threads (thread-safe);
:class:`StatisticsTimer` (injected clock) says when poll() should emit the next one.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# RTT samples kept per broker between two emissions.
_RTT_SAMPLES = 1000


@dataclass
class _BrokerCounters:
    tx: int = 0
    txbytes: int = 0
    txerrs: int = 0
    rx: int = 0
    rxbytes: int = 0
    in_flight: int = 0
    rtts: list[float] = field(default_factory=list)


@dataclass
class _PartitionCounters:
    txmsgs: int = 0
    txbytes: int = 0
    rxmsgs: int = 0
    rxbytes: int = 0


class ClientCounters:
    """Request and record counters of one client, by broker address and partition (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._brokers: dict[str, _BrokerCounters] = {}
        self._partitions: dict[tuple[str, int], _PartitionCounters] = {}

    def request_sent(self, address: str, size: int) -> None:
        with self._lock:
            broker = self._brokers.setdefault(address, _BrokerCounters())
            broker.tx += 1
            broker.txbytes += size
            broker.in_flight += 1

    def response_received(self, address: str, size: int, rtt: float) -> None:
        with self._lock:
            broker = self._brokers.setdefault(address, _BrokerCounters())
            broker.rx += 1
            broker.rxbytes += size
            broker.in_flight = max(broker.in_flight - 1, 0)
            if len(broker.rtts) < _RTT_SAMPLES:
                broker.rtts.append(rtt)

    def request_failed(self, address: str) -> None:
        with self._lock:
            broker = self._brokers.setdefault(address, _BrokerCounters())
            broker.txerrs += 1
            broker.in_flight = max(broker.in_flight - 1, 0)

    def produced(self, topic: str, partition: int, records: int, size: int) -> None:
        with self._lock:
            counters = self._partitions.setdefault((topic, partition), _PartitionCounters())
            counters.txmsgs += records
            counters.txbytes += size

    def consumed(self, topic: str, partition: int, records: int, size: int) -> None:
        with self._lock:
            counters = self._partitions.setdefault((topic, partition), _PartitionCounters())
            counters.rxmsgs += records
            counters.rxbytes += size

    def take(self) -> tuple[dict[str, _BrokerCounters], dict[tuple[str, int], _PartitionCounters]]:
        """Copies of the counters; RTT samples start over (each emission covers its interval)."""
        with self._lock:
            brokers = {address: _BrokerCounters(c.tx, c.txbytes, c.txerrs, c.rx, c.rxbytes, c.in_flight, c.rtts) for address, c in self._brokers.items()}
            for counters in self._brokers.values():
                counters.rtts = []
            partitions = {key: _PartitionCounters(c.txmsgs, c.txbytes, c.rxmsgs, c.rxbytes) for key, c in self._partitions.items()}
        return brokers, partitions


class StatisticsTimer:
    """When the next statistics are due: every ``interval_ms`` (0: never)."""

    def __init__(self, interval_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = interval_ms / 1000.0
        self._clock = clock
        self._next = clock() + self._interval

    @property
    def enabled(self) -> bool:
        return self._interval > 0

    def seconds_left(self) -> float | None:
        """Seconds until the next emission (0 when due), None when statistics are off."""
        if not self.enabled:
            return None
        return max(self._next - self._clock(), 0.0)

    def take_due(self) -> bool:
        """True (once per interval) when statistics are due; the next are due an interval later."""
        if not self.enabled:
            return False
        now = self._clock()
        if now < self._next:
            return False
        self._next += self._interval
        if self._next <= now:
            self._next = now + self._interval  # the application polled late: one emission, not a burst
        return True


def _rtt(samples: list[float]) -> dict[str, int]:
    if not samples:
        return {"min": 0, "max": 0, "avg": 0, "sum": 0, "cnt": 0, "p50": 0, "p95": 0, "p99": 0}
    ordered = sorted(int(sample * 1_000_000) for sample in samples)

    def at(fraction: float) -> int:
        return ordered[min(int(fraction * len(ordered)), len(ordered) - 1)]

    total = sum(ordered)
    return {
        "min": ordered[0],
        "max": ordered[-1],
        "avg": total // len(ordered),
        "sum": total,
        "cnt": len(ordered),
        "p50": at(0.5),
        "p95": at(0.95),
        "p99": at(0.99),
    }


@dataclass
class StatisticsSource:
    """What a client knows beyond its counters, read when statistics are built."""

    name: str
    client_id: str
    kind: str  # "producer" or "consumer"
    started: float  # monotonic seconds
    brokers: Mapping[int, str]  # node id -> host:port
    leaders: Mapping[str, tuple[int, ...]]  # topic -> leader node id per partition
    metadata_ages: Mapping[str, float]  # topic -> seconds since its metadata was fetched
    msg_cnt: int = 0
    msg_size: int = 0
    partition_extras: Mapping[tuple[str, int], Mapping[str, Any]] = field(default_factory=dict)
    cgrp: Mapping[str, Any] | None = None


def build_statistics(source: StatisticsSource, counters: ClientCounters, *, now: float | None = None, wall: float | None = None) -> dict[str, Any]:
    """The librdkafka-shaped statistics dict (see the module docstring)."""
    now = time.monotonic() if now is None else now
    wall = time.time() if wall is None else wall
    broker_counters, partition_counters = counters.take()
    node_of = {address: node_id for node_id, address in source.brokers.items()}
    brokers: dict[str, Any] = {}
    for address in sorted(set(broker_counters) | set(node_of)):
        c = broker_counters.get(address, _BrokerCounters())
        node_id = node_of.get(address, -1)
        name = f"{address}/{node_id}" if node_id >= 0 else f"{address}/bootstrap"
        brokers[name] = {
            "name": name,
            "nodeid": node_id,
            "nodename": address,
            "source": "learned" if node_id >= 0 else "configured",
            "state": "UP" if c.rx or not c.txerrs else "DOWN",
            "tx": c.tx,
            "txbytes": c.txbytes,
            "txerrs": c.txerrs,
            "rx": c.rx,
            "rxbytes": c.rxbytes,
            "outbuf_msg_cnt": c.in_flight,
            "rtt": _rtt(c.rtts),
        }
    topics: dict[str, Any] = {}
    for topic in sorted(set(source.leaders) | {topic for topic, _ in partition_counters}):
        leaders = source.leaders.get(topic, ())
        numbers = set(range(len(leaders))) | {partition for name, partition in partition_counters if name == topic}
        partitions = {}
        for partition in sorted(numbers):
            counted = partition_counters.get((topic, partition), _PartitionCounters())
            entry: dict[str, Any] = {
                "partition": partition,
                "leader": leaders[partition] if partition < len(leaders) else -1,
                "txmsgs": counted.txmsgs,
                "txbytes": counted.txbytes,
                "rxmsgs": counted.rxmsgs,
                "rxbytes": counted.rxbytes,
            }
            entry.update(source.partition_extras.get((topic, partition), {}))
            partitions[str(partition)] = entry
        age = int(source.metadata_ages.get(topic, 0.0) * 1000)
        topics[topic] = {"topic": topic, "age": age, "metadata_age": age, "partitions": partitions}
    all_partitions = partition_counters.values()
    statistics: dict[str, Any] = {
        "name": source.name,
        "client_id": source.client_id,
        "type": source.kind,
        "ts": int(now * 1_000_000),
        "time": int(wall),
        "age": int((now - source.started) * 1_000_000),
        "msg_cnt": source.msg_cnt,
        "msg_size": source.msg_size,
        "tx": sum(c.tx for c in broker_counters.values()),
        "tx_bytes": sum(c.txbytes for c in broker_counters.values()),
        "rx": sum(c.rx for c in broker_counters.values()),
        "rx_bytes": sum(c.rxbytes for c in broker_counters.values()),
        "txmsgs": sum(counted.txmsgs for counted in all_partitions),
        "txmsg_bytes": sum(counted.txbytes for counted in all_partitions),
        "rxmsgs": sum(counted.rxmsgs for counted in all_partitions),
        "rxmsg_bytes": sum(counted.rxbytes for counted in all_partitions),
        "brokers": brokers,
        "topics": topics,
    }
    if source.cgrp is not None:
        statistics["cgrp"] = dict(source.cgrp)
    return statistics


def statistics_json(source: StatisticsSource, counters: ClientCounters) -> str:
    """build_statistics() as the JSON string stats_cb receives."""
    return json.dumps(build_statistics(source, counters))
