"""Two leaders killed one after the other, each holding records its followers never fetched.

Each round freezes the leader's followers (SIGSTOP, shorter than replica.lag.time.max.ms so
they stay in the ISR), writes a burst with acks=1 that only the leader stores, kills the
leader with kill -9 and lets the followers run again: the controller elects one of them, whose
log lacks the burst, and new records take those offsets. The second round does the same to
the new leader at once. When every broker is back, each one that held a divergent tail must
have truncated it (OffsetForLeaderEpoch) and fetched the leader's records instead: all three
logs are the same records at the same offsets, and every record acknowledged with acks=all
(by an idempotent producer running throughout) is there exactly once.
"""

from __future__ import annotations

import time

import pytest

from tests.cluster.workload import (
    ProducerWorkload,
    check_acknowledged_records_read_back,
    check_consumed_matches_replicas,
    check_no_duplicates,
    check_producer_order,
    check_replicas_agree,
    produce_and_wait,
    read_everything,
    record_value,
)
from tests.support.real_cluster import ClusterTimings, RealCluster, ReplicaLog

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(180)]

TOPIC = "diverge"
# A frozen follower stays in the ISR (its lag is shorter than replica.lag.time.max.ms), so
# that it is electable when the leader dies.
TIMINGS = ClusterTimings(session_timeout_ms=2000, replica_lag_time_max_ms=4000)
FAILOVER_SECONDS = TIMINGS.session_timeout_ms / 1000 + 15
FETCH_SETTLE_SECONDS = 3 * TIMINGS.replica_fetch_wait_max_ms / 1000
BURST = 20  # acks=1 records only the doomed leader stores
ACKS_ONE = {"acks": "1", "enable.idempotence": False, "retries": 0}


def kill_leader_holding_a_tail(cluster: RealCluster, round_name: str) -> tuple[int, ReplicaLog]:
    """One round (see the module docstring); (the killed leader, its log as it died)."""
    leader = cluster.leader_of(TOPIC, 0)
    cluster.wait_until(lambda: cluster.hosted(leader, TOPIC)[0].is_leader, f"broker {leader} leading {TOPIC} ({round_name})", 10)
    followers = sorted(cluster.running_nodes() - {leader})
    for follower in followers:
        cluster.sigstop(follower)
    try:
        # A fetch parked at the leader before the freeze answers (empty) within
        # replica.fetch.wait.max.ms; the burst must come after, or that answer would carry it
        # to the frozen follower's socket, to be read when it runs again.
        time.sleep(FETCH_SETTLE_SECONDS)
        results = produce_and_wait(
            cluster.client_config(**{"bootstrap.servers": cluster.bootstrap_servers([leader])}, **ACKS_ONE),
            TOPIC,
            0,
            [record_value(f"acks-one-{round_name}", index) for index in range(BURST)],
        )
        assert all(error is None for error, _ in results), f"acks=1 burst to leader {leader} failed ({round_name}): {results[:3]}"
        cluster.kill(leader)
    finally:
        for follower in followers:
            cluster.sigcont(follower)
    [log] = cluster.replica_logs(TOPIC, 0, nodes=[leader])
    cluster.wait_until(lambda: cluster.leader_of(TOPIC, 0) in followers, f"a follower of killed broker {leader} elected ({round_name})", FAILOVER_SECONDS)
    return leader, log


def test_divergent_tails_of_two_killed_leaders_are_truncated_and_replicas_agree(start_cluster) -> None:
    cluster = start_cluster(timings=TIMINGS)
    cluster.create_tenant()
    cluster.create_topic(TOPIC, 1, 3, {"min.insync.replicas": "2"})
    with ProducerWorkload(cluster.client_config(), TOPIC, 1, "safe").start() as safe:
        cluster.wait_until(lambda: safe.acknowledged_count() >= 50, "the acks=all producer under way", 30)

        first_leader, first_log = kill_leader_holding_a_tail(cluster, "first")
        # The second leader dies as soon as it leads, before the high watermark has caught up.
        second_leader, second_log = kill_leader_holding_a_tail(cluster, "second")
        # The last leader is alone in the ISR now: acks=all waits (min.insync.replicas 2) until the
        # killed brokers are back, have truncated their tails and caught up.
        last_leader, acknowledged = cluster.leader_of(TOPIC, 0), safe.acknowledged_count()
        cluster.start_broker(first_leader)
        cluster.start_broker(second_leader)
        cluster.wait_for_full_isr(TOPIC, timeout=30)
        cluster.wait_until(lambda: safe.acknowledged_count() >= acknowledged + 50, f"acks=all records acknowledged again by the last leader {last_leader}", 30)
        ledger = safe.stop()
    end_offsets = cluster.wait_for_replicas_in_sync(TOPIC)
    consumed = read_everything(cluster.client_config(), TOPIC, end_offsets)
    replicas = cluster.replica_logs(TOPIC, 0)
    final = dict(consumed.records[0])

    problems = check_replicas_agree(0, replicas) + check_consumed_matches_replicas(0, consumed, replicas)
    problems += check_acknowledged_records_read_back([ledger], consumed) + check_no_duplicates(consumed) + check_producer_order(consumed)
    assert not problems, f"{len(problems)} violations, first 20:\n" + "\n".join(problems[:20]) + f"\n{ledger.summary()}"
    assert not ledger.failed, ledger.summary()
    # The scenario really diverged: each killed leader held records at offsets that now hold others (or none).
    for broker, log in ((first_leader, first_log), (second_leader, second_log)):
        replaced = [offset for offset, value in log.values.items() if final.get(offset) != value]
        assert replaced, f"broker {broker} held no divergent tail when it was killed: the test did not exercise truncation"
