"""A broker's state as Prometheus gauges, read when Prometheus scrapes (a custom collector).

Nothing here is updated on the request path: each scrape walks the partitions this broker
leads (their ISR trackers), its hosted logs and the cluster map, which takes microseconds per
partition. The gauges are the conditions operators page on:

* ``weir_broker_under_replicated_partitions``: partitions led here whose ISR is smaller than
  their replica set (a follower is down or behind);
* ``weir_broker_under_min_isr_partitions``: partitions led here whose ISR is below
  ``min.insync.replicas``: acks=all produces to them fail with NOT_ENOUGH_REPLICAS;
* ``weir_broker_offline_partitions``: partitions this broker hosts a replica of that have no
  leader in its cluster map (a partition whose every replica is down is reported by the
  controller, ``weir_controller_offline_partitions``);
* ``weir_broker_data_dir_free_bytes`` against ``..._total_bytes``: the disk filling up;

and counters kept by the replication (``weir_broker_isr_shrinks_total``,
``weir_broker_isr_expands_total``). Readiness is exported as ``weir_broker_ready`` (what the
gRPC health service says for ""), so a dashboard shows a broker that is up but not serving.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from broker_nodes.cluster_state import NO_LEADER
from broker_nodes.server.broker import Broker


class BrokerStateCollector(Collector):
    """Collects the gauges of the module docstring from ``broker``; ``ready`` says whether the broker serves."""

    def __init__(self, broker: Broker, *, ready: Callable[[], bool]) -> None:
        self._broker = broker
        self._ready = ready

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        broker = self._broker
        yield GaugeMetricFamily(
            "weir_broker_ready", "1 while the broker reports SERVING (logs recovered and, with a controller, registered).", value=int(self._ready())
        )
        controller = broker.controller
        if controller is not None:
            yield GaugeMetricFamily(
                "weir_broker_controller_registered",
                "1 while the broker has a session with the controller (a broker epoch).",
                value=int(controller.broker_epoch != 0),
            )
        yield from self._partition_gauges()
        yield from self._log_gauges()
        changes = broker.replication.isr_changes
        yield CounterMetricFamily("weir_broker_isr_shrinks", "Committed ISR shrinks of partitions led here (followers dropped).", value=changes.shrinks)
        yield CounterMetricFamily("weir_broker_isr_expands", "Committed ISR expansions of partitions led here (followers caught up).", value=changes.expands)
        yield GaugeMetricFamily(
            "weir_broker_replica_fetchers", "Fetcher threads following other brokers' partitions.", value=broker.replication.fetcher_count()
        )

    def _partition_gauges(self) -> Iterator[GaugeMetricFamily]:
        broker = self._broker
        replication = broker.replication
        node_id = broker.config.node_id
        under_replicated = under_min_isr = 0
        for tracker in replication.leader_trackers():
            isr_size = len(tracker.isr)
            if isr_size < len(tracker.replicas):
                under_replicated += 1
            if isr_size < replication.min_insync_replicas(tracker.topic):
                under_min_isr += 1
        snapshot = broker.cluster_state.snapshot
        if snapshot is None:
            # Standalone: the broker leads every partition it hosts, each with itself as the only replica.
            led = len(broker.log_manager.logs())
            offline = 0
        else:
            assignments = [assignment for topic in snapshot.topics.values() for assignment in topic.partitions]
            led = sum(1 for assignment in assignments if assignment.leader_id == node_id)
            offline = sum(1 for assignment in assignments if assignment.leader_id == NO_LEADER and node_id in assignment.replicas)
        yield GaugeMetricFamily("weir_broker_leader_partitions", "Partitions this broker leads.", value=led)
        yield GaugeMetricFamily(
            "weir_broker_under_replicated_partitions", "Partitions led here whose ISR is smaller than their replica set.", value=under_replicated
        )
        yield GaugeMetricFamily(
            "weir_broker_under_min_isr_partitions", "Partitions led here whose ISR is below min.insync.replicas (acks=all produces fail).", value=under_min_isr
        )
        yield GaugeMetricFamily("weir_broker_offline_partitions", "Partitions with a replica on this broker and no leader in its cluster map.", value=offline)

    def _log_gauges(self) -> Iterator[GaugeMetricFamily]:
        broker = self._broker
        logs = broker.log_manager.logs()
        yield GaugeMetricFamily("weir_broker_partitions", "Partition logs hosted on this broker (leader or follower).", value=len(logs))
        yield GaugeMetricFamily(
            "weir_broker_log_size_bytes", "Bytes of every segment of every log hosted on this broker.", value=sum(log.size_in_bytes for log in logs)
        )
        yield GaugeMetricFamily("weir_broker_log_segments", "Segments of every log hosted on this broker.", value=sum(log.segment_count for log in logs))
        try:
            usage = shutil.disk_usage(broker.config.data_dir)
        except OSError:
            return  # the directory is gone (being deleted at shutdown): report no disk figures
        yield GaugeMetricFamily("weir_broker_data_dir_free_bytes", "Bytes free on the file system of the data directory.", value=usage.free)
        yield GaugeMetricFamily("weir_broker_data_dir_total_bytes", "Size of the file system of the data directory.", value=usage.total)
