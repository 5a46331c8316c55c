"""Replica placement follows Kafka's assignReplicasToBrokers: spread, rack-aware, no broker twice."""

from __future__ import annotations

import random

import pytest

from webapp.fleet.placement import (
    InvalidReplicationFactorError,
    PlacementBroker,
    ReplicationFactorTooLargeError,
    assign_replicas,
    rack_alternated,
)


def brokers(*racks: str) -> list[PlacementBroker]:
    return [PlacementBroker(node_id=index + 1, rack=rack) for index, rack in enumerate(racks)]


def test_rack_unaware_layout_matches_kafka_round_robin() -> None:
    layout = assign_replicas(brokers("", "", ""), 6, 3, start_index=0, replica_shift=0)
    # Kafka's documented shape: leaders round robin; the follower shift grows every n partitions.
    assert layout == {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2], 3: [1, 3, 2], 4: [2, 1, 3], 5: [3, 2, 1]}


def test_leaders_spread_evenly_over_brokers() -> None:
    layout = assign_replicas(brokers("", "", "", ""), 8, 2, chooser=random.Random(7))
    leaders = [replicas[0] for replicas in layout.values()]
    assert sorted(leaders.count(node) for node in (1, 2, 3, 4)) == [2, 2, 2, 2]


@pytest.mark.parametrize("seed", range(20))
def test_no_broker_holds_two_replicas_of_a_partition(seed: int) -> None:
    layout = assign_replicas(brokers("", "", "", "", ""), 12, 3, chooser=random.Random(seed))
    assert all(len(set(replicas)) == 3 for replicas in layout.values())


@pytest.mark.parametrize("seed", range(20))
def test_rack_aware_replicas_span_distinct_racks(seed: int) -> None:
    cluster = brokers("a", "a", "b", "b", "c", "c")
    rack_of = {broker.node_id: broker.rack for broker in cluster}
    layout = assign_replicas(cluster, 9, 3, chooser=random.Random(seed))
    for replicas in layout.values():
        assert len(set(replicas)) == 3
        assert {rack_of[node] for node in replicas} == {"a", "b", "c"}


def test_rack_alternated_interleaves_racks() -> None:
    ordered = rack_alternated(brokers("a", "a", "b", "c", "b"))
    assert [broker.rack for broker in ordered] == ["a", "b", "c", "a", "b"]


def test_mixed_racks_fall_back_to_rack_unaware() -> None:
    layout = assign_replicas(brokers("a", "", "b"), 3, 1, start_index=0, replica_shift=0)
    assert layout == {0: [1], 1: [2], 2: [3]}


def test_added_partitions_continue_numbering() -> None:
    layout = assign_replicas(brokers("", "", ""), 2, 1, first_partition=3, start_index=0, replica_shift=0)
    assert layout == {3: [1], 4: [2]}


def test_replication_factor_above_broker_count_is_refused() -> None:
    with pytest.raises(ReplicationFactorTooLargeError) as raised:
        assign_replicas(brokers("", ""), 1, 3)
    assert raised.value.replication_factor == 3
    assert raised.value.available_brokers == 2
    assert raised.value.retriable is False


def test_no_brokers_refuses_any_placement() -> None:
    with pytest.raises(ReplicationFactorTooLargeError):
        assign_replicas([], 1, 1)


def test_replication_factor_below_one_is_refused() -> None:
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas(brokers(""), 1, 0)
