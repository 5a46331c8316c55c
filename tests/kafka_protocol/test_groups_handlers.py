"""The group handlers on a managed broker with two tenants, called in process (messages round-tripped through kio).

Tenants' groups stay apart (same plain name, two groups; another tenant's group is never listed,
described or reached), ACLs on groups and topics apply, a classic and a KIP-848 group coexist (a
group id is one kind at a time), and offset commits of a classic member are checked against its
generation.
"""

from __future__ import annotations

import datetime
import io
import struct
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.consumer_protocol_subscription.v0 import ConsumerProtocolSubscription
from kio.serial import entity_writer

from broker_nodes.coordinator.groups.classic import ClassicSettings
from broker_nodes.security.access import CallContext
from grpc_protos.weir.v1 import admin_pb2, broker_pb2
from tests.broker_nodes.coordinator.groups.raw_member import RawMember
from tests.broker_nodes.security.managed_cluster import INTERNAL, SecuredBroker, allow, as_key, brokers, credential, topic
from tests.kafka_protocol.admin_calls import call_handler, request_module
from tests.support.waiting import wait_until
from weir.errors import ErrorCode

TENANT_A = "tn-aaaaaaaaaa"
TENANT_B = "tn-bbbbbbbbbb"
ALICE = "User:sa-alice"
BOB = "User:sa-bob"
ALICE_KEY = as_key("KEYALICE", "alice-secret")
BOB_KEY = as_key("KEYBOB", "bob-secret")
GROUP = admin_pb2.ACL_RESOURCE_TYPE_GROUP
PREFIXED = admin_pb2.ACL_PATTERN_TYPE_PREFIXED
FIND_COORDINATOR, OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, HEARTBEAT, SYNC_GROUP = 10, 8, 9, 11, 12, 14
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, OFFSET_DELETE, CONSUMER_GROUP_DESCRIBE = 15, 16, 42, 47, 69
SESSION = datetime.timedelta(seconds=10)
OFFSETS_TOPIC_ID = str(uuid.uuid4())


@pytest.fixture
def node(tmp_path: Path) -> Iterator[SecuredBroker]:
    broker = SecuredBroker(tmp_path / "node-1").start()
    offsets = offsets_led_by(1, 1)
    broker.admin.ApplyPartitions(
        admin_pb2.ApplyPartitionsRequest(
            version=1,
            cluster_id="weir-test",
            brokers=brokers((1, broker.port)),
            topics=[topic(TENANT_A, "orders", partitions=2), topic(TENANT_A, "secret"), topic(TENANT_B, "orders", partitions=3), offsets],
        ),
        metadata=INTERNAL,
    )
    broker.admin.ApplySecurity(
        admin_pb2.ApplySecurityRequest(
            version=1,
            credentials=[credential("KEYALICE", "alice-secret", TENANT_A, ALICE), credential("KEYBOB", "bob-secret", TENANT_B, BOB)],
            acls=[
                allow(TENANT_A, ALICE, admin_pb2.ACL_OPERATION_READ, "app-", GROUP, pattern=PREFIXED),
                allow(TENANT_A, ALICE, admin_pb2.ACL_OPERATION_READ, "orders"),
                allow(TENANT_B, BOB, admin_pb2.ACL_OPERATION_READ, "*", GROUP),
                allow(TENANT_B, BOB, admin_pb2.ACL_OPERATION_DELETE, "*", GROUP),
                allow(TENANT_B, BOB, admin_pb2.ACL_OPERATION_READ, "*"),
            ],
        ),
        metadata=INTERNAL,
    )
    # Joins answer at once here; the initial rebalance delay is covered by the unit tests and the stock clients.
    broker.broker.group_coordinator.classic.settings = ClassicSettings(initial_rebalance_delay_ms=0)
    yield broker
    broker.stop()


def caller(node: SecuredBroker, key: tuple[tuple[str, str], ...]) -> CallContext:
    return node.broker.authenticator.authenticate(key, "ipv4:127.0.0.1:5000")


def join(node: SecuredBroker, call: CallContext, group: str, *, member_id: str = "", version: int = 9, protocols=(("range", b"meta"),)):
    schema = request_module(JOIN_GROUP, version)
    request = schema.JoinGroupRequest(
        group_id=group,
        session_timeout=SESSION,
        rebalance_timeout=SESSION,
        member_id=member_id,
        protocol_type="consumer",
        protocols=tuple(schema.JoinGroupRequestProtocol(name=name, metadata=metadata) for name, metadata in protocols),
    )
    return call_handler(node.broker, call, JOIN_GROUP, version, request)


