"""Leader/follower replication between three in-process brokers, driven by ApplyPartitions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_nodes.replication.cluster import ReplicatedCluster, wait_until
from weir.errors import ErrorCode
from weir.records import iter_records


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    running = ReplicatedCluster(tmp_path, topic_configs={"min.insync.replicas": "2"})
    try:
        yield running
    finally:
        running.stop()


def _values(records: bytes) -> list[bytes]:
    return [record.value for record in iter_records(records)]


def test_acks_all_produce_leaves_identical_bytes_on_every_replica(cluster: ReplicatedCluster) -> None:
    cluster.apply(leader=1, epoch=1)
    for round_number in range(3):
        response = cluster.produce(1, [f"value-{round_number}-{index}".encode() for index in range(5)])
        assert response.error_code == ErrorCode.NO_ERROR, response.error_message
        assert response.base_offset == round_number * 5
    # acks=all answered, so the leader's high watermark covers every batch; followers learn it on their next fetch.
    assert cluster.log(1).high_watermark == 15
    wait_until(lambda: all(cluster.log(node).high_watermark == 15 for node in (2, 3)), what="followers' high watermark")
    assert cluster.log_bytes(1) == cluster.log_bytes(2) == cluster.log_bytes(3)
    assert len(_values(cluster.log_bytes(3))) == 15


def test_follower_refuses_client_fetch_and_produce(cluster: ReplicatedCluster) -> None:
    cluster.apply(leader=1, epoch=1)
    assert cluster.produce(2, [b"x"], acks=1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert cluster.fetch(3).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_stopped_followers_shrink_the_isr_and_min_insync_replicas_guards_acks_all(cluster: ReplicatedCluster) -> None:
    cluster.apply(leader=1, epoch=1)
    assert cluster.produce(1, [b"first"]).error_code == ErrorCode.NO_ERROR
    cluster.nodes[3].stop()
    wait_until(lambda: cluster.isr(1) == (1, 2), what="ISR to drop broker 3")
    response = cluster.produce(1, [b"with-two"])
    assert response.error_code == ErrorCode.NO_ERROR, response.error_message

    cluster.nodes[2].stop()
    wait_until(lambda: cluster.isr(1) == (1,), what="ISR to drop broker 2")
    end_before = cluster.log(1).log_end_offset
    refused = cluster.produce(1, [b"refused"])
    assert refused.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert cluster.log(1).log_end_offset == end_before

    cluster.nodes[2].start()
    cluster.nodes[3].start()
    wait_until(lambda: cluster.isr(1) == (1, 2, 3), what="ISR to grow back to three")
    assert cluster.produce(1, [b"after"]).error_code == ErrorCode.NO_ERROR
    wait_until(lambda: cluster.log_bytes(1) == cluster.log_bytes(2) == cluster.log_bytes(3), what="identical logs")


def test_a_changed_min_insync_replicas_applies_to_the_next_acks_all_produce(cluster: ReplicatedCluster) -> None:
    # The leader remembers each topic's effective min.insync.replicas: a config change must reach the next produce.
    cluster.apply(leader=1, epoch=1)
    cluster.nodes[2].stop()
    cluster.nodes[3].stop()
    wait_until(lambda: cluster.isr(1) == (1,), what="ISR to shrink to the leader")
    assert cluster.produce(1, [b"refused"]).error_code == ErrorCode.NOT_ENOUGH_REPLICAS

    cluster.topic_configs["min.insync.replicas"] = "1"
    cluster.apply(leader=1, epoch=1, isr=[1], to=[1])
    accepted = cluster.produce(1, [b"accepted"])
    assert accepted.error_code == ErrorCode.NO_ERROR, accepted.error_message

    cluster.topic_configs["min.insync.replicas"] = "2"
    cluster.apply(leader=1, epoch=1, isr=[1], to=[1])
    assert cluster.produce(1, [b"refused again"]).error_code == ErrorCode.NOT_ENOUGH_REPLICAS


def test_consumers_see_nothing_above_the_high_watermark(cluster: ReplicatedCluster) -> None:
    cluster.apply(leader=1, epoch=1)
    assert cluster.produce(1, [b"committed"]).error_code == ErrorCode.NO_ERROR
    cluster.nodes[2].stop()
    cluster.nodes[3].stop()
    # acks=1 appends on the leader alone; with both followers still in the ISR nothing new is committed.
    assert cluster.produce(1, [b"uncommitted"], acks=1).error_code == ErrorCode.NO_ERROR
    assert cluster.log(1).log_end_offset == 2
    answer = cluster.fetch(1)
    assert answer.high_watermark == 1
    assert _values(answer.records) == [b"committed"]


def test_acks_all_times_out_while_an_in_sync_follower_is_silent(cluster: ReplicatedCluster) -> None:
    cluster.apply(leader=1, epoch=1)
    cluster.nodes[3].stop()
    response = cluster.produce(1, [b"slow"], timeout_ms=200)
    assert response.error_code == ErrorCode.REQUEST_TIMED_OUT


def test_new_leader_makes_the_old_one_truncate_its_divergent_tail(cluster: ReplicatedCluster) -> None:
    cluster.apply(leader=1, epoch=1)
    assert cluster.produce(1, [b"a", b"b"]).error_code == ErrorCode.NO_ERROR
    wait_until(lambda: cluster.log(2).log_end_offset == 2 and cluster.log(3).log_end_offset == 2, what="followers to catch up")
    # Brokers 2 and 3 move to epoch 2 under leader 2; broker 1 has not heard yet and accepts a zombie write.
    cluster.apply(leader=2, epoch=2, isr=[2, 3], to=[2, 3])
    assert cluster.produce(1, [b"zombie-1", b"zombie-2", b"zombie-3"], acks=1).error_code == ErrorCode.NO_ERROR
    assert cluster.log(1).log_end_offset == 5
    assert cluster.produce(2, [b"c"]).error_code == ErrorCode.NO_ERROR

    cluster.apply(leader=2, epoch=2, isr=[2, 3], to=[1])
    wait_until(lambda: cluster.log_bytes(1) == cluster.log_bytes(2) == cluster.log_bytes(3), what="identical logs after truncation")
    assert _values(cluster.log_bytes(1)) == [b"a", b"b", b"c"]
    wait_until(lambda: cluster.isr(2) == (1, 2, 3), what="the old leader to rejoin the ISR")


def test_replica_fetch_with_a_stale_epoch_is_fenced(cluster: ReplicatedCluster) -> None:
    from grpc_protos.weir.v1 import replication_pb2, replication_pb2_grpc
    from tests.broker_nodes.replication.cluster import QUALIFIED
    from tests.broker_nodes.security.managed_cluster import INTERNAL

    cluster.apply(leader=1, epoch=4)
    stub = replication_pb2_grpc.ReplicationStub(cluster.nodes[1].channel)
    request = replication_pb2.ReplicaFetchRequest(
        replica_id=2,
        max_wait_ms=0,
        max_bytes=1024,
        partitions=[replication_pb2.ReplicaFetchPartition(topic=QUALIFIED, partition=0, fetch_offset=0, current_leader_epoch=3)],
    )
    assert stub.ReplicaFetch(request, metadata=INTERNAL, timeout=10).partitions[0].error_code == ErrorCode.FENCED_LEADER_EPOCH
    request.partitions[0].current_leader_epoch = 5
    assert stub.ReplicaFetch(request, metadata=INTERNAL, timeout=10).partitions[0].error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
