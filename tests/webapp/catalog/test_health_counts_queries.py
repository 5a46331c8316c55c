"""Partition health counted by the database (the sizes of the replica list and ISR) agrees with
Kafka's rules on the lists themselves, for a page of topics and for one topic read with its
partitions in one query."""

from __future__ import annotations

import pytest

from webapp.accounts.actions.signup import do_sign_up
from webapp.accounts.models import Tenant
from webapp.catalog.models import Partition, Topic
from webapp.catalog.partition_health import health_counts_by_topic, topic_health_counts, topic_row_with_health_counts

pytestmark = pytest.mark.django_db

ROW_FIELDS = ("pk", "name", "configs")
# (leader, replicas, isr) of each partition of the topic "mixed": in sync, a follower out, offline
# with its last leader still in the ISR, offline with an empty ISR.
MIXED_PARTITIONS = [(1, [1, 2, 3], [1, 2, 3]), (2, [1, 2, 3], [2, 3]), (-1, [1, 2, 3], [3]), (-1, [1, 2], [])]


@pytest.fixture
def tenant() -> Tenant:
    return do_sign_up("health-owner", "owner@health.example", "correct-horse-battery-staple-42", "Health Inc").tenant


def make_topic(tenant: Tenant, name: str, partitions: list[tuple[int, list[int], list[int]]], configs: dict[str, str] | None = None) -> Topic:
    topic = Topic.objects.create(tenant=tenant, name=name, partition_count=len(partitions), replication_factor=3, configs=configs or {})
    for index, (leader, replicas, isr) in enumerate(partitions):
        Partition.objects.create(topic=topic, index=index, leader=leader, replicas=replicas, isr=isr)
    return topic


def test_a_page_of_topics_counts_as_the_rules_on_each_topics_lists(tenant: Tenant) -> None:
    mixed = make_topic(tenant, "mixed", MIXED_PARTITIONS, {"min.insync.replicas": "3"})
    healthy = make_topic(tenant, "healthy", [(1, [1, 2, 3], [1, 2, 3])])
    empty = make_topic(tenant, "empty", [])

    counts = health_counts_by_topic(list(Topic.objects.filter(tenant=tenant).values_list(*ROW_FIELDS, named=True)))

    for topic in (mixed, healthy, empty):
        assert counts[topic.pk] == topic_health_counts(topic)
    assert (counts[mixed.pk].offline, counts[mixed.pk].under_replicated, counts[mixed.pk].under_min_isr) == (2, 3, 3)


def test_one_topic_with_its_partitions_in_one_query(tenant: Tenant, django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    mixed = make_topic(tenant, "mixed", MIXED_PARTITIONS)
    make_topic(tenant, "other", [(-1, [1], [])])

    with django_assert_num_queries(1):
        found = topic_row_with_health_counts(Topic.objects.filter(tenant=tenant, name="mixed"), ROW_FIELDS)

    assert found is not None
    row, counts = found
    assert (row.pk, row.name) == (mixed.pk, "mixed")
    assert counts == topic_health_counts(mixed)


def test_a_topic_without_partitions_is_found_with_zero_counts_and_a_missing_one_is_none(tenant: Tenant) -> None:
    make_topic(tenant, "empty", [])

    found = topic_row_with_health_counts(Topic.objects.filter(tenant=tenant, name="empty"), ROW_FIELDS)

    assert found is not None and found[1].partitions == 0 and found[1].healthy
    assert topic_row_with_health_counts(Topic.objects.filter(tenant=tenant, name="missing"), ROW_FIELDS) is None


def test_a_queryset_of_several_topics_is_refused(tenant: Tenant) -> None:
    make_topic(tenant, "a", [(1, [1], [1])])
    make_topic(tenant, "b", [(1, [1], [1])])

    with pytest.raises(Topic.MultipleObjectsReturned):
        topic_row_with_health_counts(Topic.objects.filter(tenant=tenant), ROW_FIELDS)
