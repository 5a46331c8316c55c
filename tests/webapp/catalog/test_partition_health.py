"""Partition health by Kafka's rules: offline, under-replicated, below min.insync.replicas."""

from __future__ import annotations

import pytest

from webapp.catalog.partition_health import (
    OFFLINE,
    OK,
    UNDER_MIN_ISR,
    UNDER_REPLICATED,
    HealthCounts,
    min_insync_replicas,
    partition_health,
    replica_states,
)


@pytest.mark.parametrize(
    "leader,replicas,isr,min_isr,expected_flags,expected_state",
    [
        (1, [1, 2, 3], [1, 2, 3], 2, (False, False, False), OK),
        (1, [1, 2, 3], [1, 2], 2, (False, True, False), UNDER_REPLICATED),
        (3, [1, 2, 3], [3], 2, (False, True, True), UNDER_MIN_ISR),
        (-1, [1, 2, 3], [2], 1, (True, True, True), OFFLINE),
        (-1, [1], [1], 1, (True, False, True), OFFLINE),
        (1, [1], [1], 2, (False, False, True), UNDER_MIN_ISR),
    ],
    ids=["in-sync", "one-follower-out", "isr-below-min", "no-leader", "no-leader-full-isr", "min-isr-above-replication"],
)
def test_partition_health_follows_kafkas_topic_command(
    leader: int, replicas: list[int], isr: list[int], min_isr: int, expected_flags: tuple[bool, bool, bool], expected_state: str
) -> None:
    health = partition_health(leader, replicas, isr, min_isr)

    assert (health.is_offline, health.is_under_replicated, health.is_under_min_isr) == expected_flags
    assert health.state == expected_state


def test_state_labels_name_each_condition() -> None:
    assert partition_health(3, [1, 2, 3], [3], 2).label == "below min ISR"
    assert partition_health(-1, [1, 2], [], 1).label == "offline"


def test_counts_overlap_as_kafkas_do() -> None:
    counts = HealthCounts()
    for health in (partition_health(1, [1, 2], [1, 2], 1), partition_health(-1, [1, 2], [2], 1), partition_health(1, [1, 2], [1], 2)):
        counts.add(health)

    assert (counts.partitions, counts.under_replicated, counts.under_min_isr, counts.offline) == (3, 2, 2, 1)
    assert not counts.healthy
    assert HealthCounts(partitions=4).healthy


def test_min_insync_replicas_is_the_override_else_the_default() -> None:
    assert min_insync_replicas({}) == 1
    assert min_insync_replicas({"min.insync.replicas": "2", "retention.ms": "1000"}) == 2


def test_replica_states_keep_the_preferred_leader_first() -> None:
    assert replica_states(3, [2, 3, 1], [3, 1]) == [(2, False, False), (3, True, True), (1, False, True)]
