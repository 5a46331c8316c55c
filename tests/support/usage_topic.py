"""Reading ``__usage`` back in tests, as the usage job does: every row, deduplicated by identity.

A :class:`UsageReader` is an SDK consumer with the internal token (its own fetches are not
metered) assigned to every partition of ``__usage`` from the beginning. It keeps one row per
identity and records any identity seen again with different content (which would be a bug:
a re-sent row must be byte for byte the row first sent).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable

from log_formats.usage_records import USAGE_TOPIC, Identity, PartitionRow, TrafficRow, UsageRow, decode, identity
from weir import OFFSET_BEGINNING, Consumer, TopicPartition
from weir.consumer import consume_available

TRAFFIC_FIELDS = ("bytes_in", "records_in", "bytes_out", "records_out", "produce_requests", "fetch_requests", "throttle_time_ms")
TrafficKey = tuple[str, str, int]  # (tenant id, topic, partition)


class UsageReader:
    """See the module docstring. Not thread-safe."""

    def __init__(self, bootstrap_servers: str, internal_token: str, *, partitions: int = 1, **config: object) -> None:
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap_servers,
                "weir.internal.token": internal_token,
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 100,
                **config,
            }
        )
        self._consumer.assign([TopicPartition(USAGE_TOPIC, partition, OFFSET_BEGINNING) for partition in range(partitions)])
        self.rows: dict[Identity, UsageRow] = {}
        self.records_read = 0
        self.conflicts: list[tuple[UsageRow, UsageRow]] = []

    def read_available(self, timeout: float = 0.3) -> int:
        """Consume what arrives within ``timeout`` seconds; returns how many records were read."""
        deadline = time.monotonic() + timeout
        read = 0
        while (remaining := deadline - time.monotonic()) > 0:
            for message in consume_available(self._consumer, 500, min(remaining, 0.1)):
                if message.error() is not None:
                    continue
                row = decode(message.value())
                read += 1
                known = self.rows.setdefault(identity(row), row)
                if known != row:
                    self.conflicts.append((known, row))
        self.records_read += read
        return read

    def read_until(self, condition: Callable[[UsageReader], bool], timeout: float, what: str) -> None:
        """Read until ``condition(self)`` holds; AssertionError naming ``what`` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            self.read_available()
            if condition(self):
                return
            if time.monotonic() >= deadline:
                raise AssertionError(f"not within {timeout:.0f} s: {what}; traffic read: {dict(self.traffic())}")

    def traffic(self, *, node_id: int | None = None) -> dict[TrafficKey, Counter[str]]:
        """Sum of the deduplicated traffic rows per (tenant, topic, partition), optionally of one broker."""
        totals: dict[TrafficKey, Counter[str]] = defaultdict(Counter)
        for row in self.rows.values():
            if isinstance(row, TrafficRow) and (node_id is None or row.node_id == node_id):
                totals[(row.tenant_id, row.topic, row.partition)].update({name: getattr(row, name) for name in TRAFFIC_FIELDS})
        return totals

    def partition_rows(self) -> list[PartitionRow]:
        return [row for row in self.rows.values() if isinstance(row, PartitionRow)]

    def close(self) -> None:
        self._consumer.close()
