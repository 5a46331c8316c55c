"""Committed offsets on the leader of a replicated __consumer_offsets partition, across leadership changes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_nodes import names
from broker_nodes.coordinator.offset_store import OFFSETS_TOPIC
from grpc_protos.weir.v1 import broker_pb2
from log_formats.offset_commit_records import OffsetCommitKey, decode_key, partition_for_group
from tests.broker_nodes.coordinator.offsets_cluster import NODES, TENANT, TOPIC, OffsetsCluster
from tests.broker_nodes.replication.cluster import wait_until
from tests.broker_nodes.security.managed_cluster import INTERNAL, as_tenant
from weir.errors import ErrorCode
from weir.records import iter_records

GROUP = "billing"
QUALIFIED_GROUP = names.qualify(TENANT, GROUP)
PARTITION = partition_for_group(QUALIFIED_GROUP, 2)  # the group's offsets partition; maps push 2


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[OffsetsCluster]:
    running = OffsetsCluster(tmp_path)
    try:
        yield running
    finally:
        running.stop()


def _partition_error(response: broker_pb2.OffsetCommitResponse) -> int:
    assert response.error_code == ErrorCode.NO_ERROR, response.error_message
    return response.topics[0].partitions[0].error_code


def _commit_keys(cluster: OffsetsCluster, node_id: int) -> list[OffsetCommitKey | None]:
    log = cluster.offsets_log(node_id, PARTITION)
    return [decode_key(record.key) for record in iter_records(bytes(log.read(0, 1 << 20, max_offset=log.log_end_offset).records))]


def test_offsets_topic_of_the_map_is_on_every_replica_and_hidden_from_tenants(cluster: OffsetsCluster) -> None:
    cluster.apply([1, 2], epoch=1)
    for node_id in NODES:
        broker = cluster.nodes[node_id].broker
        topic = broker.registry.get(OFFSETS_TOPIC)
        assert topic is not None and topic.internal and topic.topic_id == cluster.offsets_topic_id and topic.replication_factor == 3
        assert all(cluster.offsets_log(node_id, partition) is not None for partition in (0, 1))

    tenant_view = cluster.nodes[3].stub.Metadata(broker_pb2.MetadataRequest(), metadata=as_tenant(TENANT))
    assert [topic.name for topic in tenant_view.topics] == [TOPIC]
    operator_view = cluster.nodes[3].stub.Metadata(broker_pb2.MetadataRequest(topics=[OFFSETS_TOPIC]), metadata=INTERNAL)
    [offsets] = operator_view.topics
    assert offsets.is_internal and [partition.leader_id for partition in offsets.partitions] == [1, 2]


def test_acknowledged_commit_is_on_every_replica_and_followers_are_not_coordinators(cluster: OffsetsCluster) -> None:
    cluster.apply([1, 1], epoch=1)
    assert _partition_error(cluster.commit(1, GROUP, 42)) == ErrorCode.NO_ERROR
    # acks=all: the answer came once every in-sync replica had the record.
    assert cluster.offsets_log(1, PARTITION).high_watermark == 1
    expected = [OffsetCommitKey(QUALIFIED_GROUP, names.qualify(TENANT, TOPIC), 0)]
    for node_id in NODES:
        assert _commit_keys(cluster, node_id) == expected

    for node_id in (2, 3):
        refused = cluster.commit(node_id, GROUP, 43)
        assert refused.error_code == ErrorCode.NOT_COORDINATOR
        assert f"'{GROUP}'" in refused.error_message and TENANT not in refused.error_message
        assert cluster.committed(node_id, GROUP).error_code == ErrorCode.NOT_COORDINATOR
    assert cluster.committed_offset(1, GROUP) == 42


def test_new_leader_serves_offsets_from_its_replicated_log_and_old_one_is_not_coordinator(cluster: OffsetsCluster) -> None:
    cluster.apply([1, 1], epoch=1)
    assert _partition_error(cluster.commit(1, GROUP, 42)) == ErrorCode.NO_ERROR

    cluster.apply([2, 2], epoch=2)
    assert cluster.committed_offset(2, GROUP) == 42
    assert cluster.commit(1, GROUP, 50).error_code == ErrorCode.NOT_COORDINATOR
    assert cluster.committed(1, GROUP).error_code == ErrorCode.NOT_COORDINATOR
    assert _partition_error(cluster.commit(2, GROUP, 43)) == ErrorCode.NO_ERROR
    assert cluster.committed_offset(2, GROUP) == 43
    [coordinator] = cluster.find_coordinator(3, GROUP)
    assert (coordinator.error_code, coordinator.node_id, coordinator.port) == (ErrorCode.NO_ERROR, 2, cluster.nodes[2].port)


def test_commit_acknowledged_before_the_leader_dies_is_served_by_the_next_leader(cluster: OffsetsCluster) -> None:
    cluster.apply([1, 1], epoch=1)
    assert _partition_error(cluster.commit(1, GROUP, 7)) == ErrorCode.NO_ERROR
    cluster.nodes[1].stop()
    cluster.apply([3, 3], epoch=2, isr=[2, 3], to=[2, 3])
    assert cluster.committed_offset(3, GROUP) == 7
    [coordinator] = cluster.find_coordinator(2, GROUP)
    assert coordinator.node_id == 3


def test_commit_without_enough_in_sync_replicas_is_refused_and_not_stored(tmp_path: Path) -> None:
    cluster = OffsetsCluster(tmp_path, offsets_configs={"min.insync.replicas": "2"})
    try:
        cluster.apply([1, 1], epoch=1)
        assert _partition_error(cluster.commit(1, GROUP, 5)) == ErrorCode.NO_ERROR
        cluster.nodes[2].stop()
        cluster.nodes[3].stop()
        leader = cluster.nodes[1].broker
        wait_until(lambda: leader.replication.isr(OFFSETS_TOPIC, PARTITION) == (1,), what="the ISR to shrink to the leader")
        assert _partition_error(cluster.commit(1, GROUP, 6)) == ErrorCode.NOT_ENOUGH_REPLICAS
        assert cluster.committed_offset(1, GROUP) == 5
    finally:
        cluster.stop()


def test_commit_not_replicated_within_request_timeout_is_timed_out_and_not_served(tmp_path: Path) -> None:
    # Followers stay in the ISR for 30 s, so the commit waits for them until request.timeout.ms.
    cluster = OffsetsCluster(tmp_path, broker_configs={"request.timeout.ms": "300", "replica.lag.time.max.ms": "30000"})
    try:
        cluster.apply([1, 1], epoch=1)
        assert _partition_error(cluster.commit(1, GROUP, 5)) == ErrorCode.NO_ERROR
        cluster.nodes[2].stop()
        cluster.nodes[3].stop()
        assert _partition_error(cluster.commit(1, GROUP, 6)) == ErrorCode.REQUEST_TIMED_OUT
        assert cluster.committed_offset(1, GROUP) == 5
    finally:
        cluster.stop()
