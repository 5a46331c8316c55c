"""Internal topics in the cluster map: no tenant, plain name, registered as internal."""

import uuid

import pytest

from broker_nodes.cluster_state import ClusterSnapshot, InvalidSnapshotError
from grpc_protos.weir.v1 import admin_pb2, broker_pb2


def assignment(tenant_id: str, name: str, leaders: list[int]) -> admin_pb2.TopicAssignment:
    return admin_pb2.TopicAssignment(
        tenant_id=tenant_id,
        name=name,
        topic_id=str(uuid.uuid4()),
        configs=[broker_pb2.TopicConfigEntry(name="cleanup.policy", value="compact")],
        partitions=[
            admin_pb2.PartitionAssignment(partition=index, leader_id=leader, leader_epoch=2 + index, replicas=[1, 2], isr=[1, 2])
            for index, leader in enumerate(leaders)
        ],
    )


def parse(*topics: admin_pb2.TopicAssignment) -> ClusterSnapshot:
    return ClusterSnapshot.from_request(admin_pb2.ApplyPartitionsRequest(version=1, cluster_id="c", topics=list(topics)))


def test_internal_topic_keeps_its_plain_name_and_is_registered_as_internal() -> None:
    cluster = parse(assignment("", "__consumer_offsets", [1, 2, 1]), assignment("tn-a", "orders", [2]))
    assert sorted(cluster.topics) == ["__consumer_offsets", "tn-a~orders"]
    metadata = {topic.name: topic for topic in cluster.topic_metadata()}
    assert metadata["__consumer_offsets"].internal and metadata["__consumer_offsets"].replication_factor == 2
    assert not metadata["tn-a~orders"].internal


def test_led_partitions_lists_partitions_and_epochs_of_one_leader() -> None:
    cluster = parse(assignment("", "__consumer_offsets", [1, 2, 1]))
    assert cluster.led_partitions("__consumer_offsets", 1) == {0: 2, 2: 4}
    assert cluster.led_partitions("__consumer_offsets", 3) == {}
    assert cluster.led_partitions("__usage", 1) == {}


def test_topic_without_tenant_must_be_internal() -> None:
    with pytest.raises(InvalidSnapshotError, match="'orders' has no tenant id"):
        parse(assignment("", "orders", [1]))


def test_tenant_topic_may_not_take_an_internal_name() -> None:
    with pytest.raises(InvalidSnapshotError, match="'__usage' of tenant 'tn-a'.*reserved"):
        parse(assignment("tn-a", "__usage", [1]))
