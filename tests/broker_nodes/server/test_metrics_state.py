"""A broker's state gauges: under-replicated, under-min-ISR and offline partitions, ISR shrinks
and expansions (counted when they become the committed ISR)."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from broker_nodes.replication.isr import IsrChangeCounts, IsrTracker
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc
from tests.broker_nodes.security.managed_cluster import INTERNAL_TOKEN, brokers, topic
from tests.support.in_process_broker import InProcessBroker
from tests.support.processes import free_port
from tests.support.waiting import wait_until


def _gauges(broker: InProcessBroker) -> dict[str, float]:
    text = broker.running.metrics.exposition().decode("utf-8")  # type: ignore[union-attr]
    return {sample.name: sample.value for family in text_string_to_metric_families(text) for sample in family.samples if not sample.labels}


def test_a_leader_whose_followers_never_fetch_reports_under_replicated_and_under_min_isr(tmp_path: Path) -> None:
    configs = {"replica.lag.time.max.ms": "100", "offsets.topic.num.partitions": "1"}
    broker = InProcessBroker(tmp_path / "data", configs, environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN}).start()
    try:
        # Brokers 2 and 3 are in the map but nothing answers at their ports: they never fetch.
        replicated = topic("tn-m", "replicated", configs={"min.insync.replicas": "2"})
        replicated.partitions[0].replicas[:] = [1, 2, 3]
        replicated.partitions[0].isr[:] = [1, 2, 3]
        leaderless = topic("tn-m", "leaderless")
        leaderless.partitions[0].leader_id = -1
        leaderless.partitions[0].replicas[:] = [1, 2]
        leaderless.partitions[0].isr[:] = [2]
        request = admin_pb2.ApplyPartitionsRequest(
            version=1, cluster_id="metrics", brokers=brokers((1, broker.port), (2, free_port()), (3, free_port())), topics=[replicated, leaderless]
        )
        admin_pb2_grpc.AdminStub(broker.channel).ApplyPartitions(request, metadata=(("x-weir-internal-token", INTERNAL_TOKEN),), timeout=10)
        # The shrink is counted a moment before the gauges read the new ISR (seen on a loaded machine): wait for both.
        gauges = wait_until(
            lambda: (now := _gauges(broker))["weir_broker_isr_shrinks_total"] >= 1 and now["weir_broker_under_replicated_partitions"] >= 1 and now,
            "the ISR shrink counted and the partition under-replicated",
            30,
        )
        assert gauges["weir_broker_isr_shrinks_total"] == 1  # both followers dropped in one change
        assert gauges["weir_broker_isr_expands_total"] == 0
        assert gauges["weir_broker_under_replicated_partitions"] == 1
        assert gauges["weir_broker_under_min_isr_partitions"] == 1
        assert gauges["weir_broker_offline_partitions"] == 1
        assert gauges["weir_broker_leader_partitions"] == 1
        assert gauges["weir_broker_ready"] == 1
    finally:
        broker.stop()


def _tracker(counts: IsrChangeCounts, *, confirm: bool) -> IsrTracker:
    return IsrTracker(
        "t",
        0,
        leader_id=1,
        leader_epoch=1,
        leader_epoch_start_offset=0,
        replicas=[1, 2, 3],
        isr=[1, 2, 3],
        now_ms=0,
        confirm_changes=confirm,
        change_counts=counts,
    )


def test_without_a_controller_a_shrink_counts_when_it_is_made() -> None:
    counts = IsrChangeCounts()
    tracker = _tracker(counts, confirm=False)
    dropped, isr = tracker.shrink(now_ms=1_000, max_lag_ms=100)
    assert dropped == (2, 3) and isr == (1,)
    assert (counts.shrinks, counts.expands) == (1, 0)
    assert tracker.record_fetch(2, 0, leader_log_end_offset=0, high_watermark=0, now_ms=1_001) == (1, 2)
    assert (counts.shrinks, counts.expands) == (1, 1)


def test_with_a_controller_only_a_stored_change_counts() -> None:
    counts = IsrChangeCounts()
    tracker = _tracker(counts, confirm=True)
    _, proposed = tracker.shrink(now_ms=1_000, max_lag_ms=100)
    assert (counts.shrinks, counts.expands) == (0, 0)  # only proposed so far
    tracker.abandon(proposed)
    assert (counts.shrinks, counts.expands) == (0, 0)  # the controller refused it
    _, proposed = tracker.shrink(now_ms=2_000, max_lag_ms=100)
    assert tracker.confirm(proposed, [1])
    assert (counts.shrinks, counts.expands) == (1, 0)
    assert not tracker.confirm(proposed, [1])  # a stale answer changes nothing
    assert (counts.shrinks, counts.expands) == (1, 0)