def join_as_leader(node: SecuredBroker, call: CallContext, group: str):
    required = join(node, call, group)
    assert required.error_code == ErrorCode.MEMBER_ID_REQUIRED and required.member_id
    joined = join(node, call, group, member_id=required.member_id)
    assert joined.error_code == ErrorCode.NO_ERROR, joined
    schema = request_module(SYNC_GROUP, 5)
    synced = call_handler(
        node.broker,
        call,
        SYNC_GROUP,
        5,
        schema.SyncGroupRequest(
            group_id=group,
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            protocol_type="consumer",
            protocol_name="range",
            assignments=(schema.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"all of it"),),
        ),
    )
    assert (synced.error_code, synced.assignment) == (ErrorCode.NO_ERROR, b"all of it")
    return joined


def list_groups(node: SecuredBroker, call: CallContext, version: int = 5):
    schema = request_module(LIST_GROUPS, version)
    fields = {"states_filter": (), "types_filter": ()} if version >= 5 else {}
    return call_handler(node.broker, call, LIST_GROUPS, version, schema.ListGroupsRequest(**fields))


def describe(node: SecuredBroker, call: CallContext, *groups: str):
    schema = request_module(DESCRIBE_GROUPS, 5)
    return call_handler(node.broker, call, DESCRIBE_GROUPS, 5, schema.DescribeGroupsRequest(groups=groups, include_authorized_operations=False)).groups


def commit(node: SecuredBroker, call: CallContext, group: str, member_id: str, generation: int, topic_name: str = "orders", offset: int = 7):
    schema = request_module(OFFSET_COMMIT, 9)
    request = schema.OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        topics=(
            schema.OffsetCommitRequestTopic(
                name=topic_name,
                partitions=(schema.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset, committed_leader_epoch=-1, committed_metadata=""),),
            ),
        ),
    )
    response = call_handler(node.broker, call, OFFSET_COMMIT, 9, request)
    return response.topics[0].partitions[0].error_code


def test_tenants_groups_of_one_name_are_two_groups_that_never_meet(node: SecuredBroker) -> None:
    alice, bob = caller(node, ALICE_KEY), caller(node, BOB_KEY)
    alices = join_as_leader(node, alice, "app-billing")
    assert [(group.group_id, group.group_state, group.group_type) for group in list_groups(node, alice).groups] == [("app-billing", "Stable", "classic")]
    assert list_groups(node, bob).groups == ()
    assert [(group.group_id, group.group_state, group.members) for group in describe(node, bob, "app-billing")] == [("app-billing", "Dead", ())]
    schema = request_module(HEARTBEAT, 4)
    stolen = call_handler(
        node.broker, bob, HEARTBEAT, 4, schema.HeartbeatRequest(group_id="app-billing", generation_id=alices.generation_id, member_id=alices.member_id)
    )
    assert stolen.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    bobs = join_as_leader(node, bob, "app-billing")
    assert (bobs.generation_id, bobs.leader) == (1, bobs.member_id)
    (described,) = describe(node, alice, "app-billing")
    assert [member.member_id for member in described.members] == [alices.member_id]
    assert (described.group_state, described.protocol_type, described.protocol_data, described.members[0].member_assignment) == (
        "Stable",
        "consumer",
        "range",
        b"all of it",
    )


def test_acls_on_groups_and_topics_apply_to_every_group_api(node: SecuredBroker) -> None:
    alice = caller(node, ALICE_KEY)
    assert join(node, alice, "other").error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    schema = request_module(FIND_COORDINATOR, 4)
    found = call_handler(node.broker, alice, FIND_COORDINATOR, 4, schema.FindCoordinatorRequest(key_type=0, coordinator_keys=("app-x", "other")))
    assert [(entry.key, entry.error_code, entry.port) for entry in found.coordinators] == [
        ("app-x", ErrorCode.NO_ERROR, 9092),
        ("other", ErrorCode.GROUP_AUTHORIZATION_FAILED, -1),
    ]
    transaction = call_handler(node.broker, alice, FIND_COORDINATOR, 4, schema.FindCoordinatorRequest(key_type=1, coordinator_keys=("txn",)))
    # Alice may write no topic, so she may use no transactional id.
    assert transaction.coordinators[0].error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert commit(node, alice, "app-x", "", -1, topic_name="secret") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert commit(node, alice, "app-x", "", -1) == ErrorCode.NO_ERROR


