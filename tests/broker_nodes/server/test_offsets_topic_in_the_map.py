"""A standalone broker's own __consumer_offsets gives way to the cluster map's when the broker becomes managed."""

from __future__ import annotations

import uuid
from pathlib import Path

from grpc_protos.weir.v1 import admin_pb2, broker_pb2
from tests.broker_nodes.replication.cluster import wait_until
from tests.broker_nodes.security.managed_cluster import INTERNAL, SecuredBroker, as_tenant, brokers, topic
from tests.broker_nodes.server.helpers import create_topic
from weir.errors import ErrorCode

TENANT = "tn-cccccccccc"


def commit(node: SecuredBroker, group: str, topic_name: str, offset: int, metadata=()) -> broker_pb2.OffsetCommitResponse:  # type: ignore[no-untyped-def]
    request = broker_pb2.OffsetCommitRequest(
        group_id=group,
        topics=[broker_pb2.OffsetCommitTopic(topic=topic_name, partitions=[broker_pb2.OffsetCommitPartition(partition=0, committed_offset=offset)])],
    )
    return node.stub.OffsetCommit(request, metadata=metadata, timeout=10)


def test_private_offsets_topic_is_replaced_by_the_maps_and_its_commits_are_gone(tmp_path: Path) -> None:
    node = SecuredBroker(tmp_path / "node-1", security_required=False).start()
    try:
        create_topic(node.stub, "orders")
        assert commit(node, "billing", "orders", 5).topics[0].partitions[0].error_code == ErrorCode.NO_ERROR
        private_id = node.broker.registry.get("__consumer_offsets").topic_id
        assert node.broker.registry.get("__consumer_offsets").partitions == 2

        map_id = str(uuid.uuid4())
        offsets = admin_pb2.TopicAssignment(
            tenant_id="",
            name="__consumer_offsets",
            topic_id=map_id,
            partitions=[admin_pb2.PartitionAssignment(partition=0, leader_id=1, leader_epoch=1, replicas=[1], isr=[1])],
        )
        node.admin.ApplyPartitions(
            admin_pb2.ApplyPartitionsRequest(version=1, cluster_id="weir-test", brokers=brokers((1, node.port)), topics=[topic(TENANT, "orders"), offsets]),
            metadata=INTERNAL,
        )
        registered = node.broker.registry.get("__consumer_offsets")
        assert (registered.topic_id, registered.partitions, registered.internal) == (map_id, 1, True) and map_id != private_id
        assert node.broker.log_manager.get_log("__consumer_offsets", 0).log_end_offset == 0
        assert node.broker.log_manager.get_log("__consumer_offsets", 1) is None

        wait_until(lambda: node.broker.offset_store.is_loaded(0), what="the map's offsets partition to load")
        fetched = node.stub.OffsetFetch(broker_pb2.OffsetFetchRequest(group_id="billing"), metadata=INTERNAL)
        assert (fetched.error_code, list(fetched.topics)) == (ErrorCode.NO_ERROR, [])
        assert commit(node, "billing", "orders", 7, metadata=as_tenant(TENANT)).topics[0].partitions[0].error_code == ErrorCode.NO_ERROR

        node.restart()  # managed from the start: the map's topic stays, no private one is created
        assert node.broker.registry.get("__consumer_offsets").topic_id == map_id
        wait_until(lambda: node.broker.offset_store.is_loaded(0), what="the offsets partition to load after the restart")
        committed = node.stub.OffsetFetch(broker_pb2.OffsetFetchRequest(group_id="billing"), metadata=as_tenant(TENANT))
        assert [(item.topic, [partition.committed_offset for partition in item.partitions]) for item in committed.topics] == [("orders", [7])]
    finally:
        node.stop()
