"""Committed offsets in a cluster: every OffsetCommit / OffsetFetch of a group reaches the same broker.

Each broker keeps its own ``__consumer_offsets``; the SDK picks the group's broker from the
metadata (brokers sorted by node id, index ``abs(java hashCode(group)) % count``). The
cluster here is three managed brokers in this process, given their cluster map through the
Admin service as the control plane gives it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from grpc_protos.weir.v1 import admin_pb2
from tests.broker_nodes.security.managed_cluster import INTERNAL, SecuredBroker, allow, brokers, credential, topic
from weir import Consumer, TopicPartition
from weir.cluster import coordinator_index, java_string_hash_code

TENANT = "tn-routing00"
PRINCIPAL = "User:sa-router"
KEY, SECRET = "KEYROUTER", "router-secret"
TOPIC = "orders"


def test_java_string_hash_code_matches_java() -> None:
    # Values computed by java.lang.String.hashCode().
    assert java_string_hash_code("") == 0
    assert java_string_hash_code("a") == 97
    assert java_string_hash_code("hello") == 99162322
    assert java_string_hash_code("polygenelubricants") == -(2**31)
    # Outside the Basic Multilingual Plane Java hashes the two UTF-16 surrogates.
    assert java_string_hash_code("\N{GRINNING FACE}") == 31 * 0xD83D + 0xDE00


def test_coordinator_index_of_integer_min_value_hash_is_zero() -> None:
    assert coordinator_index("polygenelubricants", 3) == 0


def test_coordinator_index_is_the_positive_hash_modulo_the_broker_count() -> None:
    assert coordinator_index("hello", 3) == 99162322 % 3
    assert coordinator_index("hello", 1) == 0


def test_coordinator_index_without_brokers_is_refused() -> None:
    with pytest.raises(ValueError):
        coordinator_index("hello", 0)


def _apply_cluster_map(nodes: list[SecuredBroker], version: int) -> None:
    """Push one cluster map (every node of ``nodes``, one partition led by each) and credentials to them all."""
    partitions = admin_pb2.ApplyPartitionsRequest(
        version=version,
        cluster_id="weir-routing",
        brokers=brokers(*[(node.node_id, node.port) for node in nodes]),
        topics=[topic(TENANT, TOPIC, partitions=len(nodes), leaders=[node.node_id for node in nodes], topic_id="3f1f8a52-64b4-4a1c-9a53-0c8a9e6b2d11")],
    )
    security = admin_pb2.ApplySecurityRequest(
        version=version,
        credentials=[credential(KEY, SECRET, TENANT, PRINCIPAL)],
        acls=[
            allow(TENANT, PRINCIPAL, admin_pb2.ACL_OPERATION_ALL, "*"),
            allow(TENANT, PRINCIPAL, admin_pb2.ACL_OPERATION_ALL, "*", admin_pb2.ACL_RESOURCE_TYPE_GROUP),
        ],
    )
    for node in nodes:
        node.admin.ApplyPartitions(partitions, metadata=INTERNAL)
        node.admin.ApplySecurity(security, metadata=INTERNAL)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[list[SecuredBroker]]:
    nodes: list[SecuredBroker] = []
    try:
        for node_id in (1, 2, 3):
            nodes.append(SecuredBroker(tmp_path / f"node-{node_id}", node_id=node_id).start())
        _apply_cluster_map(nodes, version=1)
        yield nodes
    finally:
        for node in nodes:
            node.stop()


def _consumer(node: SecuredBroker, group: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{node.port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.username": KEY,
            "sasl.password": SECRET,
            "group.id": group,
            "enable.auto.commit": False,
            "socket.timeout.ms": 3000,
            "request.timeout.ms": 3000,
            "retry.backoff.ms": 50,
        }
    )


def _stored_offset(node: SecuredBroker, group: str, partition: int) -> int | None:
    """The offset ``node`` itself keeps for the group (None when it has none)."""
    [(_, _, value)] = node.broker.offset_store.fetch(f"{TENANT}~{group}", [(f"{TENANT}~{TOPIC}", partition)])
    return None if value is None else value.offset


def test_offset_committed_through_one_broker_is_read_through_another(cluster: list[SecuredBroker]) -> None:
    group = "app-orders"
    coordinator = cluster[coordinator_index(group, 3)]
    assert coordinator.node_id not in (1, 3)  # neither bootstrap broker: only routing can make this pass

    with _consumer(cluster[0], group) as committer:
        committed = committer.commit(offsets=[TopicPartition(TOPIC, 1, 42)], asynchronous=False)
        assert committed is not None and committed[0].error is None
    with _consumer(cluster[2], group) as reader:
        [result] = reader.committed([TopicPartition(TOPIC, 1)], timeout=5)

    assert result.offset == 42
    assert [_stored_offset(node, group, 1) for node in cluster] == [42 if node is coordinator else None for node in cluster]


def test_asynchronous_commit_goes_to_the_groups_broker(cluster: list[SecuredBroker]) -> None:
    group = "billing"
    results: list[object] = []
    consumer = _consumer(cluster[2], group)
    try:
        assert consumer.commit(offsets=[TopicPartition(TOPIC, 0, 7)], asynchronous=True) is None
        with _consumer(cluster[0], group) as reader:
            for _ in range(50):
                [result] = reader.committed([TopicPartition(TOPIC, 0)], timeout=5)
                results.append(result.offset)
                if result.offset == 7:
                    break
                consumer.poll(0.05)  # the commit's answer arrives on a gRPC thread meanwhile
    finally:
        consumer.close()
    assert results[-1] == 7
    assert _stored_offset(cluster[coordinator_index(group, 3)], group, 0) == 7


def test_commit_follows_the_new_cluster_map_after_the_coordinator_leaves(cluster: list[SecuredBroker]) -> None:
    group = "group-a"
    assert coordinator_index(group, 3) == 2 and coordinator_index(group, 2) == 1
    with _consumer(cluster[0], group) as committer:
        committer.list_topics(timeout=5)  # caches the three-broker map
        cluster[2].stop()
        _apply_cluster_map(cluster[:2], version=2)

        # The cached coordinator (node 3) is gone: the SDK refreshes the map and retries on node 2.
        committed = committer.commit(offsets=[TopicPartition(TOPIC, 0, 9)], asynchronous=False)
        assert committed is not None and committed[0].error is None
        [result] = committer.committed([TopicPartition(TOPIC, 0)], timeout=5)

    assert result.offset == 9
    assert _stored_offset(cluster[1], group, 0) == 9
    assert _stored_offset(cluster[0], group, 0) is None
