"""Proof: requests a consumer group must refuse get clear errors and change nothing.

Two member processes (:mod:`tests.cluster.group_workload`) share a two-partition topic and have
committed every record. Against that stable group the test sends, to its coordinator: a commit
with the member's previous epoch (STALE_MEMBER_EPOCH), a commit from an unknown member
(UNKNOWN_MEMBER_ID), a commit of a partition the member does not own (a per-partition
INVALID_REQUEST naming the partition); through the AdminClient and ``weir.group_tools``: a
description of a group that does not exist (GROUP_ID_NOT_FOUND), an offset reset and an offset
alteration while the members are active (UNKNOWN_MEMBER_ID naming how many), a delete
(NON_EMPTY_GROUP). After each, the group's members, epochs, assignments and committed offsets
are what they were, and the group still consumes and commits. Once the members have closed,
the same reset goes through.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.cluster.group_workload import GroupObserver, MemberFleet, MemberSettings, check_committed_never_backwards, group_cluster_timings
from tests.cluster.workload import produce_and_wait
from tests.support.real_cluster import RealCluster
from weir import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from weir.admin import AdminClient
from weir.errors import ErrorCode
from weir.group_tools import OffsetChange, apply_offset_reset, plan_offset_reset

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(180)]

TOPIC = "refusals"
GROUP = "careful"
PARTITIONS = 2
RECORDS = 10  # per partition, before the refusals
MORE_RECORDS = 5  # per partition, after them
SESSION_TIMEOUT_MS = 6000
MAX_POLL_INTERVAL_MS = 30000
WAIT_SECONDS = 30.0
ADMIN_SECONDS = 15.0


def produce(cluster: RealCluster, count: int, start: int) -> None:
    for partition in range(PARTITIONS):
        reports = produce_and_wait(
            cluster.client_config(acks="all"), TOPIC, partition, [f"{partition}:{number}".encode() for number in range(start, start + count)]
        )
        assert all(error is None for error, _ in reports), reports


def group_view(admin: AdminClient) -> tuple[str, dict[str, tuple[int | None, list[int]]], dict[int, int]]:
    """(state, member id -> (epoch, partitions), partition -> committed offset), as the coordinator answers."""
    description = admin.describe_consumer_groups([GROUP], request_timeout=ADMIN_SECONDS)[GROUP].result(ADMIN_SECONDS)
    members = {member.member_id: (member.member_epoch, sorted(tp.partition for tp in member.assignment.topic_partitions)) for member in description.members}
    committed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP)], request_timeout=ADMIN_SECONDS)[GROUP].result(ADMIN_SECONDS)
    return description.state.state_name, members, {tp.partition: tp.offset for tp in committed.topic_partitions or []}


def commit_request(member_id: str, epoch: int, offsets: dict[int, int]) -> broker_pb2.OffsetCommitRequest:
    partitions = [
        broker_pb2.OffsetCommitPartition(partition=partition, committed_offset=offset, committed_leader_epoch=-1) for partition, offset in offsets.items()
    ]
    return broker_pb2.OffsetCommitRequest(
        group_id=GROUP, generation_id=epoch, member_id=member_id, topics=[broker_pb2.OffsetCommitTopic(topic=TOPIC, partitions=partitions)]
    )


def refused(call: Any) -> KafkaException:
    with pytest.raises(KafkaException) as refusal:
        call()
    return refusal.value


def test_stale_unknown_and_misdirected_requests_are_refused_clearly_and_leave_the_group_as_it_was(start_cluster, tmp_path: Path) -> None:
    cluster = start_cluster(timings=group_cluster_timings())
    cluster.create_tenant()
    cluster.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
    produce(cluster, RECORDS, 0)
    settings = MemberSettings(cluster.client_config(), GROUP, TOPIC, SESSION_TIMEOUT_MS, MAX_POLL_INTERVAL_MS)
    admin = AdminClient(cluster.client_config())
    with MemberFleet(tmp_path / "members", settings) as fleet, GroupObserver(cluster.client_config(), GROUP, TOPIC) as observer:

        def settled_with(count: int, committed: int) -> bool:
            snapshot = observer.latest_snapshot()
            return (
                len(fleet.live()) == count
                and fleet.settled(snapshot, PARTITIONS)
                and observer.latest_offsets() == {partition: committed for partition in range(PARTITIONS)}
            )

        # a joins alone (epoch 1), then b: a revokes a partition and moves to epoch 2, so 1 is a's stale epoch.
        fleet.start("a")
        cluster.wait_until(lambda: settled_with(1, RECORDS), "a holds both partitions and committed every record", WAIT_SECONDS)
        fleet.start("b")
        cluster.wait_until(lambda: settled_with(2, RECORDS), "a and b share the partitions", WAIT_SECONDS)
        before = group_view(admin)
        state, members, committed = before
        a_id, b_id = fleet.members["a"].member_id(), fleet.members["b"].member_id()
        (a_epoch, [a_partition]), (_, [b_partition]) = members[a_id], members[b_id]  # type: ignore[index]
        assert state == "Stable" and a_epoch is not None and a_epoch >= 2, f"a moved to a newer epoch when b joined: {before}"
        coordinator = observer.latest_snapshot().coordinator  # type: ignore[union-attr]

        # A commit with a's previous epoch: refused as a whole; nothing written (it would move a's partition back to 0).
        stale = cluster.call_broker(coordinator, "OffsetCommit", commit_request(a_id, a_epoch - 1, {a_partition: 0}))  # type: ignore[arg-type]
        assert stale.error_code == ErrorCode.STALE_MEMBER_EPOCH, stale  # type: ignore[attr-defined]
        assert f"carries member epoch {a_epoch - 1}, but its epoch is now {a_epoch}" in stale.error_message, stale.error_message  # type: ignore[attr-defined]
        assert group_view(admin) == before

        # A member the coordinator does not know.
        unknown = cluster.call_broker(coordinator, "OffsetCommit", commit_request("no-such-member", a_epoch, {a_partition: 0}))  # type: ignore[arg-type]
        assert unknown.error_code == ErrorCode.UNKNOWN_MEMBER_ID and "no-such-member" in unknown.error_message, unknown  # type: ignore[attr-defined]
        assert group_view(admin) == before

        # a commits b's partition with its current epoch: refused for that partition, naming it.
        misdirected = cluster.call_broker(coordinator, "OffsetCommit", commit_request(a_id, a_epoch, {b_partition: 0}))  # type: ignore[arg-type]
        [answer] = [partition for topic in misdirected.topics for partition in topic.partitions]  # type: ignore[attr-defined]
        assert misdirected.error_code == 0 and answer.partition == b_partition and answer.error_code == ErrorCode.INVALID_REQUEST, misdirected  # type: ignore[attr-defined]
        assert f"partition {b_partition} of topic '{TOPIC}' is not assigned to member '{a_id}'" in answer.error_message, answer.error_message
        assert group_view(admin) == before

        # A group that does not exist.
        missing = refused(lambda: admin.describe_consumer_groups(["nobody-home"], request_timeout=ADMIN_SECONDS)["nobody-home"].result(ADMIN_SECONDS))
        assert missing.args[0].code() == ErrorCode.GROUP_ID_NOT_FOUND and "nobody-home" in missing.args[0].str(), missing  # type: ignore[attr-defined]

        # An offset reset while the members are active: the dry run shows it, applying it is refused.
        plan = plan_offset_reset(admin, GROUP, topics=[TOPIC], to="earliest", timeout=ADMIN_SECONDS)
        assert plan == [OffsetChange(TOPIC, partition, RECORDS, 0) for partition in range(PARTITIONS)]
        active = refused(lambda: apply_offset_reset(admin, GROUP, plan, timeout=ADMIN_SECONDS))
        assert active.args[0].code() == ErrorCode.UNKNOWN_MEMBER_ID and "2 active members" in active.args[0].str(), active  # type: ignore[attr-defined]
        altered = refused(
            lambda: admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(GROUP, [TopicPartition(TOPIC, a_partition, 0)])], request_timeout=ADMIN_SECONDS
            )[GROUP].result(ADMIN_SECONDS)
        )
        assert altered.args[0].code() == ErrorCode.UNKNOWN_MEMBER_ID, altered  # type: ignore[attr-defined]
        assert group_view(admin) == before

        # Deleting a group with members.
        non_empty = refused(lambda: admin.delete_consumer_groups([GROUP], request_timeout=ADMIN_SECONDS)[GROUP].result(ADMIN_SECONDS))
        assert non_empty.args[0].code() == ErrorCode.NON_EMPTY_GROUP and "2 members" in non_empty.args[0].str(), non_empty  # type: ignore[attr-defined]
        assert group_view(admin) == before

        # The group is unharmed: it consumes and commits what comes next.
        produce(cluster, MORE_RECORDS, RECORDS)
        cluster.wait_until(lambda: settled_with(2, RECORDS + MORE_RECORDS), "a and b committed the new records", WAIT_SECONDS)
        assert {member_id: epoch for member_id, (epoch, _) in group_view(admin)[1].items()} == {a_id: a_epoch, b_id: members[b_id][0]}
        exits = fleet.close_all()
        assert all(code == 0 for code in exits.values()), f"{exits}\n{fleet.output_tails()}"

        # Once the members have left, the same reset goes through.
        cluster.wait_until(lambda: group_view(admin)[0] == "Empty", "the group is empty after its members closed", WAIT_SECONDS)
        apply_offset_reset(admin, GROUP, plan_offset_reset(admin, GROUP, topics=[TOPIC], to="earliest", timeout=ADMIN_SECONDS), timeout=ADMIN_SECONDS)
        assert group_view(admin)[2] == {partition: 0 for partition in range(PARTITIONS)}
        observer.stop()
    admin.close()
    offsets = [(t, sample) for t, sample in observer.offsets() if any(sample.values())]  # up to the deliberate reset
    assert not check_committed_never_backwards(offsets), offsets
