"""Followers replicate transactional batches and markers with the same bookkeeping as the leader:
the last stable offset, the .txnindex, and read_committed answers after a leadership move."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.broker_nodes.replication.cluster import TENANT, TOPIC, ReplicatedCluster, wait_until
from tests.broker_nodes.security.managed_cluster import as_tenant
from weir.records import RecordBatchBuilder

START_MS = 1_700_000_000_000


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    running = ReplicatedCluster(tmp_path, topic_configs={"segment.bytes": "1024"})
    try:
        yield running
    finally:
        running.stop()


def transactional(producer_id: int, sequence: int, value: bytes) -> bytes:
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=0, base_sequence=sequence, transactional=True)
    builder.append(START_MS, None, value)
    return builder.build()


def read_committed_fetch(cluster: ReplicatedCluster, node_id: int) -> broker_pb2.FetchPartitionResponse:
    request = broker_pb2.FetchRequest(
        max_wait_ms=0,
        isolation_level=broker_pb2.READ_COMMITTED,
        topics=[broker_pb2.FetchTopic(topic=TOPIC, partitions=[broker_pb2.FetchPartition(partition=0, fetch_offset=0, current_leader_epoch=-1)])],
    )
    return cluster.nodes[node_id].stub.Fetch(request, metadata=as_tenant(TENANT), timeout=10).topics[0].partitions[0]


def test_followers_replay_markers_into_the_same_lso_and_txn_index_and_serve_them_as_leader(cluster: ReplicatedCluster) -> None:
    cluster.apply(leader=1, epoch=1)
    leader = cluster.log(1)
    filler = b"." * 150
    for round_number in range(6):
        producer = 10 + round_number % 2
        leader.append_as_leader(transactional(producer, round_number // 2, b"t%d" % round_number + filler), 1)
        assert cluster.produce(1, [b"plain-%d" % round_number + filler]).error_code == 0
        leader.append_marker(producer, 0, commit=round_number % 3 == 0, coordinator_epoch=0, leader_epoch=1)
    leader.append_as_leader(transactional(12, 0, b"open" + filler), 1)
    assert cluster.produce(1, [b"last"]).error_code == 0  # acks=all: the followers have everything before it
    assert leader.segment_count > 1
    wait_until(
        lambda: all(cluster.log(node).log_end_offset == leader.log_end_offset and cluster.log(node).high_watermark == leader.high_watermark for node in (2, 3)),
        what="followers caught up with the leader's log and high watermark",
    )
    expected = leader.aborted_transactions(0, leader.log_end_offset)
    assert len(expected) == 4
    for node in (2, 3):
        follower = cluster.log(node)
        assert follower.last_stable_offset == leader.last_stable_offset < leader.high_watermark
        assert follower.aborted_transactions(0, follower.log_end_offset) == expected
        assert [segment.txn_index.path.read_bytes() for segment in follower.segments] == [segment.txn_index.path.read_bytes() for segment in leader.segments]
    answer_before = read_committed_fetch(cluster, 1)
    cluster.apply(leader=2, epoch=2)
    wait_until(lambda: read_committed_fetch(cluster, 2).error_code == 0, what="broker 2 leads")
    answer_after = read_committed_fetch(cluster, 2)
    assert answer_after.last_stable_offset == answer_before.last_stable_offset
    assert list(answer_after.aborted_transactions) == list(answer_before.aborted_transactions)
    assert answer_after.records == answer_before.records
