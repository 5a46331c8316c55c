"""Groups on a replicated __consumer_offsets: a new coordinator loads them and members go on with their ids and epochs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_nodes import names
from broker_nodes.coordinator.groups.records import GROUP_RECORD_KEY_VERSIONS, key_version
from grpc_protos.weir.v1 import broker_pb2
from log_formats.offset_commit_records import partition_for_group
from tests.broker_nodes.coordinator.groups.raw_member import RawMember, settle
from tests.broker_nodes.coordinator.offsets_cluster import TENANT, TOPIC, OffsetsCluster
from tests.broker_nodes.replication.cluster import wait_until
from tests.broker_nodes.security.managed_cluster import as_tenant
from weir.errors import ErrorCode
from weir.records import iter_records

GROUP = "billing"
PARTITION = partition_for_group(names.qualify(TENANT, GROUP), 2)  # maps push 2 offsets partitions
CONFIGS = {"group.consumer.heartbeat.interval.ms": "200"}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[OffsetsCluster]:
    running = OffsetsCluster(tmp_path, broker_configs=CONFIGS)
    try:
        yield running
    finally:
        running.stop()


def beat_once_loaded(member: RawMember) -> broker_pb2.ConsumerGroupHeartbeatResponse:
    """Heartbeat, retrying while the coordinator is still loading the partition (bounded)."""
    answers: list[broker_pb2.ConsumerGroupHeartbeatResponse] = []

    def answered() -> bool:
        answers.append(member.heartbeat())
        return answers[-1].error_code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS

    wait_until(answered, what="the coordinator to load the group")
    return answers[-1]


def group_record_count(cluster: OffsetsCluster, node_id: int) -> int:
    log = cluster.offsets_log(node_id, PARTITION)
    data = bytes(log.read(0, 1 << 20, max_offset=log.log_end_offset).records)
    return sum(1 for record in iter_records(data) if record.key is not None and key_version(bytes(record.key)) in GROUP_RECORD_KEY_VERSIONS)


def members_at(cluster: OffsetsCluster, node_id: int, *members: RawMember) -> None:
    for member in members:
        member.stub = cluster.nodes[node_id].stub


def test_group_moves_to_the_new_leader_of_its_offsets_partition(cluster: OffsetsCluster) -> None:
    cluster.apply([1, 1], epoch=1)
    first = RawMember(cluster.nodes[1].stub, GROUP, [TOPIC], metadata=as_tenant(TENANT))
    second = RawMember(cluster.nodes[1].stub, GROUP, [TOPIC], metadata=as_tenant(TENANT))
    assert first.join().error_code == ErrorCode.NO_ERROR
    assert second.join().error_code == ErrorCode.NO_ERROR
    settle([first, second])
    owner = first if first.owned else second
    commit = broker_pb2.OffsetCommitRequest(
        group_id=GROUP,
        member_id=owner.member_id,
        generation_id=owner.epoch,
        topics=[
            broker_pb2.OffsetCommitTopic(topic=TOPIC, partitions=[broker_pb2.OffsetCommitPartition(partition=0, committed_offset=7, committed_leader_epoch=-1)])
        ],
    )
    assert cluster.nodes[1].stub.OffsetCommit(commit, metadata=as_tenant(TENANT), timeout=30).topics[0].partitions[0].error_code == ErrorCode.NO_ERROR
    # acks=all: every in-sync replica has the group's records once the answers came.
    written = group_record_count(cluster, 1)
    assert written > 0 and all(group_record_count(cluster, node_id) == written for node_id in (2, 3))

    epochs = (first.epoch, second.epoch)
    cluster.apply([2, 2], epoch=2)
    assert first.heartbeat().error_code == ErrorCode.NOT_COORDINATOR
    members_at(cluster, 2, first, second)
    for member in (first, second):
        answer = beat_once_loaded(member)
        assert answer.error_code == ErrorCode.NO_ERROR, answer.error_message
    assert (first.epoch, second.epoch) == epochs
    [group] = (
        cluster.nodes[2].stub.ConsumerGroupDescribe(broker_pb2.ConsumerGroupDescribeRequest(group_ids=[GROUP]), metadata=as_tenant(TENANT), timeout=10).groups
    )
    assert group.state == "Stable" and {member.member_id for member in group.members} == {first.member_id, second.member_id}
    assert cluster.committed_offset(2, GROUP) == 7
    # The owner goes on committing at the new coordinator with the epoch it had.
    assert cluster.nodes[2].stub.OffsetCommit(commit, metadata=as_tenant(TENANT), timeout=30).topics[0].partitions[0].error_code == ErrorCode.NO_ERROR


def test_group_survives_the_loss_of_its_coordinator(cluster: OffsetsCluster) -> None:
    cluster.apply([1, 1], epoch=1)
    member = RawMember(cluster.nodes[1].stub, GROUP, [TOPIC], metadata=as_tenant(TENANT), session_timeout_ms=30_000)
    member.join()
    cluster.nodes[1].stop()
    cluster.apply([3, 3], epoch=2, isr=[2, 3], to=[2, 3])
    members_at(cluster, 3, member)
    answer = beat_once_loaded(member)
    assert (answer.error_code, answer.member_epoch) == (ErrorCode.NO_ERROR, 1)
    assert member.owned == {(TOPIC, 0)}
    late = RawMember(cluster.nodes[3].stub, GROUP, [TOPIC], metadata=as_tenant(TENANT))
    assert late.join().member_epoch == 2
    settle([member, late])
    assert member.owned | late.owned == {(TOPIC, 0)} and not (member.owned and late.owned)
