"""A rolling restart: every broker in turn gets SIGTERM (controlled shutdown) and comes back,
while an idempotent acks=all producer and a consumer run.

A controlled shutdown moves the broker's leaderships to other in-sync replicas before it
stops, so clients see at most retriable errors (a leader that moved, a connection that
closed): no delivery fails, the consumer reports nothing but retriable errors, and it reads
every acknowledged record exactly once, in order.
"""

from __future__ import annotations

import pytest

from tests.cluster.workload import (
    ConsumerWorkload,
    ProducerWorkload,
    check_acknowledged_records_read_back,
    check_no_duplicates,
    check_producer_order,
    check_replicas_agree,
)
from tests.support.real_cluster import ClusterTimings, RealCluster

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(180)]

TOPIC = "bounce"
PARTITIONS = 3
TIMINGS = ClusterTimings(session_timeout_ms=3000, replica_lag_time_max_ms=2000)
CONTROLLED_SHUTDOWN_LOG_LINE = "controlled shutdown: the controller moved every leadership away"


def bounce(cluster: RealCluster, node_id: int, producer: ProducerWorkload) -> None:
    """SIGTERM broker ``node_id``, check that it handed its leaderships over, start it again
    and wait until it is back in every ISR and the producer goes on."""
    exit_code = cluster.terminate(node_id)
    assert exit_code == 0, f"broker {node_id} exited with {exit_code} after SIGTERM\n{cluster.log_tails()}"
    assert CONTROLLED_SHUTDOWN_LOG_LINE in cluster.brokers[node_id].read_log(), (
        f"broker {node_id} stopped without a complete controlled shutdown\n{cluster.log_tails()}"
    )
    assert cluster.broker_state(node_id) == "STOPPED"
    assert all(row.leader not in (node_id, -1) for row in cluster.partition_rows(TOPIC)), [(row.index, row.leader) for row in cluster.partition_rows(TOPIC)]
    cluster.start_broker(node_id)
    cluster.wait_for_full_isr(TOPIC, timeout=30)
    acknowledged = producer.acknowledged_count()
    cluster.wait_until(lambda: producer.acknowledged_count() >= acknowledged + 30, f"the producer acknowledged again after broker {node_id} came back", 30)


def test_rolling_restart_with_controlled_shutdowns_shows_clients_only_retriable_errors(start_cluster) -> None:
    cluster = start_cluster(timings=TIMINGS)
    cluster.create_tenant()
    cluster.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
    with (
        ProducerWorkload(cluster.client_config(), TOPIC, PARTITIONS, "bounce").start() as producer,
        ConsumerWorkload(cluster.client_config(), TOPIC, PARTITIONS).start() as consumer,
    ):
        cluster.wait_until(lambda: producer.acknowledged_count() >= 50, "the producer under way", 30)
        for node_id in sorted(cluster.brokers):
            bounce(cluster, node_id, producer)
        ledger = producer.stop()
        end_offsets = cluster.wait_for_replicas_in_sync(TOPIC)
        cluster.wait_until(lambda: consumer.positions() == end_offsets, f"the consumer at the end offsets {end_offsets}", 30)
        consumed = consumer.stop()

    assert not ledger.failed and not ledger.produce_errors, ledger.summary()
    assert set(ledger.acknowledged) == set(ledger.sent), f"records never acknowledged: {ledger.summary()}"
    assert all(error.retriable() for error in ledger.client_errors), f"producer errors {ledger.client_errors}"
    assert all(error.retriable() for error in consumed.errors + consumer.client_errors), f"consumer errors {consumed.errors[:5]} {consumer.client_errors[:5]}"
    problems = check_acknowledged_records_read_back([ledger], consumed) + check_no_duplicates(consumed) + check_producer_order(consumed)
    for partition in range(PARTITIONS):
        problems += check_replicas_agree(partition, cluster.replica_logs(TOPIC, partition))
    assert not problems, f"{len(problems)} violations, first 20:\n" + "\n".join(problems[:20]) + f"\n{ledger.summary()}"
