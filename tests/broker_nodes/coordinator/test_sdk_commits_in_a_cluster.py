"""The SDK's commits reach the group's coordinator in a managed cluster, also after the coordinator moves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc
from tests.broker_nodes.coordinator.offsets_cluster import NODES, TENANT, TOPIC, OffsetsCluster
from tests.broker_nodes.security.managed_cluster import INTERNAL, allow, credential
from weir import Consumer, TopicPartition
from weir.errors import ErrorCode

PRINCIPAL = "User:sa-committer"
KEY, SECRET = "KEYCOMMITTER", "committer-secret"
GROUP = "billing"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[OffsetsCluster]:
    running = OffsetsCluster(tmp_path, broker_configs={"security.required": "true"})
    security = admin_pb2.ApplySecurityRequest(
        version=1,
        credentials=[credential(KEY, SECRET, TENANT, PRINCIPAL)],
        acls=[
            allow(TENANT, PRINCIPAL, admin_pb2.ACL_OPERATION_ALL, "*"),
            allow(TENANT, PRINCIPAL, admin_pb2.ACL_OPERATION_ALL, "*", admin_pb2.ACL_RESOURCE_TYPE_GROUP),
        ],
    )
    try:
        for node in running.nodes.values():
            admin_pb2_grpc.AdminStub(node.channel).ApplySecurity(security, metadata=INTERNAL, timeout=10)
        yield running
    finally:
        running.stop()


def _consumer(cluster: OffsetsCluster, bootstrap: int) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{cluster.nodes[bootstrap].port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.username": KEY,
            "sasl.password": SECRET,
            "group.id": GROUP,
            "enable.auto.commit": False,
            "request.timeout.ms": 10000,
            "retry.backoff.ms": 50,
        }
    )


def test_commit_through_any_broker_lands_on_the_coordinator_and_follows_it_when_it_moves(cluster: OffsetsCluster) -> None:
    cluster.apply([2, 2], epoch=1)
    with _consumer(cluster, bootstrap=1) as consumer:
        [stored] = consumer.commit(offsets=[TopicPartition(TOPIC, 0, 42)], asynchronous=False)
        assert stored.error is None
        assert cluster.committed_offset(2, GROUP) == 42

        cluster.apply([3, 3], epoch=2)
        # The cached coordinator (broker 2) answers NOT_COORDINATOR; the SDK looks it up again.
        [moved] = consumer.commit(offsets=[TopicPartition(TOPIC, 0, 43)], asynchronous=False)
        assert moved.error is None
        [committed] = consumer.committed([TopicPartition(TOPIC, 0)], timeout=10)
    assert committed.offset == 43
    assert cluster.committed_offset(3, GROUP) == 43
    assert [cluster.committed(node_id, GROUP).error_code for node_id in NODES if node_id != 3] == [ErrorCode.NOT_COORDINATOR] * 2
