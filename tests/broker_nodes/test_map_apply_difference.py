"""A pushed cluster map is applied as a difference from the map applied before (issue 19 goal 6):
topics carried unchanged are neither parsed again nor looked at, and every change (added, removed,
recreated, reconfigured, moved) is still applied exactly, as is a map after an apply that failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker_nodes.cluster_state import ClusterSnapshot
from grpc_protos.weir.v1 import admin_pb2
from tests.broker_nodes.security.managed_cluster import INTERNAL, SecuredBroker, brokers, topic

TENANT = "tn-k7q2m9x4hz"


@pytest.fixture
def node(tmp_path: Path):
    broker = SecuredBroker(tmp_path / "node-1").start()
    yield broker
    broker.stop()


def request(node: SecuredBroker, version: int, *topics: admin_pb2.TopicAssignment) -> admin_pb2.ApplyPartitionsRequest:
    return admin_pb2.ApplyPartitionsRequest(version=version, cluster_id="weir-test", brokers=brokers((1, node.port), (2, 1)), topics=list(topics))


def apply(node: SecuredBroker, version: int, *topics: admin_pb2.TopicAssignment) -> admin_pb2.ApplyPartitionsResponse:
    return node.admin.ApplyPartitions(request(node, version, *topics), metadata=INTERNAL)


def logs(node: SecuredBroker) -> set[tuple[str, int]]:
    return {(log.topic, log.partition) for log in node.broker.log_manager.logs() if log.topic.startswith(TENANT)}


def registered(node: SecuredBroker) -> dict[str, tuple[str, int, dict[str, str]]]:
    return {item.name: (item.topic_id, item.partitions, dict(item.configs)) for item in node.broker.registry.topics() if item.name.startswith(TENANT)}


def test_a_request_reuses_the_parsed_topics_the_previous_map_carried_byte_for_byte(node: SecuredBroker) -> None:
    orders, payments = topic(TENANT, "orders", partitions=2), topic(TENANT, "payments")
    first = ClusterSnapshot.from_request(request(node, 1, orders, payments))
    moved = topic(TENANT, "payments", leaders=[2], topic_id=payments.topic_id)
    second = ClusterSnapshot.from_request(request(node, 2, orders, moved), first)

    assert second.topics[f"{TENANT}~orders"] is first.topics[f"{TENANT}~orders"]
    assert second.topics[f"{TENANT}~payments"] is not first.topics[f"{TENANT}~payments"]
    assert second.topics[f"{TENANT}~payments"].partitions[0].leader_id == 2
    assert second.changed_topics(first) == {f"{TENANT}~payments"}
    # Reused or not, a snapshot is the same value as one parsed from nothing, and stores the same document.
    assert second == ClusterSnapshot.from_request(request(node, 2, orders, moved))
    assert second.to_json() == ClusterSnapshot.from_request(request(node, 2, orders, moved)).to_json()
    assert second.topic_metadata() == ClusterSnapshot.from_request(request(node, 2, orders, moved)).topic_metadata()


def test_a_repeated_topic_is_refused_also_when_both_entries_are_known(node: SecuredBroker) -> None:
    orders = topic(TENANT, "orders")
    first = ClusterSnapshot.from_request(request(node, 1, orders))
    with pytest.raises(ValueError, match="more than once"):
        ClusterSnapshot.from_request(request(node, 2, orders, orders), first)


def test_a_map_that_adds_removes_recreates_and_reconfigures_topics_among_unchanged_ones_is_applied_exactly(node: SecuredBroker) -> None:
    kept = [topic(TENANT, f"kept-{index}") for index in range(5)]
    gone, recreated, tuned = topic(TENANT, "gone"), topic(TENANT, "recreated"), topic(TENANT, "tuned", partitions=2)
    apply(node, 1, *kept, gone, recreated, tuned)
    node.broker.replica_manager.partition_log(f"{TENANT}~recreated", 0)  # the old topic's log exists
    added = topic(TENANT, "added", partitions=3, leaders=[1, 2, 1])
    new_recreated = topic(TENANT, "recreated")  # same name, new topic id
    new_tuned = topic(TENANT, "tuned", partitions=2, topic_id=tuned.topic_id, configs={"retention.ms": "60000"})

    reply = apply(node, 2, *kept, new_recreated, new_tuned, added)

    assert (reply.partitions_created, reply.partitions_deleted, reply.topics_reconfigured) == (3, 2, 1)
    expected = {f"{TENANT}~kept-{index}" for index in range(5)} | {f"{TENANT}~{name}" for name in ("recreated", "tuned", "added")}
    assert set(registered(node)) == expected
    assert registered(node)[f"{TENANT}~recreated"][0] == new_recreated.topic_id
    assert registered(node)[f"{TENANT}~tuned"][2] == {"retention.ms": "60000"}
    assert node.broker.log_manager.get_log(f"{TENANT}~tuned", 0).config.retention_ms == 60000
    # "added" partition 1 is led by broker 2: not hosted here.
    assert logs(node) == {(name, 0) for name in expected} | {(f"{TENANT}~tuned", 1), (f"{TENANT}~added", 2)}


def test_a_map_without_a_change_writes_no_topic_registry_again(node: SecuredBroker) -> None:
    topics = [topic(TENANT, f"t-{index}") for index in range(3)]
    apply(node, 1, *topics)
    before = node.broker.registry.path.stat().st_ino

    reply = apply(node, 2, *topics)

    assert (reply.applied_version, reply.partitions_created, reply.partitions_deleted) == (2, 0, 0)
    assert node.broker.registry.path.stat().st_ino == before  # not replaced by a new file
    assert node.broker.cluster_state.version == 2


def test_after_an_apply_that_failed_midway_the_next_map_is_applied_whole(node: SecuredBroker, monkeypatch: pytest.MonkeyPatch) -> None:
    topics = [topic(TENANT, f"t-{index}") for index in range(3)]
    original = node.broker.topic_admin.apply_managed_topics

    def fail_once(*args: object, **kwargs: object) -> object:
        monkeypatch.setattr(node.broker.topic_admin, "apply_managed_topics", original)
        raise OSError("disk fault after the map was stored")

    monkeypatch.setattr(node.broker.topic_admin, "apply_managed_topics", fail_once)
    with pytest.raises(Exception, match="disk fault"):
        node.broker.apply_partitions(ClusterSnapshot.from_request(request(node, 1, *topics)))
    assert logs(node) == set()  # the map was stored, its topics not applied

    apply(node, 2, *topics)  # the same topics: nothing differs from the stored map

    assert logs(node) == {(f"{TENANT}~t-{index}", 0) for index in range(3)}
    assert set(registered(node)) == {f"{TENANT}~t-{index}" for index in range(3)}
