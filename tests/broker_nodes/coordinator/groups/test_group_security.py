"""Groups on a managed broker: tenants' groups apart, ACLs on groups and on subscribed topics."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from grpc_protos.weir.v1 import admin_pb2, broker_pb2
from tests.broker_nodes.coordinator.groups.raw_member import RawMember
from tests.broker_nodes.security.managed_cluster import INTERNAL, SecuredBroker, allow, as_key, brokers, credential, topic
from weir.errors import ErrorCode

TENANT_A = "tn-aaaaaaaaaa"
TENANT_B = "tn-bbbbbbbbbb"
ALICE = "User:sa-alice"
BOB = "User:sa-bob"
ALICE_KEY = as_key("KEYALICE", "alice-secret")
BOB_KEY = as_key("KEYBOB", "bob-secret")
GROUP = admin_pb2.ACL_RESOURCE_TYPE_GROUP
PREFIXED = admin_pb2.ACL_PATTERN_TYPE_PREFIXED


@pytest.fixture
def node(tmp_path: Path) -> Iterator[SecuredBroker]:
    broker = SecuredBroker(tmp_path / "node-1").start()
    offsets = admin_pb2.TopicAssignment(
        tenant_id="",
        name="__consumer_offsets",
        topic_id=str(uuid.uuid4()),
        configs=[broker_pb2.TopicConfigEntry(name="cleanup.policy", value="compact")],
        partitions=[admin_pb2.PartitionAssignment(partition=index, leader_id=1, leader_epoch=1, replicas=[1], isr=[1]) for index in range(2)],
    )
    broker.admin.ApplyPartitions(
        admin_pb2.ApplyPartitionsRequest(
            version=1,
            cluster_id="weir-test",
            brokers=brokers((1, broker.port)),
            topics=[
                topic(TENANT_A, "orders", partitions=2),
                topic(TENANT_A, "orders-eu"),
                topic(TENANT_A, "secret"),
                topic(TENANT_B, "orders", partitions=3),
                offsets,
            ],
        ),
        metadata=INTERNAL,
    )
    broker.admin.ApplySecurity(
        admin_pb2.ApplySecurityRequest(
            version=1,
            credentials=[credential("KEYALICE", "alice-secret", TENANT_A, ALICE), credential("KEYBOB", "bob-secret", TENANT_B, BOB)],
            acls=[
                allow(TENANT_A, ALICE, admin_pb2.ACL_OPERATION_READ, "app-", GROUP, pattern=PREFIXED),
                allow(TENANT_A, ALICE, admin_pb2.ACL_OPERATION_DELETE, "app-old", GROUP),
                allow(TENANT_A, ALICE, admin_pb2.ACL_OPERATION_READ, "orders", pattern=PREFIXED),
                allow(TENANT_B, BOB, admin_pb2.ACL_OPERATION_READ, "*", GROUP),
                allow(TENANT_B, BOB, admin_pb2.ACL_OPERATION_READ, "*"),
            ],
        ),
        metadata=INTERNAL,
    )
    yield broker
    broker.stop()


def test_heartbeat_needs_read_on_the_group_and_on_every_named_topic(node: SecuredBroker) -> None:
    denied = RawMember(node.stub, "other", ["orders"], metadata=ALICE_KEY).join()
    assert (denied.error_code, denied.error_message) == (ErrorCode.GROUP_AUTHORIZATION_FAILED, "not authorized to join group 'other'")
    secret = RawMember(node.stub, "app-billing", ["orders", "secret"], metadata=ALICE_KEY).join()
    assert (secret.error_code, secret.error_message) == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "not authorized to subscribe to topic 'secret'")
    listed = node.stub.ListGroups(broker_pb2.ListGroupsRequest(), metadata=ALICE_KEY, timeout=10).groups
    assert list(listed) == []  # the refused join created nothing


def test_regex_matches_only_readable_topics_of_the_callers_tenant(node: SecuredBroker) -> None:
    member = RawMember(node.stub, "app-billing", regex=".*", metadata=ALICE_KEY)
    assert member.join().error_code == ErrorCode.NO_ERROR
    assert member.owned == {("orders", 0), ("orders", 1), ("orders-eu", 0)}


def test_tenants_groups_of_the_same_name_are_apart_and_listed_only_to_their_tenant(node: SecuredBroker) -> None:
    alice = RawMember(node.stub, "app-billing", ["orders"], metadata=ALICE_KEY)
    bob = RawMember(node.stub, "app-billing", ["orders"], metadata=BOB_KEY)
    alice.join()
    bob.join()
    assert alice.owned == {("orders", 0), ("orders", 1)} and bob.owned == {("orders", 0), ("orders", 1), ("orders", 2)}
    assert alice.epoch == bob.epoch == 1
    for key, member in ((ALICE_KEY, alice), (BOB_KEY, bob)):
        [listed] = node.stub.ListGroups(broker_pb2.ListGroupsRequest(), metadata=key, timeout=10).groups
        assert (listed.group_id, listed.state) == ("app-billing", "Stable")
        [described] = node.stub.ConsumerGroupDescribe(broker_pb2.ConsumerGroupDescribeRequest(group_ids=["app-billing"]), metadata=key, timeout=10).groups
        assert [entry.member_id for entry in described.members] == [member.member_id]
        assert TENANT_A not in str(described) and TENANT_B not in str(described)


def test_describe_and_delete_need_their_acls(node: SecuredBroker) -> None:
    member = RawMember(node.stub, "app-old", ["orders"], metadata=ALICE_KEY)
    member.join()
    [hidden] = node.stub.ConsumerGroupDescribe(broker_pb2.ConsumerGroupDescribeRequest(group_ids=["billing"]), metadata=ALICE_KEY, timeout=10).groups
    assert hidden.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    member.leave()
    RawMember(node.stub, "app-new", ["orders"], metadata=ALICE_KEY).join()
    refused, deleted = node.stub.DeleteGroups(broker_pb2.DeleteGroupsRequest(group_ids=["app-new", "app-old"]), metadata=ALICE_KEY, timeout=30).groups
    assert (refused.error_code, refused.error_message) == (ErrorCode.GROUP_AUTHORIZATION_FAILED, "not authorized to delete group 'app-new'")
    assert deleted.error_code == ErrorCode.NO_ERROR
    listed = node.stub.ListGroups(broker_pb2.ListGroupsRequest(), metadata=ALICE_KEY, timeout=10).groups
    assert [group.group_id for group in listed] == ["app-new"]
