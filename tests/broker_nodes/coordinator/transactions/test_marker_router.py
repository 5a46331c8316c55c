"""The MarkerRouter starts every leader's WriteTxnMarkers call before it waits for any answer or writes the local markers.

Two in-process Replication servers stand for two partition leaders: each answers only once the
other has been called too (a barrier), which a router that called one leader after the other
could never pass.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from broker_nodes.cluster_state import BrokerEndpoint, ClusterSnapshot, ManagedTopic, PartitionAssignment
from broker_nodes.coordinator.transactions.marker_router import MarkerNotWrittenError, MarkerRouter
from broker_nodes.coordinator.transactions.markers import MarkerRequest, TopicPartition
from grpc_protos.weir.v1 import replication_pb2, replication_pb2_grpc

BARRIER_SECONDS = 5.0  # how long a leader waits for the other one to be called


class BarrierLeader(replication_pb2_grpc.ReplicationServicer):
    def __init__(self, barrier: threading.Barrier) -> None:
        self.barrier = barrier

    def WriteTxnMarkers(self, request, context):  # type: ignore[no-untyped-def]
        try:
            self.barrier.wait(BARRIER_SECONDS)
        except threading.BrokenBarrierError:
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "the other leader was not called meanwhile")
        results = [replication_pb2.WriteTxnMarkersPartitionResult(topic=item.topic, partition=item.partition) for item in request.partitions]
        return replication_pb2.WriteTxnMarkersResponse(partitions=results)


class LocalAppender:
    """The local MarkerAppender: writes every marker it is given."""

    def __init__(self) -> None:
        self.written: list[TopicPartition] = []

    def write_markers(self, request: MarkerRequest) -> dict[TopicPartition, Exception | None]:
        self.written.extend(request.partitions)
        return dict.fromkeys(request.partitions)


@pytest.fixture
def leaders() -> Iterator[tuple[threading.Barrier, list[int]]]:
    barrier = threading.Barrier(2)
    servers, ports = [], []
    for _ in range(2):
        server = grpc.server(ThreadPoolExecutor(max_workers=2))
        replication_pb2_grpc.add_ReplicationServicer_to_server(BarrierLeader(barrier), server)
        ports.append(server.add_insecure_port("127.0.0.1:0"))
        server.start()
        servers.append(server)
    yield barrier, ports
    for server in servers:
        server.stop(None)


def _snapshot(ports: list[int]) -> ClusterSnapshot:
    brokers = (BrokerEndpoint(1, "127.0.0.1", 1), BrokerEndpoint(2, "127.0.0.1", ports[0]), BrokerEndpoint(3, "127.0.0.1", ports[1]))
    topics = {
        f"t~{name}": ManagedTopic("t", name, f"id-{name}", {}, (PartitionAssignment(0, leader, 1, (1, 2, 3), (1, 2, 3)),))
        for name, leader in (("local", 1), ("second", 2), ("third", 3))
    }
    return ClusterSnapshot(version=1, cluster_id="c", brokers=brokers, topics=topics)


def test_every_leader_is_called_before_any_answer_is_awaited(leaders):
    barrier, ports = leaders
    appender = LocalAppender()
    router = MarkerRouter(1, lambda: _snapshot(ports), appender, channel_factory=grpc.insecure_channel, internal_token="secret", timeout_ms=1000)  # type: ignore[arg-type]
    try:
        outcomes = router.write_markers(MarkerRequest("t~app", 7, 2, True, 0, [("t~local", 0), ("t~second", 0), ("t~third", 0)]))
    finally:
        router.close()
    assert outcomes == {("t~local", 0): None, ("t~second", 0): None, ("t~third", 0): None}
    assert appender.written == [("t~local", 0)]


def test_a_leader_that_fails_gets_its_partitions_retried(leaders):
    barrier, ports = leaders
    barrier.abort()  # every leader call fails
    router = MarkerRouter(1, lambda: _snapshot(ports), LocalAppender(), channel_factory=grpc.insecure_channel, internal_token="secret", timeout_ms=1000)  # type: ignore[arg-type]
    try:
        outcomes = router.write_markers(MarkerRequest("t~app", 7, 2, True, 0, [("t~local", 0), ("t~second", 0)]))
    finally:
        router.close()
    assert outcomes[("t~local", 0)] is None
    assert isinstance(outcomes[("t~second", 0)], MarkerNotWrittenError)
