"""Failure detection by connection loss, with `make up`'s session timeout (9 s).

A killed broker (kill -9) closes its lease stream to the controller at once and its address
refuses connections: the controller fences it after the short disconnect grace and the
partition gets a new leader long before the session timeout would have fired. A frozen broker
(SIGSTOP) keeps its connections: it is fenced only when its session times out, never sooner.
"""

from __future__ import annotations

import time

import pytest

from tests.support.real_cluster import ClusterTimings, RealCluster

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(180)]

TOPIC = "disconnect"
# `make up`'s defaults (deploy.local, broker_nodes.config): detection must not rely on a short timeout.
TIMINGS = ClusterTimings(session_timeout_ms=9000, heartbeat_interval_ms=2000, replica_lag_time_max_ms=30000)
SESSION_TIMEOUT_SECONDS = TIMINGS.session_timeout_ms / 1000
# A broker heartbeated at most one interval before it froze or died (two on a busy machine): its
# session cannot expire sooner than this after that.
EARLIEST_SESSION_END_SECONDS = (TIMINGS.session_timeout_ms - 2 * TIMINGS.heartbeat_interval_ms) / 1000


def _replicated_topic(cluster: RealCluster) -> int:
    cluster.create_tenant()
    cluster.create_topic(TOPIC, 1, 3, {"min.insync.replicas": "2"})
    cluster.wait_for_full_isr(TOPIC)
    return cluster.leader_of(TOPIC, 0)


def test_a_killed_leader_is_replaced_before_its_session_timeout(start_cluster) -> None:  # type: ignore[no-untyped-def]
    cluster = start_cluster(timings=TIMINGS)
    leader = _replicated_topic(cluster)
    epoch = cluster.partition_row(TOPIC, 0).leader_epoch
    cluster.kill(leader)
    # Polled for less than the earliest its session could expire: only the closed connection fences it this soon.
    new_leader = cluster.wait_until(
        lambda: (row := cluster.partition_row(TOPIC, 0)).leader not in (leader, -1) and row.leader_epoch > epoch and row.leader,
        f"a new leader after kill -9 of broker {leader}, before its {SESSION_TIMEOUT_SECONDS:g} s session timeout",
        EARLIEST_SESSION_END_SECONDS,
    )
    assert new_leader != leader
    assert cluster.broker_state(leader) == "OFFLINE"
    assert "refuses connections (the process is gone); fencing it" in cluster.controller.log_path.read_text(), cluster.log_tails()


def test_a_frozen_broker_is_fenced_by_its_session_timeout_only(start_cluster) -> None:  # type: ignore[no-untyped-def]
    cluster = start_cluster(timings=TIMINGS)
    leader = _replicated_topic(cluster)
    cluster.sigstop(leader)
    frozen_at = time.monotonic()
    try:
        cluster.wait_until(lambda: cluster.broker_state(leader) == "OFFLINE", f"frozen broker {leader} fenced by its session timeout", 60.0)
        frozen_for = time.monotonic() - frozen_at
    finally:
        cluster.sigcont(leader)
    assert frozen_for >= EARLIEST_SESSION_END_SECONDS, (
        f"frozen broker {leader} was fenced {frozen_for:.1f} s after SIGSTOP, before its session could have expired\n{cluster.log_tails()}"
    )
    # It comes back by itself once it runs again (it registers anew).
    cluster.wait_until(lambda: cluster.broker_state(leader) == "ONLINE", f"broker {leader} registered again after SIGCONT", 60.0)
