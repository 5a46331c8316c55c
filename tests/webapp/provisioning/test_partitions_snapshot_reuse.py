"""The partitions snapshot reuses, from the previous build in this process, the entry of every
topic whose database values did not change, and builds the others afresh: a map built with that
reuse equals one built from nothing, after every kind of change a topic can see."""

from __future__ import annotations

import pytest

from webapp.accounts.actions.signup import do_sign_up
from webapp.accounts.models import Tenant
from webapp.catalog.models import Partition, Topic
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.provisioning import snapshots
from webapp.provisioning.models import SnapshotKind
from webapp.provisioning.snapshots import build_snapshots

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenant() -> Tenant:
    return do_sign_up("reuse-owner", "reuse-owner@example.com", "a-long-enough-password-1", "Reuse").tenant


@pytest.fixture
def topics(tenant: Tenant) -> list[Topic]:
    for node_id in (1, 2, 3):
        BrokerNode.objects.create(node_id=node_id, host="127.0.0.1", port=9000 + node_id, state=BrokerState.ONLINE)
    created = Topic.objects.bulk_create(
        [Topic(tenant=tenant, name=f"topic-{index}", partition_count=2, replication_factor=2, configs={}) for index in range(5)]
    )
    Partition.objects.bulk_create(
        [
            Partition(topic=topic, index=index, replicas=[1 + index, 2 + index], isr=[1 + index, 2 + index], leader=1 + index, leader_epoch=0)
            for topic in created
            for index in range(2)
        ]
    )
    return created


def built_with_reuse() -> object:
    return build_snapshots([SnapshotKind.PARTITIONS]).partitions


def built_from_nothing(monkeypatch: pytest.MonkeyPatch) -> object:
    with monkeypatch.context() as patched:
        patched.setattr(snapshots, "_built_topics", {})
        return build_snapshots([SnapshotKind.PARTITIONS]).partitions


def entry(request: object, name: str):  # type: ignore[no-untyped-def]
    return next(topic for topic in request.topics if topic.name == name)  # type: ignore[attr-defined]


def test_an_unchanged_topic_reuses_its_entry_and_the_map_is_the_same(topics: list[Topic], monkeypatch: pytest.MonkeyPatch) -> None:
    first = built_with_reuse()
    reused = dict(snapshots._built_topics)
    second = built_with_reuse()

    assert second == first == built_from_nothing(monkeypatch)
    assert all(snapshots._built_topics[values] is message for values, message in reused.items())


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda topic: Partition.objects.filter(topic=topic, index=1).update(leader=3, leader_epoch=4), id="leader and epoch"),
        pytest.param(lambda topic: Partition.objects.filter(topic=topic, index=0).update(isr=[1]), id="isr"),
        pytest.param(lambda topic: Partition.objects.filter(topic=topic, index=0).update(replicas=[3, 1]), id="replicas"),
        pytest.param(lambda topic: Topic.objects.filter(pk=topic.pk).update(configs={"retention.ms": "1000"}), id="configs"),
        pytest.param(lambda topic: Partition.objects.create(topic=topic, index=2, replicas=[2], isr=[2], leader=2, leader_epoch=0), id="partition added"),
        pytest.param(lambda topic: topic.delete(), id="topic deleted"),
    ],
)
def test_a_changed_topic_is_built_again(topics: list[Topic], monkeypatch: pytest.MonkeyPatch, change) -> None:  # type: ignore[no-untyped-def]
    before = built_with_reuse()
    change(topics[2])
    after = built_with_reuse()

    assert after == built_from_nothing(monkeypatch)
    assert after != before
    assert entry(after, "topic-1") == entry(before, "topic-1")
