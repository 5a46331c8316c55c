"""FindCoordinator's answer from the cluster map: the leader of the group's __consumer_offsets partition."""

import uuid

import pytest

from broker_nodes import names
from broker_nodes.cluster_state import BrokerEndpoint, ClusterSnapshot
from broker_nodes.coordinator.lookup import find_coordinator
from broker_nodes.coordinator.offset_store import CoordinatorNotAvailableError
from grpc_protos.weir.v1 import admin_pb2, broker_pb2
from log_formats.offset_commit_records import partition_for_group

THIS_BROKER = BrokerEndpoint(1, "127.0.0.1", 9001)


def snapshot(leaders: list[int] | None, *, listed: tuple[int, ...] = (1, 2, 3)) -> ClusterSnapshot:
    topics = []
    if leaders is not None:
        topics.append(
            admin_pb2.TopicAssignment(
                tenant_id="",
                name="__consumer_offsets",
                topic_id=str(uuid.uuid4()),
                partitions=[
                    admin_pb2.PartitionAssignment(partition=index, leader_id=leader, leader_epoch=1, replicas=[1, 2, 3], isr=[1, 2, 3])
                    for index, leader in enumerate(leaders)
                ],
            )
        )
    request = admin_pb2.ApplyPartitionsRequest(
        version=1, cluster_id="c", brokers=[broker_pb2.BrokerNode(node_id=node, host=f"broker-{node}", port=9000 + node) for node in listed], topics=topics
    )
    return ClusterSnapshot.from_request(request)


def test_standalone_broker_coordinates_every_group() -> None:
    assert find_coordinator(None, "billing", THIS_BROKER) == THIS_BROKER


def test_coordinator_is_the_leader_of_the_groups_partition() -> None:
    partition = partition_for_group("tn-a~billing", 3)
    leaders = [1, 2, 3]
    found = find_coordinator(snapshot(leaders), "tn-a~billing", THIS_BROKER)
    assert found == BrokerEndpoint(leaders[partition], f"broker-{leaders[partition]}", 9000 + leaders[partition])


def test_same_group_name_of_two_tenants_may_have_different_coordinators() -> None:
    # Some group name among these lands on different partitions for the two tenants.
    group = next(
        name
        for name in (f"app-{index}" for index in range(100))
        if partition_for_group(names.qualify("tn-a", name), 2) != partition_for_group(names.qualify("tn-b", name), 2)
    )
    cluster = snapshot([1, 2])
    first = find_coordinator(cluster, names.qualify("tn-a", group), THIS_BROKER)
    second = find_coordinator(cluster, names.qualify("tn-b", group), THIS_BROKER)
    assert {first.node_id, second.node_id} == {1, 2}


def test_no_offsets_topic_in_the_map_is_coordinator_not_available() -> None:
    with pytest.raises(CoordinatorNotAvailableError, match="not in the cluster map yet") as raised:
        find_coordinator(snapshot(None), "tn-a~billing", THIS_BROKER)
    assert "'billing'" in str(raised.value) and "tn-a" not in str(raised.value)


def test_partition_without_leader_is_coordinator_not_available() -> None:
    with pytest.raises(CoordinatorNotAvailableError, match="has no leader"):
        find_coordinator(snapshot([-1]), "billing", THIS_BROKER)


def test_leader_missing_from_the_brokers_is_not_available_unless_it_is_this_broker() -> None:
    assert find_coordinator(snapshot([1], listed=(2, 3)), "billing", THIS_BROKER) == THIS_BROKER
    with pytest.raises(CoordinatorNotAvailableError, match="broker 4"):
        find_coordinator(snapshot([4], listed=(1, 2, 3)), "billing", THIS_BROKER)
