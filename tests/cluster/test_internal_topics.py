"""Internal topics are replicated like tenants' topics: ``__consumer_offsets`` reaches every
broker, and a group's committed offsets survive the loss of its coordinator.

The coordinator of a group is the leader of the group's ``__consumer_offsets`` partition; a
commit is acknowledged once the partition's ISR has it, so after a kill -9 of the coordinator
the new leader of that partition serves the same committed offsets.
"""

from __future__ import annotations

import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.support.real_cluster import ClusterTimings
from weir import Consumer, TopicPartition

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(120)]

OFFSETS_TOPIC = "__consumer_offsets"
TOPIC = "progress"
GROUP = "billing"
TIMINGS = ClusterTimings(session_timeout_ms=2000)
FAILOVER_SECONDS = TIMINGS.session_timeout_ms / 1000 + 15


def test_offsets_topic_is_replicated_to_every_broker_and_committed_offsets_survive_a_coordinator_kill(start_cluster) -> None:
    cluster = start_cluster(timings=TIMINGS)

    def fully_replicated() -> bool:
        rows = cluster.internal_partition_rows(OFFSETS_TOPIC)
        return bool(rows) and all(len(row.replicas) == 3 and sorted(row.isr) == sorted(row.replicas) for row in rows)

    cluster.wait_until(fully_replicated, f"{OFFSETS_TOPIC} with 3 replicas per partition, all in sync", 30)
    cluster.create_tenant()
    cluster.create_topic(TOPIC, 1, 3)
    consumer = Consumer(cluster.client_config(**{"group.id": GROUP, "enable.auto.commit": False}))
    try:
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, 42)], asynchronous=False)
    finally:
        consumer.close()
    [coordinator] = cluster.call_broker(1, "FindCoordinator", broker_pb2.FindCoordinatorRequest(group_ids=[GROUP])).coordinators  # type: ignore[attr-defined]
    assert coordinator.error_code == 0, coordinator
    led = [row.index for row in cluster.internal_partition_rows(OFFSETS_TOPIC) if row.leader == coordinator.node_id]
    cluster.kill(coordinator.node_id)
    cluster.wait_until(
        lambda: all(row.leader not in (coordinator.node_id, -1) for row in cluster.internal_partition_rows(OFFSETS_TOPIC) if row.index in led),
        f"the {OFFSETS_TOPIC} partitions of killed coordinator {coordinator.node_id} led by another in-sync replica",
        FAILOVER_SECONDS,
    )
    survivors = sorted(cluster.running_nodes())
    consumer = Consumer(cluster.client_config(**{"group.id": GROUP, "enable.auto.commit": False, "bootstrap.servers": cluster.bootstrap_servers(survivors)}))
    try:
        [committed] = consumer.committed([TopicPartition(TOPIC, 0)], timeout=20)
    finally:
        consumer.close()
    assert committed.offset == 42, f"committed offset after the coordinator's kill: {committed}"
