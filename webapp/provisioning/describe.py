"""A topic's partitions as placed in the database and as their brokers report them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from django.views.decorators.debug import sensitive_variables

from grpc_protos.weir.v1 import admin_pb2
from webapp import tenant_clients
from webapp.accounts.facade import Tenant
from webapp.catalog.facade import Partition, Topic
from webapp.fleet.facade import BrokerNode
from webapp.provisioning.broker_client import BrokerAddress, BrokerAdminClient, BrokerCallError

# A page showing partitions must not hang on a dead broker: describe calls get a short deadline.
DESCRIBE_TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True)
class PartitionDescription:
    """One partition: its placement, and live figures from its leader when it answered.

    ``available`` is False when the leader did not answer or does not host the partition
    (yet); the offsets and size are then ``None``.
    """

    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    available: bool
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    high_watermark: int | None = None
    size_bytes: int | None = None
    # Clients' traffic at the leader since its process (``counted_by``) started: two
    # descriptions counted by the same process give rates (the dashboard's live throughput).
    counted_by: str | None = None
    bytes_in_total: int = 0
    records_in_total: int = 0
    bytes_out_total: int = 0
    records_out_total: int = 0


@sensitive_variables("tenant_token")
def _describe_brokers(brokers: list[BrokerAddress], tenant_token: str | None) -> dict[int, admin_pb2.DescribeStateResponse | None]:
    def describe(broker: BrokerAddress) -> admin_pb2.DescribeStateResponse | None:
        try:
            with BrokerAdminClient(broker, tenant_token=tenant_token, timeout_seconds=DESCRIBE_TIMEOUT_SECONDS) as client:
                return client.describe_state()
        except BrokerCallError:
            return None

    if not brokers:
        return {}
    # In parallel, so that one slow broker costs one deadline, not one per broker.
    with ThreadPoolExecutor(max_workers=min(8, len(brokers))) as pool:
        return dict(zip((broker.node_id for broker in brokers), pool.map(describe, brokers)))


def describe_partitions(topic: Topic) -> list[PartitionDescription]:
    """Every partition of ``topic`` in index order, with offsets and sizes from its leader.

    Two queries and one DescribeState per leader broker, whatever the partition count.
    """
    partitions = list(Partition.objects.filter(topic=topic).order_by("index"))
    leader_ids = {partition.leader for partition in partitions if partition.leader >= 0}
    nodes = BrokerNode.objects.filter(node_id__in=leader_ids)
    # A tenant's topic is read with a short-lived token of that tenant: the web process, which
    # shows these pages, holds no internal token. Internal topics need the internal token.
    token = tenant_clients.tenant_token(topic.tenant.public_id) if topic.tenant_id is not None else None
    states = _describe_brokers([BrokerAddress(node.node_id, node.address) for node in nodes], token)
    topic_id = str(topic.topic_id)
    hosted: dict[tuple[int, int], admin_pb2.HostedPartition] = {}
    incarnations: dict[int, str] = {}
    for node_id, state in states.items():
        if state is None:
            continue
        incarnations[node_id] = state.incarnation
        for entry in state.partitions:
            if entry.topic_id == topic_id:
                hosted[(node_id, entry.partition)] = entry
    descriptions = []
    for partition in partitions:
        entry = hosted.get((partition.leader, partition.index))
        descriptions.append(
            PartitionDescription(
                partition=partition.index,
                leader=partition.leader,
                leader_epoch=partition.leader_epoch,
                replicas=list(partition.replicas),
                isr=list(partition.isr),
                available=entry is not None,
                log_start_offset=entry.log_start_offset if entry is not None else None,
                log_end_offset=entry.log_end_offset if entry is not None else None,
                high_watermark=entry.high_watermark if entry is not None else None,
                size_bytes=entry.size_bytes if entry is not None else None,
                counted_by=incarnations.get(partition.leader) or None if entry is not None else None,
                bytes_in_total=entry.bytes_in_total if entry is not None else 0,
                records_in_total=entry.records_in_total if entry is not None else 0,
                bytes_out_total=entry.bytes_out_total if entry is not None else 0,
                records_out_total=entry.records_out_total if entry is not None else 0,
            )
        )
    return descriptions


@dataclass(frozen=True)
class PartitionTraffic:
    """Clients' traffic to one partition at one broker since that broker process
    (``counted_by``) started."""

    topic_id: str
    partition: int
    node_id: int
    counted_by: str
    bytes_in_total: int
    records_in_total: int
    bytes_out_total: int
    records_out_total: int


def describe_tenant_traffic(tenant: Tenant) -> list[PartitionTraffic]:
    """The traffic totals of every partition of ``tenant`` at every broker that answered
    (one DescribeState per broker, with a token of that tenant: it sees its partitions only)."""
    nodes = BrokerNode.objects.all()
    states = _describe_brokers([BrokerAddress(node.node_id, node.address) for node in nodes], tenant_clients.tenant_token(tenant.public_id))
    traffic = []
    for node_id, state in states.items():
        if state is None:
            continue
        for entry in state.partitions:
            if entry.tenant_id != tenant.public_id:
                continue
            traffic.append(
                PartitionTraffic(
                    topic_id=entry.topic_id,
                    partition=entry.partition,
                    node_id=node_id,
                    counted_by=state.incarnation,
                    bytes_in_total=entry.bytes_in_total,
                    records_in_total=entry.records_in_total,
                    bytes_out_total=entry.bytes_out_total,
                    records_out_total=entry.records_out_total,
                )
            )
    return traffic
