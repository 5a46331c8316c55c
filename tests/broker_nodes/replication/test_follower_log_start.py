"""Followers and the leader's log start: mirrored on every fetch, and a follower left behind it catches up from it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_nodes.replication.cluster import QUALIFIED, ReplicatedCluster, wait_until
from weir.errors import ErrorCode

# Segments of about four batches, and retention by size only (the test batches carry 2023
# timestamps, which retention.ms would find expired).
SMALL_SEGMENTS = {"min.insync.replicas": "2", "segment.bytes": "1024", "retention.bytes": "2048", "retention.ms": "-1"}
VALUE = b"v" * 180


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    running = ReplicatedCluster(tmp_path, topic_configs=SMALL_SEGMENTS)
    try:
        yield running
    finally:
        running.stop()


def produce_batches(cluster: ReplicatedCluster, count: int) -> None:
    for number in range(count):
        response = cluster.produce(1, [VALUE, b"%d" % number])
        assert response.error_code == ErrorCode.NO_ERROR, response.error_message


def apply_retention_on_leader(cluster: ReplicatedCluster) -> int:
    leader = cluster.nodes[1].broker
    leader.log_manager.run_maintenance()
    return cluster.log(1).log_start_offset


def test_followers_mirror_the_leaders_log_start_and_delete_the_segments_below_it(cluster: ReplicatedCluster) -> None:
    cluster.apply(leader=1, epoch=1)
    produce_batches(cluster, 20)
    segments_before = cluster.log(2).segment_count
    log_start = apply_retention_on_leader(cluster)
    assert log_start > 0
    # Only the leader ran retention; the followers take its log start from their next fetch.
    # The log start moves first and the segments below it go right after, under the log's lock.
    wait_until(
        lambda: all(
            cluster.log(node).log_start_offset == log_start and all(segment.next_offset > log_start for segment in cluster.log(node).segments)
            for node in (2, 3)
        ),
        what="followers' log start and the segments below it deleted",
    )
    for node in (2, 3):
        assert cluster.log(node).segment_count < segments_before
    assert cluster.log_bytes(1) == cluster.log_bytes(2) == cluster.log_bytes(3)


def test_a_follower_behind_the_leaders_log_start_restarts_from_it_and_rejoins_the_isr(cluster: ReplicatedCluster) -> None:
    cluster.apply(leader=1, epoch=1)
    produce_batches(cluster, 3)
    wait_until(lambda: cluster.log(3).log_end_offset == cluster.log(1).log_end_offset, what="broker 3 to catch up")
    stopped_end = cluster.log(3).log_end_offset
    cluster.nodes[3].stop()
    wait_until(lambda: cluster.isr(1) == (1, 2), what="ISR to drop broker 3")

    produce_batches(cluster, 20)
    log_start = apply_retention_on_leader(cluster)
    assert log_start > stopped_end, "retention must delete offsets broker 3 never received"

    cluster.nodes[3].start()
    wait_until(lambda: cluster.isr(1) == (1, 2, 3), what="broker 3 back in the ISR")
    restarted = cluster.log(3)
    assert restarted.log_start_offset == log_start
    assert restarted.log_end_offset == cluster.log(1).log_end_offset
    assert cluster.log_bytes(3) == cluster.log_bytes(1)
    # It replicates from there on, and acks=all with three in-sync replicas works again.
    assert cluster.produce(1, [b"after"]).error_code == ErrorCode.NO_ERROR
    wait_until(lambda: cluster.log_bytes(3) == cluster.log_bytes(1), what="broker 3 to replicate the next batch")
    assert cluster.nodes[3].broker.log_manager.get_log(QUALIFIED, 0).leader_epoch_cache.entries[0][1] >= log_start
