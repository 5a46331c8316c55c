"""Three in-process brokers whose cluster map holds a tenant topic and a replicated ``__consumer_offsets``."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

from broker_nodes.coordinator.offset_store import OFFSETS_TOPIC
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc, broker_pb2
from tests.broker_nodes.replication.cluster import FAST_REPLICATION, wait_until
from tests.broker_nodes.security.managed_cluster import INTERNAL, INTERNAL_TOKEN, as_tenant, brokers
from tests.support.in_process_broker import InProcessBroker
from weir.errors import ErrorCode

TENANT = "tn-offsets"
TOPIC = "orders"
NODES = (1, 2, 3)


class OffsetsCluster:
    """Brokers 1..3; ``apply`` pushes ``orders`` (RF 3, led by 1) and ``__consumer_offsets`` led as told."""

    def __init__(self, root: Path, *, broker_configs: dict[str, str] | None = None, offsets_configs: dict[str, str] | None = None) -> None:
        configs = {**FAST_REPLICATION, **(broker_configs or {})}
        self.nodes = {
            node_id: InProcessBroker(root / f"node-{node_id}", configs, node_id=node_id, environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN}).start()
            for node_id in NODES
        }
        self.topic_id = str(uuid.uuid4())
        self.offsets_topic_id = str(uuid.uuid4())
        self.offsets_configs = {"cleanup.policy": "compact", **(offsets_configs or {})}
        self.version = 0

    def apply(self, offsets_leaders: Sequence[int], epoch: int, *, isr: Sequence[int] = NODES, to: Sequence[int] = NODES) -> None:
        """Push a map whose offsets partition i is led by ``offsets_leaders[i]`` with ``epoch``."""
        self.version += 1
        offsets = admin_pb2.TopicAssignment(
            tenant_id="",
            name=OFFSETS_TOPIC,
            topic_id=self.offsets_topic_id,
            configs=[broker_pb2.TopicConfigEntry(name=key, value=value) for key, value in self.offsets_configs.items()],
            partitions=[
                admin_pb2.PartitionAssignment(partition=index, leader_id=leader, leader_epoch=epoch, replicas=list(NODES), isr=list(isr))
                for index, leader in enumerate(offsets_leaders)
            ],
        )
        orders = admin_pb2.TopicAssignment(
            tenant_id=TENANT,
            name=TOPIC,
            topic_id=self.topic_id,
            partitions=[admin_pb2.PartitionAssignment(partition=0, leader_id=1, leader_epoch=1, replicas=list(NODES), isr=list(NODES))],
        )
        request = admin_pb2.ApplyPartitionsRequest(
            version=self.version,
            cluster_id="offsets-test",
            brokers=brokers(*((node_id, node.port) for node_id, node in self.nodes.items() if node.running is not None)),
            topics=[orders, offsets],
        )
        for node_id in to:
            admin_pb2_grpc.AdminStub(self.nodes[node_id].channel).ApplyPartitions(request, metadata=INTERNAL, timeout=10)

    def commit(self, node_id: int, group: str, offset: int) -> broker_pb2.OffsetCommitResponse:
        request = broker_pb2.OffsetCommitRequest(
            group_id=group,
            topics=[
                broker_pb2.OffsetCommitTopic(
                    topic=TOPIC, partitions=[broker_pb2.OffsetCommitPartition(partition=0, committed_offset=offset, committed_leader_epoch=-1)]
                )
            ],
        )
        return self.nodes[node_id].stub.OffsetCommit(request, metadata=as_tenant(TENANT), timeout=30)

    def committed(self, node_id: int, group: str) -> broker_pb2.OffsetFetchResponse:
        request = broker_pb2.OffsetFetchRequest(group_id=group, topics=[broker_pb2.OffsetFetchTopic(topic=TOPIC, partitions=[0])])
        return self.nodes[node_id].stub.OffsetFetch(request, metadata=as_tenant(TENANT), timeout=10)

    def committed_offset(self, node_id: int, group: str) -> int:
        """The group's committed offset of orders-0 on ``node_id``, once the node has loaded it."""
        answers: list[broker_pb2.OffsetFetchResponse] = []

        def loaded() -> bool:
            answers.append(self.committed(node_id, group))
            return answers[-1].error_code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS

        wait_until(loaded, what=f"broker {node_id} to load the offsets of {group!r}")
        answer = answers[-1]
        assert answer.error_code == ErrorCode.NO_ERROR, answer.error_message
        return answer.topics[0].partitions[0].committed_offset

    def find_coordinator(self, node_id: int, *groups: str, metadata=None) -> list[broker_pb2.Coordinator]:  # type: ignore[no-untyped-def]
        request = broker_pb2.FindCoordinatorRequest(group_ids=list(groups))
        return list(self.nodes[node_id].stub.FindCoordinator(request, metadata=metadata or as_tenant(TENANT), timeout=10).coordinators)

    def offsets_log(self, node_id: int, partition: int):  # type: ignore[no-untyped-def]
        return self.nodes[node_id].broker.log_manager.get_log(OFFSETS_TOPIC, partition)

    def stop(self) -> None:
        for node in self.nodes.values():
            node.stop()
