"""Followers' fetch sessions across a lost session, a follower restart and a leader change: each
falls back to a full fetch and no record is lost (three in-process brokers, one cluster for the module)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from grpc_protos.weir.v1 import replication_pb2, replication_pb2_grpc
from tests.broker_nodes.replication.cluster import ReplicatedCluster, wait_until
from tests.broker_nodes.security.managed_cluster import INTERNAL_TOKEN
from weir.errors import ErrorCode
from weir.records import iter_records


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicatedCluster]:
    running = ReplicatedCluster(tmp_path_factory.mktemp("sessions"), topic_configs={"min.insync.replicas": "2"})
    try:
        yield running
    finally:
        running.stop()


def _produce_all(cluster: ReplicatedCluster, leader: int, tag: str) -> None:
    response = cluster.produce(leader, [f"{tag}-{index}".encode() for index in range(5)])
    assert response.error_code == ErrorCode.NO_ERROR, response.error_message


def _replicated(cluster: ReplicatedCluster, high_watermark: int) -> None:
    """Every replica holds the same bytes and knows the high watermark (bounded wait)."""
    wait_until(lambda: all(cluster.log(node).high_watermark == high_watermark for node in (1, 2, 3)), what=f"high watermark {high_watermark} everywhere")
    assert cluster.log_bytes(1) == cluster.log_bytes(2) == cluster.log_bytes(3)
    assert len(list(iter_records(cluster.log_bytes(1)))) == high_watermark


def test_lost_sessions_follower_restarts_and_leader_changes_fall_back_to_full_fetches_and_lose_nothing(cluster: ReplicatedCluster) -> None:
    cluster.apply(leader=1, epoch=1)
    _produce_all(cluster, 1, "first")
    _replicated(cluster, 5)
    sessions = cluster.nodes[1].broker.replication.fetch_sessions
    wait_until(lambda: len(sessions) == 2, what="a session per follower on the leader")

    # Replica 2's session is replaced behind its back (as after an eviction): its next
    # incremental fetch is refused FETCH_SESSION_ID_NOT_FOUND and it fetches in full again.
    stub = replication_pb2_grpc.ReplicationStub(cluster.nodes[1].channel)
    takeover = stub.ReplicaFetch(
        replication_pb2.ReplicaFetchRequest(replica_id=2, max_wait_ms=0, min_bytes=1, max_bytes=1024),
        metadata=(("x-weir-internal-token", INTERNAL_TOKEN),),
        timeout=10,
    )
    assert takeover.error_code == ErrorCode.NO_ERROR and takeover.session_id != 0
    stale = stub.ReplicaFetch(
        replication_pb2.ReplicaFetchRequest(replica_id=2, max_wait_ms=0, min_bytes=1, max_bytes=1024, session_id=takeover.session_id, session_epoch=5),
        metadata=(("x-weir-internal-token", INTERNAL_TOKEN),),
        timeout=10,
    )
    assert stale.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    _produce_all(cluster, 1, "after-takeover")  # acks=all: replica 2 must be back in a session to answer
    _replicated(cluster, 10)
    assert cluster.isr(1) == (1, 2, 3)

    # A follower restarts (a new port): its full fetch replaces its old session.
    cluster.nodes[3].restart()
    cluster.apply(leader=1, epoch=1)
    _produce_all(cluster, 1, "after-restart")
    _replicated(cluster, 15)
    wait_until(lambda: len(sessions) == 2, what="the restarted follower's session to replace its old one")

    # The leader changes: the followers open sessions with the new leader.
    cluster.apply(leader=2, epoch=2)
    wait_until(lambda: cluster.produce(2, [b"probe"], acks=1).error_code == ErrorCode.NO_ERROR, what="broker 2 to lead")
    _produce_all(cluster, 2, "new-leader")
    _replicated(cluster, 21)
    wait_until(lambda: len(cluster.nodes[2].broker.replication.fetch_sessions) == 2, what="sessions with the new leader")