def test_classic_commits_need_the_members_generation_and_are_fetched_back_in_a_batch(node: SecuredBroker) -> None:
    bob = caller(node, BOB_KEY)
    joined = join_as_leader(node, bob, "reports")
    assert commit(node, bob, "reports", joined.member_id, joined.generation_id + 1) == ErrorCode.ILLEGAL_GENERATION
    assert commit(node, bob, "reports", "someone-else", joined.generation_id) == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit(node, bob, "reports", "", -1) == ErrorCode.UNKNOWN_MEMBER_ID  # an outsider's commit while the group has members
    assert commit(node, bob, "reports", joined.member_id, joined.generation_id, offset=42) == ErrorCode.NO_ERROR
    schema = request_module(OFFSET_FETCH, 8)
    fetched = call_handler(
        node.broker,
        bob,
        OFFSET_FETCH,
        8,
        schema.OffsetFetchRequest(
            groups=(
                schema.OffsetFetchRequestGroup(group_id="reports", topics=None),
                schema.OffsetFetchRequestGroup(group_id="empty", topics=(schema.OffsetFetchRequestTopics(name="orders", partition_indexes=(1,)),)),
            ),
            require_stable=True,
        ),
    )
    answered = [
        (group.group_id, [(topic.name, [(p.partition_index, p.committed_offset) for p in topic.partitions]) for topic in group.topics])
        for group in fetched.groups
    ]
    assert answered == [("reports", [("orders", [(0, 42)])]), ("empty", [("orders", [(1, -1)])])]


def test_a_group_id_is_classic_or_consumer_never_both(node: SecuredBroker) -> None:
    bob = caller(node, BOB_KEY)
    join_as_leader(node, bob, "classic-one")
    refused = RawMember(node.stub, "classic-one", ["orders"], metadata=BOB_KEY).join()
    assert refused.error_code == ErrorCode.GROUP_ID_NOT_FOUND and "classic group" in refused.error_message
    assert RawMember(node.stub, "new-one", ["orders"], metadata=BOB_KEY).join().error_code == ErrorCode.NO_ERROR
    assert join(node, bob, "new-one", version=3).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    types = {group.group_id: (group.group_type, group.protocol_type) for group in list_groups(node, bob).groups}
    assert types == {"classic-one": ("classic", "consumer"), "new-one": ("consumer", "consumer")}
    schema = request_module(DELETE_GROUPS, 2)
    deleted = call_handler(node.broker, bob, DELETE_GROUPS, 2, schema.DeleteGroupsRequest(groups_names=("classic-one",)))
    assert deleted.results[0].error_code == ErrorCode.NON_EMPTY_GROUP
    # The SDK's door shows both kinds too: the classic group with its Kafka state names and protocol.
    described = node.stub.ConsumerGroupDescribe(broker_pb2.ConsumerGroupDescribeRequest(group_ids=["classic-one"]), metadata=BOB_KEY, timeout=10).groups[0]
    assert (described.error_code, described.state, described.assignor_name, len(described.members)) == (ErrorCode.NO_ERROR, "Stable", "range", 1)
    schema = request_module(CONSUMER_GROUP_DESCRIBE, 1)
    kafka_described = call_handler(
        node.broker,
        bob,
        CONSUMER_GROUP_DESCRIBE,
        1,
        schema.ConsumerGroupDescribeRequest(group_ids=("classic-one", "new-one"), include_authorized_operations=False),
    )
    assert [(group.group_id, group.error_code, len(group.members)) for group in kafka_described.groups] == [
        ("classic-one", ErrorCode.GROUP_ID_NOT_FOUND, 0),
        ("new-one", ErrorCode.NO_ERROR, 1),
    ]
    assert [topic.topic_name for topic in kafka_described.groups[1].members[0].assignment.topic_partitions] == ["orders"]


