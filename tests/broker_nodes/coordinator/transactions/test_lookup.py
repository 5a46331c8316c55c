"""FindCoordinator key type TRANSACTION: the leader of the transactional id's __transaction_state partition."""

from __future__ import annotations

import uuid

import pytest

from broker_nodes import names
from broker_nodes.cluster_state import BrokerEndpoint, ClusterSnapshot
from broker_nodes.coordinator.lookup import find_coordinator, find_transaction_coordinator
from broker_nodes.coordinator.transactions.errors import TransactionCoordinatorNotAvailableError
from grpc_protos.weir.v1 import admin_pb2, broker_pb2
from log_formats.transaction_log_records import partition_for_transactional_id

THIS_BROKER = BrokerEndpoint(1, "127.0.0.1", 9001)


def snapshot(leaders: list[int] | None, *, offsets_leaders: list[int] = [3, 3, 3], listed: tuple[int, ...] = (1, 2, 3)) -> ClusterSnapshot:  # noqa: B006
    def topic(name: str, topic_leaders: list[int]) -> admin_pb2.TopicAssignment:
        return admin_pb2.TopicAssignment(
            tenant_id="",
            name=name,
            topic_id=str(uuid.uuid4()),
            partitions=[
                admin_pb2.PartitionAssignment(partition=index, leader_id=leader, leader_epoch=1, replicas=[1, 2, 3], isr=[1, 2, 3])
                for index, leader in enumerate(topic_leaders)
            ],
        )

    topics = [topic("__consumer_offsets", offsets_leaders)]
    if leaders is not None:
        topics.append(topic("__transaction_state", leaders))
    request = admin_pb2.ApplyPartitionsRequest(
        version=1, cluster_id="c", brokers=[broker_pb2.BrokerNode(node_id=node, host=f"broker-{node}", port=9000 + node) for node in listed], topics=topics
    )
    return ClusterSnapshot.from_request(request)


def test_standalone_broker_coordinates_every_transactional_id() -> None:
    assert find_transaction_coordinator(None, "t~app", THIS_BROKER) == THIS_BROKER


def test_coordinator_is_the_leader_of_the_ids_partition_not_of_the_groups() -> None:
    leaders = [1, 2, 3]
    found = find_transaction_coordinator(snapshot(leaders), "tn-a~app", THIS_BROKER)
    leader = leaders[partition_for_transactional_id("tn-a~app", 3)]
    assert found == BrokerEndpoint(leader, f"broker-{leader}", 9000 + leader)
    assert find_coordinator(snapshot(leaders), "tn-a~app", THIS_BROKER).node_id == 3  # a group of that name: the offsets partition's leader


def test_same_transactional_id_of_two_tenants_may_have_different_coordinators() -> None:
    name = next(
        f"app-{index}"
        for index in range(100)
        if partition_for_transactional_id(names.qualify("tn-a", f"app-{index}"), 2) != partition_for_transactional_id(names.qualify("tn-b", f"app-{index}"), 2)
    )
    cluster = snapshot([1, 2])
    first = find_transaction_coordinator(cluster, names.qualify("tn-a", name), THIS_BROKER)
    second = find_transaction_coordinator(cluster, names.qualify("tn-b", name), THIS_BROKER)
    assert {first.node_id, second.node_id} == {1, 2}


@pytest.mark.parametrize(("leaders", "reason"), [(None, "not in the cluster map"), ([-1, -1, -1], "has no leader")])
def test_no_coordinator_without_the_topic_or_a_leader(leaders, reason) -> None:
    with pytest.raises(TransactionCoordinatorNotAvailableError, match=reason):
        find_transaction_coordinator(snapshot(leaders), "t~app", THIS_BROKER)
