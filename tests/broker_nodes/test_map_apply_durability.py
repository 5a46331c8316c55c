"""An applied cluster map costs three fsyncs: cluster-state.json's and topics.json's new contents,
then one of the data directory that makes both renames and the new partitions' directories
durable (issue 19 goal 6: five before, each ~20 ms on a busy disk). A broker killed with SIGKILL
while maps are being applied restarts with a whole map, old or new, and its registry and logs
follow it."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import grpc
import pytest

from broker_nodes.cluster_state import CLUSTER_STATE_FILE_NAME, ClusterSnapshot
from broker_nodes.topic_registry import TOPICS_FILE_NAME
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc
from tests.broker_nodes.security.managed_cluster import SecuredBroker, brokers, topic
from tests.support.processes import BrokerProcess
from tests.support.waiting import wait_until

TENANT = "tn-k7q2m9x4hz"
TOKEN = "map-durability-internal-token-0123456789"


@pytest.fixture
def node(tmp_path: Path):
    broker = SecuredBroker(tmp_path / "node-1").start()
    yield broker
    broker.stop()


def fsynced_paths_while(action, monkeypatch: pytest.MonkeyPatch) -> list[str]:  # type: ignore[no-untyped-def]
    """What ``action`` (run in this thread) fsynced, by path, in order; other threads' fsyncs are left out."""
    paths: list[str] = []
    real_fsync = os.fsync
    me = threading.get_ident()

    def recording_fsync(descriptor: int) -> None:
        if threading.get_ident() == me:
            paths.append(os.readlink(f"/proc/self/fd/{descriptor}"))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    action()
    monkeypatch.undo()
    return paths


def apply(node: SecuredBroker, version: int, *topics: admin_pb2.TopicAssignment) -> None:
    request = admin_pb2.ApplyPartitionsRequest(version=version, cluster_id="weir-test", brokers=brokers((1, node.port), (2, 1)), topics=list(topics))
    node.broker.apply_partitions(ClusterSnapshot.from_request(request, node.broker.cluster_state.snapshot))


def moved_leader(assignment: admin_pb2.TopicAssignment) -> admin_pb2.TopicAssignment:
    """``assignment`` with both brokers as replicas of every partition and broker 2 leading partition 1."""
    moved = admin_pb2.TopicAssignment()
    moved.CopyFrom(assignment)
    for partition in moved.partitions:
        partition.replicas[:] = partition.isr[:] = [1, 2]
        partition.leader_id = 2 if partition.partition == 1 else 1
    return moved


def test_a_map_that_adds_a_topic_fsyncs_each_state_file_once_then_the_data_directory_once(node: SecuredBroker, monkeypatch: pytest.MonkeyPatch) -> None:
    orders = topic(TENANT, "orders", partitions=2)
    apply(node, 1, orders)

    paths = fsynced_paths_while(lambda: apply(node, 2, orders, topic(TENANT, "payments", partitions=2)), monkeypatch)

    data_dir = str(node.broker.config.data_dir.resolve())
    assert [Path(path).name for path in paths[:2]] == [CLUSTER_STATE_FILE_NAME + ".tmp", TOPICS_FILE_NAME + ".tmp"]
    assert paths[2:] == [data_dir]
    assert node.broker.log_manager.get_log(f"{TENANT}~payments", 1) is not None


def test_a_map_that_only_moves_a_leader_fsyncs_the_map_then_the_data_directory(node: SecuredBroker, monkeypatch: pytest.MonkeyPatch) -> None:
    orders = moved_leader(topic(TENANT, "orders", partitions=2))
    orders.partitions[1].leader_id = 1
    apply(node, 1, orders)

    paths = fsynced_paths_while(lambda: apply(node, 2, moved_leader(orders)), monkeypatch)

    assert [Path(path).name for path in paths[:1]] == [CLUSTER_STATE_FILE_NAME + ".tmp"]
    assert paths[1:] == [str(node.broker.config.data_dir.resolve())]
    assert node.broker.cluster_state.snapshot is not None
    assert node.broker.cluster_state.snapshot.topics[f"{TENANT}~orders"].partitions[1].leader_id == 2


def admin_stub(address: str) -> tuple[grpc.Channel, admin_pb2_grpc.AdminStub]:
    channel = grpc.insecure_channel(address)
    return channel, admin_pb2_grpc.AdminStub(channel)


def test_a_broker_killed_while_maps_are_applied_restarts_with_a_whole_map_its_registry_follows(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", configs={"security.required": "true"}, env={"WEIR_INTERNAL_TOKEN": TOKEN}).start()
    metadata = (("x-weir-internal-token", TOKEN),)
    channel, admin = admin_stub(broker.address)
    topics: list[admin_pb2.TopicAssignment] = []
    applied: list[int] = []
    stop = threading.Event()

    def push_forever() -> None:
        version = 0
        while not stop.is_set():
            version += 1
            topics.append(topic(TENANT, f"topic-{version}", partitions=2))
            request = admin_pb2.ApplyPartitionsRequest(version=version, cluster_id="weir-test", brokers=brokers((1, broker.port)), topics=list(topics))
            try:
                admin.ApplyPartitions(request, metadata=metadata, timeout=10)
            except grpc.RpcError:
                return
            applied.append(version)

    pusher = threading.Thread(target=push_forever, daemon=True)
    try:
        pusher.start()
        wait_until(lambda: len(applied) >= 20, "20 maps applied", timeout=60)
        broker.kill()  # SIGKILL, with pushes in flight
        stop.set()
        pusher.join(timeout=20)
        channel.close()

        state = json.loads((tmp_path / "data" / CLUSTER_STATE_FILE_NAME).read_text())["snapshot"]
        stored_version = state["version"]
        assert stored_version >= applied[-1]  # an acknowledged map is never lost to a kill -9
        assert [entry["name"] for entry in state["topics"]] == sorted(f"topic-{number}" for number in range(1, stored_version + 1))

        broker.restart()
        channel, admin = admin_stub(broker.address)
        described = admin.DescribeState(admin_pb2.DescribeStateRequest(), metadata=metadata, timeout=10)
        assert described.partitions_version == stored_version
        hosted = {(item.topic, item.partition) for item in described.partitions if item.tenant_id == TENANT}
        assert hosted == {(f"topic-{number}", partition) for number in range(1, stored_version + 1) for partition in range(2)}
        registry = json.loads((tmp_path / "data" / TOPICS_FILE_NAME).read_text())
        assert sorted(entry["name"] for entry in registry["topics"] if entry["name"].startswith(TENANT)) == sorted(
            f"{TENANT}~topic-{number}" for number in range(1, stored_version + 1)
        )
    finally:
        stop.set()
        channel.close()
        broker.stop()
