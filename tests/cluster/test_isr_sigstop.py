"""Frozen followers (SIGSTOP): the leader shrinks the ISR, min.insync.replicas guards acks=all,
and the followers rejoin once they run again.

A SIGSTOPped broker neither fetches nor heartbeats. The session timeout is longer than
replica.lag.time.max.ms, so the leader's ISR shrink (proposed to the controller with
AlterPartition) is seen first; the controller fences the frozen brokers later, when their
sessions expire, and they register again after SIGCONT.
"""

from __future__ import annotations

import pytest

from tests.cluster.workload import deliver, produce_and_wait, read_everything
from tests.support.real_cluster import ClusterTimings, RealCluster
from weir import KafkaError, Producer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(180)]

TOPIC = "isr"
TIMINGS = ClusterTimings(session_timeout_ms=6000, replica_lag_time_max_ms=1500)
# The leader notices the lag within 1.5 x replica.lag.time.max.ms (it checks every half of
# it) and its AlterPartition takes milliseconds; the shrink must be seen well before the
# frozen broker's session expires, or it was the controller's fencing, not the leader.
SHRINK_SECONDS = TIMINGS.session_timeout_ms / 1000 - 0.5
# From the controller storing an ISR change to the leader knowing it: one answer in flight.
ANSWER_SECONDS = 3.0
ACKS_ALL = {"acks": "all", "enable.idempotence": True}
# One attempt, so that the broker's answer is the delivery report's error.
ACKS_ALL_NO_RETRIES = {"acks": "all", "enable.idempotence": False, "retries": 0}


def catalog_isr(cluster: RealCluster) -> list[int]:
    return sorted(cluster.partition_row(TOPIC, 0).isr)


def leader_isr(cluster: RealCluster, leader: int) -> list[int]:
    """The ISR as the leader itself reports it (DescribeState)."""
    return sorted(cluster.hosted(leader, TOPIC)[0].isr)


def shrink_by_the_leader(cluster: RealCluster, leader: int, *, frozen: int, expected_isr: list[int]) -> None:
    """Wait until the leader has dropped the ``frozen`` broker from the ISR, in the catalog and
    in its own view, before that broker's session expired (same leader epoch: no fencing)."""
    epoch = cluster.partition_row(TOPIC, 0).leader_epoch
    cluster.wait_until(
        lambda: catalog_isr(cluster) == expected_isr, f"the leader's ISR shrink to {expected_isr} (broker {frozen} frozen) in the catalog", SHRINK_SECONDS
    )
    row = cluster.partition_row(TOPIC, 0)
    assert (row.leader, row.leader_epoch) == (leader, epoch), (
        f"the ISR shrank by a failover, not by the leader: {row.leader=} {row.leader_epoch=}\n{cluster.log_tails()}"
    )
    # The controller answers the leader's AlterPartition once it has stored the change; until
    # the leader has the answer it counts the ISR it had (Kafka too), so the answer must come
    # at once, whatever state the frozen broker is in.
    cluster.wait_until(lambda: leader_isr(cluster, leader) == expected_isr, f"the leader's own ISR down to {expected_isr}", ANSWER_SECONDS)


def test_frozen_followers_shrink_the_isr_and_min_insync_replicas_refuses_acks_all(start_cluster) -> None:
    cluster = start_cluster(timings=TIMINGS)
    cluster.create_tenant()
    cluster.create_topic(TOPIC, 1, 3, {"min.insync.replicas": "2"})
    config = cluster.client_config()
    row = cluster.partition_row(TOPIC, 0)
    leader = row.leader
    first, second = [node_id for node_id in row.replicas if node_id != leader]
    # One idempotent producer for every acks=all write: its producer id stays the same (a new
    # producer may get another's id from another broker, see test_producer_ids).
    producer = Producer({**config, **ACKS_ALL, "linger.ms": 0})
    try:
        assert deliver(producer, TOPIC, 0, [b"all-three"]) == [(None, 0)]

        cluster.sigstop(first)
        shrink_by_the_leader(cluster, leader, frozen=first, expected_isr=sorted([leader, second]))
        assert deliver(producer, TOPIC, 0, [b"two-in-sync"]) == [(None, 1)], "acks=all with 2 in-sync replicas of min.insync.replicas 2 failed"

        cluster.sigstop(second)
        shrink_by_the_leader(cluster, leader, frozen=second, expected_isr=[leader])
        before = cluster.hosted(leader, TOPIC)[0]
        results = produce_and_wait({**config, **ACKS_ALL_NO_RETRIES}, TOPIC, 0, [b"refused"])
        assert results[0][0] is not None and results[0][0].code() == KafkaError.NOT_ENOUGH_REPLICAS, f"expected NOT_ENOUGH_REPLICAS, got {results}"
        after = cluster.hosted(leader, TOPIC)[0]
        assert (after.log_end_offset, after.high_watermark) == (before.log_end_offset, before.high_watermark) == (2, 2), "a refused record was appended"

        # Frozen past their session timeout, both followers are fenced; the leader stays.
        cluster.wait_until(
            lambda: cluster.broker_state(first) == cluster.broker_state(second) == "OFFLINE",
            "both frozen brokers fenced",
            TIMINGS.session_timeout_ms / 1000 + 15,
        )
        assert cluster.leader_of(TOPIC, 0) == leader
        cluster.sigcont(first)
        cluster.sigcont(second)
        cluster.wait_until(lambda: catalog_isr(cluster) == sorted(row.replicas), "ISR back to all three replicas after SIGCONT", 30)
        assert cluster.online_nodes() == {1, 2, 3}
        cluster.wait_until(lambda: leader_isr(cluster, leader) == sorted(row.replicas), "the leader's ISR back to all three replicas", 10)
        assert deliver(producer, TOPIC, 0, [b"all-three-again"]) == [(None, 2)]
    finally:
        producer.close(5)

    consumed = read_everything(config, TOPIC, cluster.wait_for_replicas_in_sync(TOPIC))
    assert consumed.records[0] == [(0, b"all-three"), (1, b"two-in-sync"), (2, b"all-three-again")]
    for replica in cluster.replica_logs(TOPIC, 0):
        assert replica.values == dict(consumed.records[0]), f"broker {replica.node_id} holds {replica.values}"
