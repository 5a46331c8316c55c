"""FindCoordinator: this broker while standalone, the leader of the group's __consumer_offsets partition when managed."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from broker_nodes import names
from grpc_protos.weir.v1 import admin_pb2, broker_pb2
from log_formats.offset_commit_records import partition_for_group
from tests.broker_nodes.security.managed_cluster import INTERNAL, SecuredBroker, allow, as_key, brokers, credential, topic
from weir.errors import ErrorCode

TENANT_A = "tn-aaaaaaaaaa"
# With two offsets partitions, Java's string hash puts ``A~g`` and ``B~g`` on different
# partitions for every group g exactly when the hashes of the tenant ids differ in parity.
TENANT_B = "tn-aaaaaaaaab"
ALICE = "User:sa-alice"
BOB = "User:sa-bob"
ALICE_KEY = as_key("KEYALICE", "alice-secret")
BOB_KEY = as_key("KEYBOB", "bob-secret")
OTHER_BROKER = (2, 19092)  # in the map only: FindCoordinator never connects to it


def find(stub, *groups: str, metadata=()) -> list[broker_pb2.Coordinator]:  # type: ignore[no-untyped-def]
    return list(stub.FindCoordinator(broker_pb2.FindCoordinatorRequest(group_ids=list(groups)), metadata=metadata, timeout=10).coordinators)


# ---------------------------------------------------------------------- standalone


def test_standalone_broker_coordinates_every_group_itself(server) -> None:
    answers = find(server.stub, "billing", "shipping")
    assert [(item.group_id, item.error_code, item.node_id, item.host, item.port) for item in answers] == [
        ("billing", 0, 1, "127.0.0.1", server.port),
        ("shipping", 0, 1, "127.0.0.1", server.port),
    ]


def test_empty_group_id_is_invalid_request_and_the_other_groups_are_answered(server) -> None:
    empty, named = find(server.stub, "", "billing")
    assert (empty.error_code, empty.node_id, empty.port) == (ErrorCode.INVALID_REQUEST, -1, -1)
    assert "must not be empty" in empty.error_message
    assert (named.error_code, named.node_id) == (ErrorCode.NO_ERROR, 1)


def test_request_without_group_ids_is_invalid_argument(server) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        find(server.stub)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT


# ---------------------------------------------------------------------- managed


def offsets_topic(leaders: list[int]) -> admin_pb2.TopicAssignment:
    return admin_pb2.TopicAssignment(
        tenant_id="",
        name="__consumer_offsets",
        topic_id=str(uuid.uuid4()),
        configs=[broker_pb2.TopicConfigEntry(name="cleanup.policy", value="compact")],
        partitions=[
            admin_pb2.PartitionAssignment(
                partition=index, leader_id=leader, leader_epoch=1, replicas=[leader if leader > 0 else 1], isr=[leader if leader > 0 else 1]
            )
            for index, leader in enumerate(leaders)
        ],
    )


def push_map(node: SecuredBroker, version: int, *internal_topics: admin_pb2.TopicAssignment) -> None:
    node.admin.ApplyPartitions(
        admin_pb2.ApplyPartitionsRequest(
            version=version,
            cluster_id="weir-test",
            brokers=brokers((1, node.port), OTHER_BROKER),
            topics=[topic(TENANT_A, "orders"), topic(TENANT_B, "orders"), *internal_topics],
        ),
        metadata=INTERNAL,
    )


@pytest.fixture
def node(tmp_path: Path) -> Iterator[SecuredBroker]:
    broker = SecuredBroker(tmp_path / "node-1").start()
    push_map(broker, 1, offsets_topic([1, 2]))
    broker.admin.ApplySecurity(
        admin_pb2.ApplySecurityRequest(
            version=1,
            credentials=[credential("KEYALICE", "alice-secret", TENANT_A, ALICE), credential("KEYBOB", "bob-secret", TENANT_B, BOB)],
            acls=[
                allow(TENANT_A, ALICE, admin_pb2.ACL_OPERATION_READ, "app-", admin_pb2.ACL_RESOURCE_TYPE_GROUP, pattern=admin_pb2.ACL_PATTERN_TYPE_PREFIXED),
                allow(TENANT_B, BOB, admin_pb2.ACL_OPERATION_DESCRIBE, "*", admin_pb2.ACL_RESOURCE_TYPE_GROUP),
            ],
        ),
        metadata=INTERNAL,
    )
    yield broker
    broker.stop()


def test_group_without_describe_acl_is_group_authorization_failed(node: SecuredBroker) -> None:
    denied, allowed = find(node.stub, "other", "app-orders", metadata=ALICE_KEY)
    assert (denied.error_code, denied.node_id) == (ErrorCode.GROUP_AUTHORIZATION_FAILED, -1)
    assert "'other'" in denied.error_message
    # READ on the group implies DESCRIBE, as in Kafka.
    assert allowed.error_code == ErrorCode.NO_ERROR


def test_coordinator_is_chosen_by_the_group_id_qualified_with_the_callers_tenant(node: SecuredBroker) -> None:
    group = next(
        name
        for name in (f"app-{index}" for index in range(100))
        if partition_for_group(names.qualify(TENANT_A, name), 2) != partition_for_group(names.qualify(TENANT_B, name), 2)
    )
    leaders = [1, 2]
    [for_alice] = find(node.stub, group, metadata=ALICE_KEY)
    [for_bob] = find(node.stub, group, metadata=BOB_KEY)
    assert for_alice.node_id == leaders[partition_for_group(names.qualify(TENANT_A, group), 2)]
    assert for_bob.node_id == leaders[partition_for_group(names.qualify(TENANT_B, group), 2)]
    assert {for_alice.node_id, for_bob.node_id} == {1, 2}
    by_node = {for_alice.node_id: for_alice, for_bob.node_id: for_bob}
    assert (by_node[1].port, by_node[2].port) == (node.port, OTHER_BROKER[1])


def test_partition_without_leader_is_coordinator_not_available(node: SecuredBroker) -> None:
    push_map(node, 2, offsets_topic([-1, -1]))
    [answer] = find(node.stub, "app-orders", metadata=ALICE_KEY)
    assert (answer.error_code, answer.node_id, answer.host) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "")
    assert "has no leader" in answer.error_message and TENANT_A not in answer.error_message


def test_map_without_offsets_topic_has_no_coordinator_and_the_broker_creates_none(node: SecuredBroker) -> None:
    push_map(node, 2)
    [answer] = find(node.stub, "app-orders", metadata=ALICE_KEY)
    assert answer.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    commit = broker_pb2.OffsetCommitRequest(
        group_id="app-orders",
        topics=[broker_pb2.OffsetCommitTopic(topic="orders", partitions=[broker_pb2.OffsetCommitPartition(partition=0, committed_offset=1)])],
    )
    assert node.stub.OffsetCommit(commit, metadata=ALICE_KEY).error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    node.restart()
    assert node.broker.registry.get("__consumer_offsets") is None
    assert find(node.stub, "app-orders", metadata=ALICE_KEY)[0].error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
