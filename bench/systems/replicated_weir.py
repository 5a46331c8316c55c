"""Weir's end-to-end row with acks=all on a replicated topic: issue 19 goal 1's second figure.

The end-to-end scenario of :class:`bench.systems.weir_system.WeirSystem` (fixed-rate producer
at ``linger.ms=0``, consumer in another process), run against three brokers of
:class:`bench.replicated_brokers.ReplicatedBrokers`: each run's topic has replication factor 3
and ``min.insync.replicas=2``, the producer is idempotent with acks=all, and the consumer sees a
record only once the high watermark passed it, that is once the followers fetched it. So the
latency holds the replication round trip that acks=1 on one broker does not.

The stand plays the control plane itself (no controller, no REST), so topics are created
through its cluster map rather than the admin client, and stay until the stand stops: three
runs of 50,000 records are a few megabytes.
"""

from __future__ import annotations

import uuid

from bench.measurements import ThroughputSample
from bench.replicated_brokers import ReplicatedBrokers
from bench.replicated_topics import TopicSetupError, wait_until_healthy
from bench.systems.base import BenchmarkIntegrityError
from bench.systems.weir_system import ADMIN_TIMEOUT, SDK, WeirOptions, WeirSystem

NAME = "Weir, acks=all RF=3"
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2
SCENARIOS = ("e2e",)  # produce throughput of this setting is `python -m bench replication-throughput`'s


class ReplicatedWeirSystem(WeirSystem):
    """The SDK against ``brokers``, acks=all and idempotent, every run on a fresh RF=3 topic; end to end only."""

    scenarios = SCENARIOS

    def __init__(self, brokers: ReplicatedBrokers) -> None:
        config = brokers.client_config()
        super().__init__(
            WeirOptions(
                bootstrap=config["bootstrap.servers"],
                acks="all",
                idempotence=True,
                client_settings={key: value for key, value in config.items() if key != "bootstrap.servers"},
                library=SDK,
            )
        )
        self.name = NAME
        self._brokers = brokers

    def describe_settings(self) -> str:
        return f"{super().describe_settings()}; three brokers, replication factor {REPLICATION_FACTOR}, min.insync.replicas={MIN_INSYNC_REPLICAS}"

    def produce(self, records: int, values: list[bytes]) -> ThroughputSample:
        raise BenchmarkIntegrityError(self.name, "measures end to end only: replicated produce throughput is `python -m bench replication-throughput`")

    def consume(self, records: int, values: list[bytes]) -> ThroughputSample:
        raise BenchmarkIntegrityError(self.name, "measures end to end only")

    def _create_topic(self) -> str:
        topic = f"weir-bench-rf3-{uuid.uuid4().hex}"
        self._brokers.create_topic(topic, replication_factor=REPLICATION_FACTOR, configs={"min.insync.replicas": str(MIN_INSYNC_REPLICAS)})
        try:
            wait_until_healthy(self._admin, topic, 1, ADMIN_TIMEOUT)
        except TopicSetupError as error:
            raise BenchmarkIntegrityError(self.name, str(error)) from None
        return topic

    def _delete_topic(self, topic: str) -> None:
        """Kept: the stand has no delete, and stops (with its data directories) after the benchmark."""
