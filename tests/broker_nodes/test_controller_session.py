"""Brokers with a controller: registration and heartbeats, controller failover and epochs, ISR
changes that count only once the controller stored them, controlled shutdown, forwarded topic admin."""

from __future__ import annotations

import socket
from pathlib import Path

import grpc
import pytest

from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc, broker_pb2
from tests.broker_nodes.fake_controller import FakeController
from tests.broker_nodes.replication.cluster import QUALIFIED, TENANT, ReplicatedCluster, wait_until
from tests.broker_nodes.security.managed_cluster import INTERNAL_TOKEN, as_tenant
from weir.errors import ErrorCode

FAST_HEARTBEATS = {"broker.heartbeat.interval.ms": "50", "controlled.shutdown.timeout.ms": "2000"}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def controller():  # type: ignore[no-untyped-def]
    fake = FakeController(INTERNAL_TOKEN).start()
    yield fake
    fake.stop()


@pytest.fixture
def cluster(tmp_path: Path, controller: FakeController):  # type: ignore[no-untyped-def]
    # The first address never answers: every broker must find the controller at the second.
    addresses = f"127.0.0.1:{_closed_port()},{controller.address}"
    replicated = ReplicatedCluster(tmp_path, broker_configs={**FAST_HEARTBEATS, "controller.quorum.bootstrap.servers": addresses})
    yield replicated
    replicated.stop()


def test_brokers_register_at_the_live_controller_and_heartbeat(cluster: ReplicatedCluster, controller: FakeController) -> None:
    wait_until(lambda: {request.node_id for request in controller.registrations} == {1, 2, 3}, what="three registrations")
    ports = {request.node_id: request.port for request in controller.registrations}
    assert ports == {node_id: node.port for node_id, node in cluster.nodes.items()}
    assert all(request.host == "127.0.0.1" for request in controller.registrations)
    wait_until(lambda: len(controller.heartbeats) >= 9, what="heartbeats")
    broker = cluster.nodes[1].broker
    assert broker.controller is not None and broker.controller.controller_epoch == 7
    assert broker.controller.broker_epoch == controller.epochs[1]


def test_a_fenced_broker_registers_again_with_a_new_epoch(cluster: ReplicatedCluster, controller: FakeController) -> None:
    broker = cluster.nodes[2].broker
    assert broker.controller is not None
    wait_until(lambda: broker.controller.broker_epoch != 0, what="registration")  # type: ignore[union-attr]
    first = broker.controller.broker_epoch
    controller.fence_node = 2
    wait_until(lambda: broker.controller.broker_epoch not in (0, first), what="a new session")  # type: ignore[union-attr]
    assert sum(1 for request in controller.registrations if request.node_id == 2) >= 2


def test_a_map_from_an_older_controller_epoch_is_refused(cluster: ReplicatedCluster, controller: FakeController) -> None:
    wait_until(lambda: cluster.nodes[1].broker.controller.controller_epoch == 7, what="registration")  # type: ignore[union-attr]
    stub = admin_pb2_grpc.AdminStub(cluster.nodes[1].channel)
    request = admin_pb2.ApplyPartitionsRequest(version=50, cluster_id="c", controller_epoch=6)
    with pytest.raises(grpc.RpcError) as raised:
        stub.ApplyPartitions(request, metadata=(("x-weir-internal-token", INTERNAL_TOKEN),), timeout=10)
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "controller epoch 6" in raised.value.details()
    # A newer controller's map is taken, and from then on the old epoch 7 is refused too.
    stub.ApplyPartitions(
        admin_pb2.ApplyPartitionsRequest(version=51, cluster_id="c", controller_epoch=8), metadata=(("x-weir-internal-token", INTERNAL_TOKEN),), timeout=10
    )
    assert cluster.nodes[1].broker.controller.controller_epoch == 8  # type: ignore[union-attr]


def test_isr_shrink_counts_only_once_the_controller_stored_it(cluster: ReplicatedCluster, controller: FakeController) -> None:
    cluster.apply(leader=1, epoch=1)
    assert cluster.produce(1, [b"a"]).error_code == ErrorCode.NO_ERROR
    controller.accept_isr_changes = False
    cluster.nodes[3].stop()
    # The leader proposes (1, 2); the controller does not store it: committed ISR unchanged, and
    # acks=all cannot be acknowledged without broker 3.
    wait_until(lambda: any(list(request.new_isr) == [1, 2] for request in controller.alter_partitions), timeout_seconds=15, what="a shrink proposal")
    assert cluster.isr(1) == (1, 2, 3)
    assert cluster.produce(1, [b"b"], timeout_ms=500).error_code == ErrorCode.REQUEST_TIMED_OUT
    controller.accept_isr_changes = True
    wait_until(lambda: cluster.isr(1) == (1, 2), timeout_seconds=15, what="the stored shrink")
    assert cluster.produce(1, [b"c"]).error_code == ErrorCode.NO_ERROR
    state = admin_pb2_grpc.AdminStub(cluster.nodes[1].channel).DescribeState(
        admin_pb2.DescribeStateRequest(), metadata=(("x-weir-internal-token", INTERNAL_TOKEN),), timeout=10
    )
    described = next(entry for entry in state.partitions if entry.topic == "orders")
    assert (list(described.isr), list(described.replicas), described.leader_id, described.is_leader) == ([1, 2], [1, 2, 3], 1, True)
    assert state.broker_epoch == controller.epochs[1] and state.controller_epoch == 7
    proposal = controller.alter_partitions[-1]
    assert (proposal.topic, proposal.partition, proposal.leader_id, proposal.leader_epoch) == (QUALIFIED, 0, 1, 1)
    assert proposal.broker_epoch == controller.epochs[1]


def test_sigterm_path_asks_the_controller_to_move_leaderships(cluster: ReplicatedCluster, controller: FakeController) -> None:
    wait_until(lambda: cluster.nodes[3].broker.controller.broker_epoch != 0, what="registration")  # type: ignore[union-attr]
    epoch = cluster.nodes[3].broker.controller.broker_epoch  # type: ignore[union-attr]
    cluster.nodes[3].stop()
    assert [(request.node_id, request.broker_epoch) for request in controller.controlled_shutdowns] == [(3, epoch)]


def test_a_tenants_create_topics_is_forwarded_to_the_controller(cluster: ReplicatedCluster, controller: FakeController) -> None:
    request = broker_pb2.CreateTopicsRequest(topics=[broker_pb2.CreatableTopic(name="payments", num_partitions=6, replication_factor=3)])
    response = cluster.nodes[2].stub.CreateTopics(request, metadata=as_tenant(TENANT), timeout=10)
    assert [(topic.name, topic.error_code, topic.num_partitions) for topic in response.topics] == [("payments", 0, 6)]
    forwarded = controller.created[-1]
    assert forwarded.caller.tenant_id == TENANT
    assert [topic.name for topic in forwarded.request.topics] == ["payments"]


def test_forwarding_without_a_live_controller_is_a_retriable_error(cluster: ReplicatedCluster, controller: FakeController) -> None:
    controller.stop()
    request = broker_pb2.CreateTopicsRequest(topics=[broker_pb2.CreatableTopic(name="payments", num_partitions=1, replication_factor=1)])
    response = cluster.nodes[1].stub.CreateTopics(request, metadata=as_tenant(TENANT), timeout=30)
    assert response.topics[0].error_code == ErrorCode.NOT_CONTROLLER
    assert "no active controller" in response.topics[0].error_message
