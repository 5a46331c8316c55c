"""A broker's usage metering: what the request path and the broker's lifecycle call.

The servicer reports each client Produce and Fetch once it is answered
(:meth:`Metering.produce_tally`, :meth:`Metering.record_fetch`); calls made with the internal
token (the control plane, other brokers, the metering producer itself) are not metered, and
replication fetches never reach these methods (they are the ``Replication`` service's).
The broker starts the emitter once it serves (:meth:`Metering.start`, with its port, where
the metering producer bootstraps), flushes it on SIGTERM before its leaderships move
(:meth:`Metering.flush`) and shuts it down after the server stopped (:meth:`Metering.shutdown`).

Settings: ``metering.enabled``, ``metering.interval.ms`` (window length, aligned to wall
clock), ``metering.backlog.max.rows`` (rows kept while ``__usage`` does not acknowledge).
The schema of the rows is ``docs/usage-schema.md``. Thread-safe.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Sequence

from broker_nodes.clock import Clock
from broker_nodes.config import BrokerConfig
from broker_nodes.metering.backlog import BACKLOG_DIRECTORY_NAME, UsageBacklog
from broker_nodes.metering.counters import PartitionKey, PartitionTraffic, ProduceTally, TrafficCounters, fetched_totals
from broker_nodes.metering.emitter import UsageEmitter
from broker_nodes.metering.partition_stats import PartitionStats
from broker_nodes.metering.sink import ProducerSink, UsageSink, producer_config
from broker_nodes.replica_manager import FetchPartitionRequest, FetchPartitionResult
from broker_nodes.security.access import CallContext, CallerKind

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 5.0  # longest a clean shutdown waits for the last window's acknowledgement
FINAL_SECONDS = 2.0  # longest the stopped broker waits for the traffic that came in during its shutdown


def is_metered(call: CallContext) -> bool:
    """Client calls are metered; calls with the internal token are not."""
    return call.kind is not CallerKind.INTERNAL


class Metering:
    """Counters, backlog and emitter of one broker; see the module docstring."""

    def __init__(
        self,
        config: BrokerConfig,
        clock: Clock,
        *,
        partition_stats: Callable[[], list[PartitionStats]],
    ) -> None:
        self.enabled = bool(config["metering.enabled"])
        self.incarnation = secrets.token_hex(8)  # this process's identity in every row it emits
        self._config = config
        self._clock = clock
        self._partition_stats = partition_stats
        self._counters = TrafficCounters()
        self._emitter: UsageEmitter | None = None

    # ------------------------------------------------------------------ the request path

    def produce_tally(self, call: CallContext) -> ProduceTally | None:
        """A collector for one Produce request's appends (None when the call is not metered);
        its ``appended`` goes to the replica manager, its ``finish`` is called with the throttle time."""
        if not self.enabled or not is_metered(call):
            return None
        return ProduceTally(self._counters)

    def record_fetch(
        self, call: CallContext, requests: Sequence[FetchPartitionRequest], results: Sequence[FetchPartitionResult], throttle_time_ms: int
    ) -> None:
        """One answered Fetch: the returned batches of every partition answered without error."""
        if not self.enabled or not is_metered(call):
            return
        amounts = []
        for request, result in zip(requests, results):
            if result.error is None:
                size, records = fetched_totals(result.records)
                amounts.append((request.topic, request.partition, size, records))
        self._counters.add_fetched(amounts, throttle_time_ms)

    def traffic_totals(self) -> dict[PartitionKey, PartitionTraffic]:
        """Clients' traffic per (qualified topic, partition) since this broker started (empty when metering is off)."""
        return self._counters.totals()

    # ------------------------------------------------------------------ lifecycle

    def start(self, port: int) -> None:
        """Start emitting windows; ``port`` is where this broker serves (the producer's bootstrap)."""
        if not self.enabled or self._emitter is not None:
            return
        config = self._config
        directory = config.data_dir / BACKLOG_DIRECTORY_NAME
        backlog = UsageBacklog(directory, config.integer("metering.backlog.max.rows"))
        earlier = backlog.load()
        if earlier:
            logger.info("found %d usage rows of earlier runs not acknowledged by __usage in %s: sending them again", earlier, directory)
        self._emitter = UsageEmitter(
            node_id=config.node_id,
            incarnation=self.incarnation,
            interval_ms=config.integer("metering.interval.ms"),
            clock=self._clock,
            counters=self._counters,
            partition_stats=self._partition_stats,
            backlog=backlog,
            open_sink=self._sink_opener(port),
            backlog_location=directory,
        )
        self._emitter.start()

    def _sink_opener(self, port: int) -> Callable[[], UsageSink] | None:
        """How the emitter makes its sink (when it first has rows to send); None without an internal token."""
        if not self._config.internal_token:
            return None
        config = self._config
        return lambda: ProducerSink(producer_config(config, port))

    def flush(self, timeout_seconds: float = FLUSH_SECONDS) -> bool:
        """Clean shutdown, first step: emit the open window now and wait (bounded) for its acknowledgement."""
        if self._emitter is None:
            return True
        return self._emitter.flush(timeout_seconds)

    def shutdown(self, timeout_seconds: float = FINAL_SECONDS) -> None:
        """After the server stopped: emit the rest, keep anything unacknowledged on disk. Idempotent."""
        if self._emitter is not None:
            self._emitter.shutdown(timeout_seconds)
