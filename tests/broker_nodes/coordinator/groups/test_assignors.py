"""Server-side assignors as tables, plus properties every assignment must have."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker_nodes.coordinator.groups.assignors import (
    AssignmentMember,
    UnknownAssignorError,
    assign,
    canonical_assignor_name,
    range_assign,
    round_robin_assign,
    sticky_assign,
)


def member(member_id: str, *topics: str, previous: set[tuple[str, int]] | None = None, instance_id: str = "") -> AssignmentMember:
    return AssignmentMember(member_id, frozenset(topics), instance_id, frozenset(previous or ()))


def table(assignment) -> dict[str, list[tuple[str, int]]]:  # type: ignore[no-untyped-def]
    return {member_id: sorted(partitions) for member_id, partitions in assignment.items()}


def tps(topic: str, *partitions: int) -> list[tuple[str, int]]:
    return [(topic, partition) for partition in partitions]


# ---------------------------------------------------------------------- range


def test_range_gives_each_member_a_contiguous_range_per_topic_the_first_ones_one_more() -> None:
    members = [member("b", "t0", "t1"), member("a", "t0", "t1"), member("c", "t0", "t1")]
    assert table(range_assign(members, {"t0": 7, "t1": 2})) == {
        "a": tps("t0", 0, 1, 2) + tps("t1", 0),
        "b": tps("t0", 3, 4) + tps("t1", 1),
        "c": tps("t0", 5, 6),
    }


def test_range_gives_a_topic_only_to_its_subscribers() -> None:
    members = [member("a", "orders"), member("b", "orders", "audit")]
    assert table(range_assign(members, {"orders": 4, "audit": 3})) == {"a": tps("orders", 0, 1), "b": tps("audit", 0, 1, 2) + tps("orders", 2, 3)}


def test_range_orders_static_members_by_instance_id() -> None:
    members = [member("zzz", "t", instance_id="consumer-1"), member("aaa", "t", instance_id="consumer-2")]
    assert table(range_assign(members, {"t": 2})) == {"zzz": tps("t", 0), "aaa": tps("t", 1)}


# ---------------------------------------------------------------------- round robin


def test_round_robin_deals_sorted_partitions_in_turn() -> None:
    members = [member("a", "t0", "t1"), member("b", "t0", "t1"), member("c", "t0", "t1")]
    assert table(round_robin_assign(members, {"t0": 3, "t1": 3})) == {
        "a": tps("t0", 0) + tps("t1", 0),
        "b": tps("t0", 1) + tps("t1", 1),
        "c": tps("t0", 2) + tps("t1", 2),
    }


def test_round_robin_skips_members_not_subscribed_to_the_topic() -> None:
    # Kafka's documented example: C0 [t0], C1 [t0, t1], C2 [t0, t1, t2].
    members = [member("c0", "t0"), member("c1", "t0", "t1"), member("c2", "t0", "t1", "t2")]
    assert table(round_robin_assign(members, {"t0": 1, "t1": 2, "t2": 3})) == {
        "c0": tps("t0", 0),
        "c1": tps("t1", 0),
        "c2": tps("t1", 1) + tps("t2", 0, 1, 2),
    }


# ---------------------------------------------------------------------- sticky


def test_sticky_without_history_balances_like_round_robin_counts() -> None:
    members = [member("a", "t"), member("b", "t"), member("c", "t")]
    counts = sorted(len(partitions) for partitions in sticky_assign(members, {"t": 7}).values())
    assert counts == [2, 2, 3]


def test_sticky_keeps_previous_partitions_when_a_member_joins_and_moves_only_what_it_must() -> None:
    previous_a = set(tps("t", 0, 1, 2))
    previous_b = set(tps("t", 3, 4, 5))
    members = [member("a", "t", previous=previous_a), member("b", "t", previous=previous_b), member("c", "t")]
    result = sticky_assign(members, {"t": 6})
    assert len(result["c"]) == 2
    assert result["a"] <= previous_a and result["b"] <= previous_b
    assert len(result["a"]) == len(result["b"]) == 2


def test_sticky_hands_the_partitions_of_a_member_that_left_to_the_others_and_keeps_theirs() -> None:
    members = [member("a", "t", previous=set(tps("t", 0, 1))), member("b", "t", previous=set(tps("t", 2, 3)))]
    result = sticky_assign(members, {"t": 6})  # partitions 4 and 5 belonged to a member that left
    assert set(tps("t", 0, 1)) <= result["a"] and set(tps("t", 2, 3)) <= result["b"]
    assert len(result["a"]) == len(result["b"]) == 3


def test_sticky_drops_previous_partitions_of_topics_no_longer_subscribed_or_gone() -> None:
    members = [member("a", "t", previous={("old", 0), ("t", 5)}), member("b", "t")]
    result = sticky_assign(members, {"t": 2})
    assert table(result) == {"a": tps("t", 0), "b": tps("t", 1)} or table(result) == {"a": tps("t", 1), "b": tps("t", 0)}


def test_sticky_with_different_subscriptions_gives_the_shared_topic_to_the_less_loaded_member() -> None:
    members = [member("a", "big", "shared"), member("b", "shared")]
    result = sticky_assign(members, {"big": 4, "shared": 4})
    assert table(result) == {"a": tps("big", 0, 1, 2, 3), "b": tps("shared", 0, 1, 2, 3)}


# ---------------------------------------------------------------------- names and properties


def test_names_and_aliases() -> None:
    assert [canonical_assignor_name(name) for name in ("range", "RoundRobin", "uniform", "cooperative-sticky", "sticky")] == [
        "range",
        "roundrobin",
        "sticky",
        "sticky",
        "sticky",
    ]
    with pytest.raises(UnknownAssignorError, match="'fancy' is not supported"):
        canonical_assignor_name("fancy")


topic_names = st.sampled_from(["t0", "t1", "t2", "t3"])
members_strategy = st.lists(
    st.tuples(
        st.sampled_from("abcdefgh"), st.frozensets(topic_names, min_size=0, max_size=4), st.frozensets(st.tuples(topic_names, st.integers(0, 7)), max_size=6)
    ),
    min_size=0,
    max_size=6,
    unique_by=lambda entry: entry[0],
)
topics_strategy = st.dictionaries(topic_names, st.integers(1, 8), max_size=4)


@settings(max_examples=150, deadline=None)
@given(members=members_strategy, partitions=topics_strategy, name=st.sampled_from(["range", "roundrobin", "sticky"]))
def test_every_subscribed_partition_goes_to_exactly_one_subscriber(members, partitions, name) -> None:  # type: ignore[no-untyped-def]
    specs = [AssignmentMember(member_id, topics, "", previous) for member_id, topics, previous in members]
    result = assign(name, specs, partitions)
    assert set(result) == {spec.member_id for spec in specs}
    owners: dict[tuple[str, int], str] = {}
    for spec in specs:
        for topic_partition in result[spec.member_id]:
            assert topic_partition[0] in spec.topics and 0 <= topic_partition[1] < partitions[topic_partition[0]]
            assert topic_partition not in owners
            owners[topic_partition] = spec.member_id
    subscribed = {(topic, number) for topic, count in partitions.items() if any(topic in spec.topics for spec in specs) for number in range(count)}
    assert set(owners) == subscribed
    assert assign(name, list(reversed(specs)), partitions) == result  # input order does not matter


@settings(max_examples=150, deadline=None)
@given(count=st.integers(1, 6), partitions=st.integers(0, 40), previous=st.lists(st.integers(0, 39), max_size=40))
def test_sticky_balances_members_with_the_same_subscription_within_one(count, partitions, previous) -> None:  # type: ignore[no-untyped-def]
    specs = [member(f"m{index}", "t", previous={("t", number) for number in previous if number % count == index}) for index in range(count)]
    loads = [len(partitions_of) for partitions_of in sticky_assign(specs, {"t": partitions} if partitions else {}).values()]
    assert max(loads) - min(loads) <= 1