def subscription(*topics: str) -> bytes:
    """A consumer's JoinGroup metadata (ConsumerProtocolSubscription v0) as stock clients send it."""
    buffer = io.BytesIO()
    entity_writer(ConsumerProtocolSubscription)(buffer, ConsumerProtocolSubscription(topics=topics, user_data=None))
    return struct.pack(">h", 0) + buffer.getvalue()


def delete_offsets(node: SecuredBroker, call: CallContext, group: str, *partitions: tuple[str, int]):
    schema = request_module(OFFSET_DELETE, 0)
    topics = {}
    for topic_name, partition in partitions:
        topics.setdefault(topic_name, []).append(schema.OffsetDeleteRequestPartition(partition_index=partition))
    request = schema.OffsetDeleteRequest(
        group_id=group, topics=tuple(schema.OffsetDeleteRequestTopic(name=name, partitions=tuple(items)) for name, items in topics.items())
    )
    response = call_handler(node.broker, call, OFFSET_DELETE, 0, request)
    return response.error_code, [(topic.name, partition.partition_index, partition.error_code) for topic in response.topics for partition in topic.partitions]


def test_offset_delete_removes_offsets_except_of_topics_the_members_subscribe_to(node: SecuredBroker) -> None:
    bob, alice = caller(node, BOB_KEY), caller(node, ALICE_KEY)
    assert commit(node, bob, "gone", "", -1, offset=3) == ErrorCode.NO_ERROR
    assert delete_offsets(node, bob, "gone", ("orders", 0), ("nowhere", 0)) == (
        ErrorCode.NO_ERROR,
        [("orders", 0, ErrorCode.NO_ERROR), ("nowhere", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)],
    )
    assert node.broker.offset_store.fetch(f"{TENANT_B}~gone", None) == []
    assert delete_offsets(node, bob, "never-was", ("orders", 0))[0] == ErrorCode.GROUP_ID_NOT_FOUND
    assert delete_offsets(node, alice, "app-x", ("orders", 0))[0] == ErrorCode.GROUP_AUTHORIZATION_FAILED

    required = join(node, bob, "live", protocols=(("range", subscription("orders")),))
    joined = join(node, bob, "live", member_id=required.member_id, protocols=(("range", subscription("orders")),))
    assert joined.error_code == ErrorCode.NO_ERROR
    assert delete_offsets(node, bob, "live", ("orders", 1)) == (ErrorCode.NO_ERROR, [("orders", 1, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)])


def offsets_led_by(leader: int, epoch: int) -> admin_pb2.TopicAssignment:
    return admin_pb2.TopicAssignment(
        tenant_id="",
        name="__consumer_offsets",
        topic_id=OFFSETS_TOPIC_ID,
        configs=[broker_pb2.TopicConfigEntry(name="cleanup.policy", value="compact")],
        partitions=[
            admin_pb2.PartitionAssignment(partition=index, leader_id=leader, leader_epoch=epoch, replicas=[leader], isr=[leader]) for index in range(2)
        ],
    )


def test_a_waiting_join_is_answered_not_coordinator_when_the_coordinator_moves_away(node: SecuredBroker) -> None:
    bob = caller(node, BOB_KEY)
    first = join_as_leader(node, bob, "moving")
    second: list[object] = []
    waiting = threading.Thread(target=lambda: second.append(join(node, bob, "moving", version=3)))
    waiting.start()
    wait_until(lambda: node.broker.group_coordinator.classic.describe(f"{TENANT_B}~moving").state.value == "PreparingRebalance", "the rebalance to begin")
    node.admin.ApplyPartitions(
        admin_pb2.ApplyPartitionsRequest(
            version=2,
            cluster_id="weir-test",
            brokers=brokers((1, node.port), (2, node.port + 1)),
            topics=[topic(TENANT_A, "orders", partitions=2), topic(TENANT_A, "secret"), topic(TENANT_B, "orders", partitions=3), offsets_led_by(2, 2)],
        ),
        metadata=INTERNAL,
    )
    waiting.join(timeout=15)
    assert not waiting.is_alive(), "the waiting JoinGroup was answered"
    assert second[0].error_code == ErrorCode.NOT_COORDINATOR
    schema = request_module(HEARTBEAT, 4)
    beat = call_handler(
        node.broker, bob, HEARTBEAT, 4, schema.HeartbeatRequest(group_id="moving", generation_id=first.generation_id, member_id=first.member_id)
    )
    assert beat.error_code == ErrorCode.NOT_COORDINATOR
