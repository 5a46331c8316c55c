"""Three in-process brokers forming replicated partitions through ApplyPartitions, and helpers to watch them."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path

from broker_nodes import names
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc, broker_pb2
from tests.broker_nodes.security.managed_cluster import INTERNAL_TOKEN, as_tenant, brokers
from tests.broker_nodes.server.helpers import batch
from tests.support.in_process_broker import InProcessBroker
from weir.records import iter_batch_positions

TENANT = "tn-repl"
TOPIC = "orders"
QUALIFIED = names.qualify(TENANT, TOPIC)
FAST_REPLICATION = {
    "offsets.topic.num.partitions": "1",
    "replica.lag.time.max.ms": "1500",
    "replica.fetch.wait.max.ms": "100",
    "replica.fetch.backoff.ms": "50",
}


class ReplicatedCluster:
    """Brokers 1..3 in-process; ``apply`` pushes one RF=3 topic with a given leader and epoch to chosen brokers."""

    def __init__(self, root: Path, *, topic_configs: dict[str, str] | None = None, broker_configs: dict[str, str] | None = None) -> None:
        configs = {**FAST_REPLICATION, **(broker_configs or {})}
        self.nodes = {
            node_id: InProcessBroker(root / f"node-{node_id}", configs, node_id=node_id, environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN}).start()
            for node_id in (1, 2, 3)
        }
        self.topic_id = str(uuid.uuid4())
        self.topic_configs = topic_configs or {}
        self.version = 0

    def apply(self, leader: int, epoch: int, *, isr: list[int] | None = None, to: list[int] | None = None) -> None:
        self.version += 1
        request = admin_pb2.ApplyPartitionsRequest(
            version=self.version,
            cluster_id="replication-test",
            brokers=brokers(*((node_id, node.port) for node_id, node in self.nodes.items() if node.running is not None)),
            topics=[
                admin_pb2.TopicAssignment(
                    tenant_id=TENANT,
                    name=TOPIC,
                    topic_id=self.topic_id,
                    configs=[broker_pb2.TopicConfigEntry(name=key, value=value) for key, value in self.topic_configs.items()],
                    partitions=[admin_pb2.PartitionAssignment(partition=0, leader_id=leader, leader_epoch=epoch, replicas=[1, 2, 3], isr=isr or [1, 2, 3])],
                )
            ],
        )
        for node_id in to or list(self.nodes):
            admin_pb2_grpc.AdminStub(self.nodes[node_id].channel).ApplyPartitions(request, metadata=((("x-weir-internal-token", INTERNAL_TOKEN)),), timeout=10)

    def produce(self, node_id: int, values: list[bytes], *, acks: int = -1, timeout_ms: int = 5000) -> broker_pb2.ProducePartitionResponse:
        request = broker_pb2.ProduceRequest(
            acks=acks,
            timeout_ms=timeout_ms,
            topics=[broker_pb2.ProduceTopicData(topic=TOPIC, partitions=[broker_pb2.ProducePartitionData(partition=0, records=batch(values))])],
        )
        return self.nodes[node_id].stub.Produce(request, metadata=as_tenant(TENANT), timeout=timeout_ms / 1000 + 10).topics[0].partitions[0]

    def fetch(self, node_id: int, offset: int = 0) -> broker_pb2.FetchPartitionResponse:
        request = broker_pb2.FetchRequest(
            max_wait_ms=0,
            topics=[broker_pb2.FetchTopic(topic=TOPIC, partitions=[broker_pb2.FetchPartition(partition=0, fetch_offset=offset, current_leader_epoch=-1)])],
        )
        return self.nodes[node_id].stub.Fetch(request, metadata=as_tenant(TENANT), timeout=10).topics[0].partitions[0]

    def log(self, node_id: int):  # type: ignore[no-untyped-def]
        return self.nodes[node_id].broker.log_manager.get_log(QUALIFIED, 0)

    def log_bytes(self, node_id: int) -> bytes:
        """Every stored batch of the node's log, across segments (a read stops at a segment's end)."""
        log = self.log(node_id)
        chunks = []
        offset = log.log_start_offset
        for _ in range(10_000):
            if offset >= log.log_end_offset:
                break
            data = bytes(log.read(offset, 1 << 30, max_offset=log.log_end_offset).records)
            if not data:
                break
            chunks.append(data)
            offset = _next_offset(data)
        return b"".join(chunks)

    def isr(self, leader: int) -> tuple[int, ...] | None:
        return self.nodes[leader].broker.replication.isr(QUALIFIED, 0)

    def stop(self) -> None:
        for node in self.nodes.values():
            node.stop()


def _next_offset(data: bytes) -> int:
    """The offset after the last batch in ``data``."""
    last = None
    for _, end in iter_batch_positions(data):
        last = end
    assert last is not None
    return last.next_offset


def wait_until(condition: Callable[[], bool], *, timeout_seconds: float = 10.0, what: str = "condition") -> None:
    """Poll ``condition`` every 20 ms until it holds; AssertionError after ``timeout_seconds``."""
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout_seconds} s waiting for {what}")
