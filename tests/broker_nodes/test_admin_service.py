"""The Admin service: internal token, partition and security snapshots, DescribeState, persistence."""

from __future__ import annotations

import stat
from pathlib import Path

import grpc
import pytest

from grpc_protos.weir.v1 import admin_pb2
from tests.broker_nodes.security.managed_cluster import INTERNAL, SecuredBroker, allow, brokers, credential, topic
from tests.broker_nodes.server.helpers import batch

TENANT = "tn-k7q2m9x4hz"


@pytest.fixture
def node(tmp_path: Path):
    broker = SecuredBroker(tmp_path / "node-1").start()
    yield broker
    broker.stop()


def apply_partitions(node: SecuredBroker, version: int, *topics: admin_pb2.TopicAssignment) -> admin_pb2.ApplyPartitionsResponse:
    request = admin_pb2.ApplyPartitionsRequest(version=version, cluster_id="weir-test", brokers=brokers((1, node.port), (2, 1)), topics=list(topics))
    return node.admin.ApplyPartitions(request, metadata=INTERNAL)


def hosted(node: SecuredBroker) -> list[tuple[str, str, int, bool]]:
    """Tenants' hosted partitions (internal topics, listed with tenant_id "", left out)."""
    state = node.admin.DescribeState(admin_pb2.DescribeStateRequest(), metadata=INTERNAL)
    return [(item.tenant_id, item.topic, item.partition, item.is_leader) for item in state.partitions if item.tenant_id]


def test_admin_call_without_internal_token_is_unauthenticated(node: SecuredBroker) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        node.admin.DescribeState(admin_pb2.DescribeStateRequest())
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_admin_call_with_wrong_internal_token_is_unauthenticated(node: SecuredBroker) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        node.admin.ApplySecurity(admin_pb2.ApplySecurityRequest(version=1), metadata=(("x-weir-internal-token", "guess"),))
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert node.broker.security.snapshot is None


def test_describe_state_of_a_standalone_broker_reports_version_zero(node: SecuredBroker) -> None:
    state = node.admin.DescribeState(admin_pb2.DescribeStateRequest(), metadata=INTERNAL)
    assert (state.node_id, state.partitions_version, state.security_version) == (1, 0, 0)


def test_apply_partitions_creates_logs_of_hosted_partitions_only(node: SecuredBroker) -> None:
    response = apply_partitions(node, 1, topic(TENANT, "orders", partitions=3, leaders=[1, 2, 1]))
    assert (response.applied_version, response.partitions_created) == (1, 2)
    assert hosted(node) == [(TENANT, "orders", 0, True), (TENANT, "orders", 2, True)]
    assert node.broker.log_manager.get_log(f"{TENANT}~orders", 1) is None


def test_applying_the_same_version_twice_changes_nothing(node: SecuredBroker) -> None:
    snapshot = topic(TENANT, "orders", partitions=2)
    apply_partitions(node, 4, snapshot)
    again = apply_partitions(node, 4, snapshot)
    assert (again.applied_version, again.partitions_created, again.partitions_deleted, again.topics_reconfigured) == (4, 0, 0, 0)


def test_stale_partitions_snapshot_is_refused_with_failed_precondition(node: SecuredBroker) -> None:
    apply_partitions(node, 5, topic(TENANT, "orders"))
    with pytest.raises(grpc.RpcError) as raised:
        apply_partitions(node, 4)
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert [entry[1] for entry in hosted(node)] == ["orders"]


def test_topic_absent_from_the_snapshot_is_deleted(node: SecuredBroker) -> None:
    apply_partitions(node, 1, topic(TENANT, "orders"), topic(TENANT, "payments"))
    response = apply_partitions(node, 2, topic(TENANT, "orders", topic_id=node.broker.registry.get(f"{TENANT}~orders").topic_id))
    assert response.partitions_deleted == 1
    assert [entry[1] for entry in hosted(node)] == ["orders"]


def test_recreated_topic_with_a_new_id_starts_empty(node: SecuredBroker) -> None:
    apply_partitions(node, 1, topic(TENANT, "orders", topic_id="00000000-0000-0000-0000-000000000001"))
    node.broker.replica_manager.append_to_partition(f"{TENANT}~orders", 0, batch([b"old"]))
    apply_partitions(node, 2, topic(TENANT, "orders", topic_id="00000000-0000-0000-0000-000000000002"))
    state = node.admin.DescribeState(admin_pb2.DescribeStateRequest(), metadata=INTERNAL)
    assert [(item.topic_id, item.log_end_offset) for item in state.partitions] == [("00000000-0000-0000-0000-000000000002", 0)]


def test_changed_config_override_is_applied_to_the_running_log(node: SecuredBroker) -> None:
    topic_id = "00000000-0000-0000-0000-000000000009"
    apply_partitions(node, 1, topic(TENANT, "orders", topic_id=topic_id))
    response = apply_partitions(node, 2, topic(TENANT, "orders", topic_id=topic_id, configs={"retention.ms": "60000"}))
    assert response.topics_reconfigured == 1
    assert node.broker.log_manager.get_log(f"{TENANT}~orders", 0).config.retention_ms == 60000


def test_snapshot_with_an_invalid_config_is_refused_whole(node: SecuredBroker) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        apply_partitions(node, 1, topic(TENANT, "orders"), topic(TENANT, "bad", configs={"retention.ms": "soon"}))
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert hosted(node) == [] and node.broker.cluster_state.version == 0


def test_stale_security_snapshot_is_refused(node: SecuredBroker) -> None:
    node.admin.ApplySecurity(admin_pb2.ApplySecurityRequest(version=3), metadata=INTERNAL)
    with pytest.raises(grpc.RpcError) as raised:
        node.admin.ApplySecurity(admin_pb2.ApplySecurityRequest(version=2), metadata=INTERNAL)
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_snapshots_survive_a_restart_and_security_state_is_private(node: SecuredBroker) -> None:
    apply_partitions(node, 7, topic(TENANT, "orders", partitions=2))
    node.admin.ApplySecurity(
        admin_pb2.ApplySecurityRequest(
            version=9,
            credentials=[credential("KEY1", "secret", TENANT, "User:sa-1")],
            acls=[allow(TENANT, "User:sa-1", admin_pb2.ACL_OPERATION_READ)],
            quotas=[admin_pb2.TenantQuota(tenant_id=TENANT, produce_bytes_per_second=1000)],
        ),
        metadata=INTERNAL,
    )
    node.restart()
    state = node.admin.DescribeState(admin_pb2.DescribeStateRequest(), metadata=INTERNAL)
    assert (state.partitions_version, state.security_version, len(state.partitions)) == (7, 9, 2)
    security = node.broker.security.snapshot
    assert list(security.credentials) == ["KEY1"] and len(security.acls_of(TENANT)) == 1
    assert security.quota_of(TENANT).produce_bytes_per_second == 1000
    assert stat.S_IMODE(node.broker.security.path.stat().st_mode) == 0o600
