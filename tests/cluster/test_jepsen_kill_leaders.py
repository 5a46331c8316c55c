"""Jepsen-style proof of replication: kill -9 partition leaders while idempotent acks=all
producers write, restart the killed brokers, then read everything back.

What must hold (Kafka's guarantees for acks=all, min.insync.replicas=2, unclean election off):
every acknowledged record is read back at the offset it was acknowledged at; no record is
stored twice (idempotence across retries and failovers); each producer's records keep their
order within a partition; the three replicas of each partition end up byte-for-byte the same
records at the same offsets (no divergent tail survives a failover).

The nemesis picks a random partition every 3-5 s and kills its leader; usually it waits for
the controller to move the leaderships (session timeout), sometimes it restarts the broker
at once, before its session expires. It restarts the broker after a random pause and waits
for it to rejoin every ISR before the next kill, so that a kill never takes the last
in-sync replica. ``WEIR_JEPSEN_SEED`` replays a run (the seed is in every failure);
``WEIR_JEPSEN_NEMESIS_SECONDS`` (20 in the suite) makes it a longer soak.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable

import pytest

from tests.cluster.workload import (
    ProducerWorkload,
    check_acknowledged_records_read_back,
    check_consumed_matches_replicas,
    check_no_duplicates,
    check_producer_order,
    check_replicas_agree,
    read_everything,
)
from tests.support.real_cluster import ClusterTimings, RealCluster

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(360)]

TOPIC = "jepsen"
PARTITIONS = 3
# Faults are injected for at least this long (WEIR_JEPSEN_NEMESIS_SECONDS: a longer soak run) ...
NEMESIS_SECONDS = float(os.environ.get("WEIR_JEPSEN_NEMESIS_SECONDS") or 20.0)
MIN_KILLS = 4  # ... and until this many leaders were killed (a third of them restarted at once, on average)
NEMESIS_MAX_SECONDS = 120.0  # but never longer than this
KILL_INTERVAL_SECONDS = (3.0, 5.0)  # between two kills, drawn uniformly
RESTART_PAUSE_SECONDS = (0.0, 1.0)  # between the failover (or the kill) and the restart, drawn uniformly
# Share of kills whose broker is restarted at once, before the controller notices it died: it
# comes back with the same leader epoch and must rebuild its state from its files.
QUICK_RESTART_SHARE = 1 / 3
QUIET_PRODUCE_SECONDS = 2.0  # producing goes on this long after the last fault
TIMINGS = ClusterTimings(session_timeout_ms=2000, replica_lag_time_max_ms=2000)
# Longest a killed broker's leaderships take to move: the session timeout, the controller's
# one-second check, the push, with room for a loaded machine.
FAILOVER_SECONDS = TIMINGS.session_timeout_ms / 1000 + 15


def kill_leaders_for(cluster: RealCluster, rng: random.Random, seconds: float, *, min_kills: int = MIN_KILLS) -> list[str]:
    """The nemesis (see the module docstring); returns what it did, one line per kill.

    It runs for ``seconds`` and on until it has killed ``min_kills`` leaders (on a loaded machine
    a restarted broker takes longer to rejoin every ISR), never past NEMESIS_MAX_SECONDS."""
    history: list[str] = []
    started = time.monotonic()
    while (time.monotonic() - started < seconds or len(history) < min_kills) and time.monotonic() - started < NEMESIS_MAX_SECONDS:
        next_kill = time.monotonic() + rng.uniform(*KILL_INTERVAL_SECONDS)
        partition = rng.randrange(PARTITIONS)
        victim = cluster.leader_of(TOPIC, partition)
        assert victim != -1, f"partition {partition} has no leader before kill {len(history) + 1}; history {history}"
        quick_restart = rng.random() < QUICK_RESTART_SHARE
        killed_at = time.monotonic()
        cluster.kill(victim)
        if quick_restart:
            what = "restarted before its session expired"
        else:
            cluster.wait_until(
                lambda victim=victim: all(row.leader not in (victim, -1) for row in cluster.partition_rows(TOPIC)),
                f"the partitions of killed broker {victim} led by another in-sync replica (history {history})",
                FAILOVER_SECONDS,
            )
            what = f"failed over in {time.monotonic() - killed_at:.1f}s"
        time.sleep(rng.uniform(*RESTART_PAUSE_SECONDS))
        cluster.start_broker(victim)
        history.append(f"t+{killed_at - started:.1f}s killed broker {victim} (leader of partition {partition}), {what}")
        cluster.wait_for_full_isr(TOPIC, timeout=30)
        time.sleep(max(0.0, next_kill - time.monotonic()))
    return history


def run_jepsen(start_cluster, producers: Callable[[RealCluster], list[ProducerWorkload]]) -> None:  # type: ignore[no-untyped-def]
    """One run: a cluster, a replicated topic, the ``producers`` writing while the nemesis kills
    leaders, then every check of the module docstring (safety, then liveness)."""
    seed = int(os.environ.get("WEIR_JEPSEN_SEED") or random.SystemRandom().randrange(2**32))
    rng = random.Random(seed)
    cluster = start_cluster(timings=TIMINGS)
    cluster.create_tenant()
    cluster.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
    workloads = [workload.start() for workload in producers(cluster)]
    try:
        history = kill_leaders_for(cluster, rng, NEMESIS_SECONDS)
        acknowledged_before_quiet = sum(workload.acknowledged_count() for workload in workloads)
        time.sleep(QUIET_PRODUCE_SECONDS)
    finally:
        ledgers = [workload.stop() for workload in workloads]
    run = f"seed {seed}; {len(history)} kills:\n  " + "\n  ".join(history) + "\n" + "\n".join(ledger.summary() for ledger in ledgers)

    assert len(history) >= MIN_KILLS, f"the nemesis ran too few kills to prove anything; {run}"
    end_offsets = cluster.wait_for_replicas_in_sync(TOPIC)
    consumed = read_everything(cluster.client_config(), TOPIC, end_offsets)
    problems = check_acknowledged_records_read_back(ledgers, consumed) + check_no_duplicates(consumed) + check_producer_order(consumed)
    for partition in range(PARTITIONS):
        replicas = cluster.replica_logs(TOPIC, partition)
        problems += check_replicas_agree(partition, replicas) + check_consumed_matches_replicas(partition, consumed, replicas)
    assert not problems, f"{len(problems)} violations, first 20:\n" + "\n".join(problems[:20]) + f"\n{run}"

    # Liveness: the cluster kept taking records through the faults and, once they ended,
    # took every record (a delivery fails only after delivery.timeout.ms, longer than this test).
    assert acknowledged_before_quiet > 0, run
    assert all(not ledger.failed and not ledger.produce_errors for ledger in ledgers), (
        f"deliveries failed: {[dict(list(ledger.failed.items())[:3]) for ledger in ledgers]}\n{run}"
    )
    assert all(set(ledger.acknowledged) == set(ledger.sent) for ledger in ledgers), f"records never acknowledged; {run}"
    assert not consumed.errors, f"consumer errors {consumed.errors[:5]}; {run}"


def test_acknowledged_records_survive_leader_kills_without_duplicates_or_divergence(start_cluster) -> None:  # type: ignore[no-untyped-def]
    # Both producers bootstrap from the same list: they initialise at the same broker (see
    # test_producer_ids for producers initialised at different brokers).
    run_jepsen(
        start_cluster,
        lambda cluster: [ProducerWorkload(cluster.client_config(), TOPIC, PARTITIONS, name) for name in ("p1", "p2")],
    )
