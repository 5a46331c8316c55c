"""A managed, secured broker: authentication, tenant isolation, ACLs, leadership, quotas, and the SDK against it."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc, broker_pb2
from tests.broker_nodes.replication.cluster import wait_until
from tests.broker_nodes.security.managed_cluster import INTERNAL, SecuredBroker, allow, as_key, as_tenant, brokers, credential, topic
from tests.broker_nodes.server.helpers import batch
from weir.errors import ErrorCode

TENANT_A = "tn-aaaaaaaaaa"
TENANT_B = "tn-bbbbbbbbbb"
ALICE = "User:sa-alice"  # tenant A
BOB = "User:sa-bob"  # tenant B
ALICE_KEY = as_key("KEYALICE", "alice-secret")
BOB_KEY = as_key("KEYBOB", "bob-secret")
OP = admin_pb2


def security(version: int, *, revoke_bob: bool = False, quotas=(), extra_acls=()) -> admin_pb2.ApplySecurityRequest:
    credentials = [credential("KEYALICE", "alice-secret", TENANT_A, ALICE)]
    if not revoke_bob:
        credentials.append(credential("KEYBOB", "bob-secret", TENANT_B, BOB))
    acls = [
        allow(TENANT_A, ALICE, OP.ACL_OPERATION_ALL, "orders"),
        allow(TENANT_A, ALICE, OP.ACL_OPERATION_READ, "app-", OP.ACL_RESOURCE_TYPE_GROUP, pattern=OP.ACL_PATTERN_TYPE_PREFIXED),
        allow(TENANT_B, BOB, OP.ACL_OPERATION_ALL, "*"),
        allow(TENANT_B, BOB, OP.ACL_OPERATION_ALL, "*", OP.ACL_RESOURCE_TYPE_GROUP),
        *extra_acls,
    ]
    return admin_pb2.ApplySecurityRequest(version=version, credentials=credentials, acls=acls, quotas=list(quotas))


@pytest.fixture
def node(tmp_path: Path):
    broker = SecuredBroker(tmp_path / "node-1").start()
    broker.admin.ApplyPartitions(
        admin_pb2.ApplyPartitionsRequest(
            version=1,
            cluster_id="weir-test",
            brokers=brokers((1, broker.port), (2, 1)),
            topics=[
                topic(TENANT_A, "orders", partitions=2, leaders=[1, 2]),
                topic(TENANT_A, "secret-plans"),
                topic(TENANT_B, "orders"),
                topic("", "__consumer_offsets"),  # internal topics come in the map, without a tenant
            ],
        ),
        metadata=INTERNAL,
    )
    broker.admin.ApplySecurity(security(1), metadata=INTERNAL)
    wait_until(lambda: broker.broker.offset_store.is_loaded(0), what="__consumer_offsets to load")
    yield broker
    broker.stop()


def produce(node, metadata, name: str, value: bytes, partition: int = 0) -> broker_pb2.ProduceResponse:
    request = broker_pb2.ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topics=[broker_pb2.ProduceTopicData(topic=name, partitions=[broker_pb2.ProducePartitionData(partition=partition, records=batch([value]))])],
    )
    return node.stub.Produce(request, metadata=metadata)


def fetch(node, metadata, name: str, partition: int = 0) -> broker_pb2.FetchPartitionResponse:
    request = broker_pb2.FetchRequest(
        topics=[broker_pb2.FetchTopic(topic=name, partitions=[broker_pb2.FetchPartition(partition=partition, fetch_offset=0, current_leader_epoch=-1)])]
    )
    return node.stub.Fetch(request, metadata=metadata).topics[0].partitions[0]


def metadata_of(node, metadata, *names: str) -> broker_pb2.MetadataResponse:
    return node.stub.Metadata(broker_pb2.MetadataRequest(topics=list(names)), metadata=metadata)


# ---------------------------------------------------------------------- authentication


def test_call_before_credentials_arrive_is_unavailable(tmp_path: Path) -> None:
    fresh = SecuredBroker(tmp_path / "fresh").start()
    try:
        with pytest.raises(grpc.RpcError) as raised:
            metadata_of(fresh, ALICE_KEY)
        assert raised.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "waiting for credentials from the control plane" in raised.value.details()
    finally:
        fresh.stop()


def test_call_without_key_is_unauthenticated(node) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        metadata_of(node, ())
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_wrong_secret_is_unauthenticated(node) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        produce(node, as_key("KEYALICE", "guess"), "orders", b"x")
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert node.broker.log_manager.get_log(f"{TENANT_A}~orders", 0).log_end_offset == 0


def test_revoked_key_stops_working_when_the_snapshot_is_applied(node) -> None:
    assert metadata_of(node, BOB_KEY).topics
    node.admin.ApplySecurity(security(2, revoke_bob=True), metadata=INTERNAL)
    with pytest.raises(grpc.RpcError) as raised:
        metadata_of(node, BOB_KEY)
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_describe_state_reports_when_each_cluster_key_was_last_used(node) -> None:
    before = node.admin.DescribeState(admin_pb2.DescribeStateRequest(), metadata=INTERNAL)
    assert list(before.credential_uses) == []
    metadata_of(node, ALICE_KEY)
    with pytest.raises(grpc.RpcError):
        metadata_of(node, as_key("KEYBOB", "wrong-secret"))
    uses = node.admin.DescribeState(admin_pb2.DescribeStateRequest(), metadata=INTERNAL).credential_uses
    assert [use.api_key for use in uses] == ["KEYALICE"]  # a failed attempt is not a use
    assert uses[0].last_used_ms > 0
    (app,) = uses[0].applications  # the application: gRPC's own user agent here (no SDK client.id), from loopback
    assert (app.software_name, app.address) == ("grpc-python", "127.0.0.1") and app.first_seen_ms <= app.last_seen_ms


def test_wrong_internal_token_is_unauthenticated(node) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        metadata_of(node, (("x-weir-internal-token", "guess"),))
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "the internal token is wrong" in raised.value.details()


# ---------------------------------------------------------------------- tenant isolation and ACLs


def test_metadata_lists_only_the_callers_describable_topics_by_plain_name(node) -> None:
    response = metadata_of(node, ALICE_KEY)
    assert [item.name for item in response.topics] == ["orders"]  # secret-plans has no ACL for alice
    assert sorted(node.node_id for node in response.brokers) == [1, 2]
    assert [(partition.partition, partition.leader_id, partition.leader_epoch) for partition in response.topics[0].partitions] == [(0, 1, 3), (1, 2, 3)]


def test_internal_token_acting_as_tenant_sees_every_topic_of_that_tenant_only(node) -> None:
    assert sorted(item.name for item in metadata_of(node, as_tenant(TENANT_A)).topics) == ["orders", "secret-plans"]


def test_unauthorized_topic_is_refused_whether_or_not_it_exists(node) -> None:
    response = metadata_of(node, ALICE_KEY, "secret-plans", "no-such-topic")
    assert [(item.name, item.error_code) for item in response.topics] == [
        ("secret-plans", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        ("no-such-topic", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    ]


def test_authorized_tenant_asking_for_a_missing_topic_gets_a_retriable_unknown_topic(node) -> None:
    # Bob may describe every topic of his tenant; a topic the control plane is still creating
    # must look "not there yet" (retriable), not like an invalid name.
    response = metadata_of(node, BOB_KEY, "not-created-yet", "../evil")
    assert [(item.name, item.error_code) for item in response.topics] == [
        ("not-created-yet", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("../evil", ErrorCode.INVALID_TOPIC_EXCEPTION),
    ]
    assert "tn-" not in response.topics[1].error_message


def test_same_named_topics_of_two_tenants_hold_separate_records(node) -> None:
    assert produce(node, ALICE_KEY, "orders", b"alice-only").topics[0].partitions[0].error_code == 0
    bob_view = fetch(node, BOB_KEY, "orders")
    assert (bob_view.error_code, bob_view.high_watermark, bob_view.records) == (0, 0, b"")
    alice_view = fetch(node, ALICE_KEY, "orders")
    assert alice_view.high_watermark == 1 and b"alice-only" in alice_view.records


def test_tenant_cannot_reach_another_tenants_topic_by_its_qualified_name(node) -> None:
    response = fetch(node, BOB_KEY, f"{TENANT_A}~orders")
    assert response.error_code != 0 and response.records == b""


def test_produce_without_write_acl_is_topic_authorization_failed(node) -> None:
    partition = produce(node, ALICE_KEY, "secret-plans", b"x").topics[0].partitions[0]
    assert partition.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_client_cannot_reach_internal_topics(node) -> None:
    assert fetch(node, BOB_KEY, "__consumer_offsets").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert all(not item.is_internal for item in metadata_of(node, BOB_KEY).topics)


def test_partition_led_by_another_broker_is_not_leader_or_follower(node) -> None:
    partition = produce(node, ALICE_KEY, "orders", b"x", partition=1).topics[0].partitions[0]
    assert partition.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert fetch(node, ALICE_KEY, "orders", partition=1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_create_topics_is_refused_with_policy_violation_in_managed_mode(node) -> None:
    request = broker_pb2.CreateTopicsRequest(topics=[broker_pb2.CreatableTopic(name="new", num_partitions=1, replication_factor=1)])
    result = node.stub.CreateTopics(request, metadata=BOB_KEY).topics[0]
    assert result.error_code == ErrorCode.POLICY_VIOLATION
    assert "managed by the control plane" in result.error_message


def test_describe_configs_stays_available_with_describe_configs_acl(node) -> None:
    request = broker_pb2.DescribeConfigsRequest(
        resources=[broker_pb2.ConfigResourceRef(type=broker_pb2.RESOURCE_TYPE_TOPIC, name="orders", config_names=["retention.ms"])]
    )
    result = node.stub.DescribeConfigs(request, metadata=BOB_KEY).resources[0]
    assert (result.error_code, result.name, [entry.name for entry in result.configs]) == (0, "orders", ["retention.ms"])


def test_group_without_read_acl_is_group_authorization_failed(node) -> None:
    request = broker_pb2.OffsetCommitRequest(
        group_id="other-group",
        topics=[broker_pb2.OffsetCommitTopic(topic="orders", partitions=[broker_pb2.OffsetCommitPartition(partition=0, committed_offset=1)])],
    )
    assert node.stub.OffsetCommit(request, metadata=ALICE_KEY).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_committed_offsets_of_same_named_groups_are_separate(node) -> None:
    def commit(key, offset: int) -> None:
        request = broker_pb2.OffsetCommitRequest(
            group_id="app-1",
            topics=[broker_pb2.OffsetCommitTopic(topic="orders", partitions=[broker_pb2.OffsetCommitPartition(partition=0, committed_offset=offset)])],
        )
        assert node.stub.OffsetCommit(request, metadata=key).topics[0].partitions[0].error_code == 0

    commit(ALICE_KEY, 5)
    commit(BOB_KEY, 9)
    fetched = node.stub.OffsetFetch(broker_pb2.OffsetFetchRequest(group_id="app-1"), metadata=ALICE_KEY)
    assert [(item.topic, [partition.committed_offset for partition in item.partitions]) for item in fetched.topics] == [("orders", [5])]


# ---------------------------------------------------------------------- quotas


def test_tenant_over_its_produce_quota_is_throttled_and_others_are_not(node) -> None:
    slow = admin_pb2.TenantQuota(tenant_id=TENANT_A, produce_bytes_per_second=100)
    node.admin.ApplySecurity(security(2, quotas=[slow]), metadata=INTERNAL)
    throttled = produce(node, ALICE_KEY, "orders", b"x" * 200)
    unaffected = produce(node, BOB_KEY, "orders", b"x" * 200)
    assert throttled.throttle_time_ms > 0
    assert node.throttle_delays == [throttled.throttle_time_ms / 1000.0]
    assert unaffected.throttle_time_ms == 0


# ---------------------------------------------------------------------- the SDK against a real secured broker process


@pytest.fixture
def secured_process(tmp_path: Path):
    from tests.support.processes import BrokerProcess

    process = BrokerProcess(
        tmp_path / "process", configs={"security.required": "true", "offsets.topic.num.partitions": "2"}, env={"WEIR_INTERNAL_TOKEN": INTERNAL[0][1]}
    ).start()
    channel = grpc.insecure_channel(process.address)
    admin = admin_pb2_grpc.AdminStub(channel)
    admin.ApplyPartitions(
        admin_pb2.ApplyPartitionsRequest(version=1, brokers=brokers((1, process.port)), topics=[topic(TENANT_A, "orders"), topic(TENANT_B, "orders")]),
        metadata=INTERNAL,
    )
    admin.ApplySecurity(security(1), metadata=INTERNAL)
    yield process
    channel.close()
    process.stop()


def test_sdk_producer_with_a_cluster_key_delivers_and_a_wrong_key_fails_with_authentication(secured_process) -> None:
    from weir import Producer
    from weir.admin import AdminClient
    from weir.errors import KafkaError, KafkaException

    delivered: list[tuple[object, object]] = []
    producer = Producer(
        {"bootstrap.servers": secured_process.address, "sasl.username": "KEYALICE", "sasl.password": "alice-secret", "security.protocol": "SASL_PLAINTEXT"}
    )
    producer.produce("orders", b"hello", on_delivery=lambda error, message: delivered.append((error, message.offset())))
    assert producer.flush(10) == 0
    assert delivered == [(None, 0)]
    intruder = AdminClient({"bootstrap.servers": secured_process.address, "sasl.username": "KEYALICE", "sasl.password": "wrong"})
    with pytest.raises(KafkaException) as raised:
        intruder.list_topics(timeout=5)
    assert raised.value.args[0].code() == KafkaError._AUTHENTICATION
