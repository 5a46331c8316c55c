"""Internal topics in the catalog: created by the controller with RF min(3, brokers), grown
when brokers register, in the cluster map with an empty tenant id, failed over like any
partition, and invisible to every tenant-facing view."""

from __future__ import annotations

import base64

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, transaction
from django.test import Client
from rest_framework.test import APIClient

from webapp.accounts.actions.keys import KeyOwner, do_create_key
from webapp.accounts.actions.signup import do_sign_up
from webapp.accounts.identity import Actor
from webapp.catalog.limits import tenant_usage
from webapp.catalog.models import Partition, Topic
from webapp.controller.epoch import ControllerFencedError, become_active
from webapp.controller.internal_topics import (
    OFFSETS_TOPIC,
    TRANSACTION_STATE_TOPIC,
    USAGE_TOPIC,
    ensure_internal_topics,
    grown_replicas,
    internal_topics,
)
from webapp.controller.service import ControllerService
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.fleet.placement import PlacementBroker
from webapp.provisioning.models import SnapshotKind
from webapp.provisioning.snapshots import build_snapshots
from webapp.provisioning.versions import current_versions
from weir.errors import ErrorCode

pytestmark = pytest.mark.django_db


def add_brokers(*node_ids: int, state: str = BrokerState.ONLINE, rack: str = "") -> None:
    for node_id in node_ids:
        BrokerNode.objects.create(node_id=node_id, host="127.0.0.1", port=19000 + node_id, rack=rack, state=state)


def partitions_of(name: str) -> list[Partition]:
    return list(Partition.objects.filter(topic__tenant__isnull=True, topic__name=name).order_by("index"))


@pytest.fixture
def small_counts(settings) -> None:  # type: ignore[no-untyped-def]
    settings.WEIR_OFFSETS_TOPIC_NUM_PARTITIONS = 6
    settings.WEIR_TRANSACTION_STATE_TOPIC_NUM_PARTITIONS = 4
    settings.WEIR_USAGE_TOPIC_NUM_PARTITIONS = 2


# ------------------------------------------------------------------ creation and growth


def test_created_with_the_default_counts_configs_and_replication_factor_of_the_available_brokers() -> None:
    add_brokers(1, 2)
    version_before = current_versions()[SnapshotKind.PARTITIONS]
    change = ensure_internal_topics(controller_epoch=become_active())
    assert change.created == (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, USAGE_TOPIC)
    offsets = Topic.objects.get(tenant__isnull=True, name=OFFSETS_TOPIC)
    transactions = Topic.objects.get(tenant__isnull=True, name=TRANSACTION_STATE_TOPIC)
    usage = Topic.objects.get(tenant__isnull=True, name=USAGE_TOPIC)
    assert (offsets.partition_count, offsets.replication_factor, offsets.configs) == (50, 2, {"cleanup.policy": "compact", "segment.bytes": "104857600"})
    # Kafka's transaction.state.log.num.partitions default, compacted like the offsets topic.
    assert (transactions.partition_count, transactions.replication_factor, transactions.configs) == (50, 2, offsets.configs)
    assert (usage.partition_count, usage.replication_factor, usage.configs) == (3, 2, {"cleanup.policy": "delete", "retention.ms": "604800000"})
    for partition in partitions_of(OFFSETS_TOPIC) + partitions_of(USAGE_TOPIC):
        assert sorted(partition.replicas) == [1, 2]
        assert (partition.isr, partition.leader) == (partition.replicas, partition.replicas[0])
    # Placement spreads the preferred leaders over both brokers.
    assert {partition.leader for partition in partitions_of(OFFSETS_TOPIC)} == {1, 2}
    assert current_versions()[SnapshotKind.PARTITIONS] == version_before + 1


@pytest.mark.usefixtures("small_counts")
def test_replication_factor_is_at_most_three_and_offline_brokers_get_no_replica() -> None:
    add_brokers(1, 2, 3, 4)
    add_brokers(5, state=BrokerState.OFFLINE)
    ensure_internal_topics(controller_epoch=become_active())
    for partition in partitions_of(OFFSETS_TOPIC):
        assert len(partition.replicas) == 3 and len(set(partition.replicas)) == 3
        assert 5 not in partition.replicas


@pytest.mark.usefixtures("small_counts")
def test_new_brokers_are_appended_as_replicas_outside_the_isr_up_to_three() -> None:
    epoch = become_active()
    add_brokers(1)
    ensure_internal_topics(controller_epoch=epoch)
    before = {partition.index: partition for partition in partitions_of(OFFSETS_TOPIC)}
    assert all(partition.replicas == [1] for partition in before.values())
    add_brokers(2, 3, 4)
    version_before = current_versions()[SnapshotKind.PARTITIONS]
    change = ensure_internal_topics(controller_epoch=epoch)
    assert change.created == () and change.grown_partitions == 6 + 4 + 2
    assert current_versions()[SnapshotKind.PARTITIONS] == version_before + 1
    after = partitions_of(OFFSETS_TOPIC)
    for partition in after:
        assert 1 in partition.replicas and len(set(partition.replicas)) == 3
        # Leader and ISR stay (the new replicas catch up, then the leader adds them); a new
        # epoch carries the new replica list to the leader.
        assert (partition.leader, partition.leader_epoch, partition.isr) == (1, 1, [1])
    assert len({tuple(partition.replicas) for partition in after}) > 1  # spread, not all on the same two
    # Preferred leaders are spread over the brokers, so that the preferred election spreads coordinators.
    assert len({partition.replicas[0] for partition in after}) > 1
    assert Topic.objects.get(name=OFFSETS_TOPIC).replication_factor == 3


@pytest.mark.usefixtures("small_counts")
def test_ensure_is_idempotent_and_never_shrinks_when_brokers_go_offline() -> None:
    epoch = become_active()
    add_brokers(1, 2, 3)
    ensure_internal_topics(controller_epoch=epoch)
    replicas = [partition.replicas for partition in partitions_of(OFFSETS_TOPIC)]
    version = current_versions()[SnapshotKind.PARTITIONS]
    assert not ensure_internal_topics(controller_epoch=epoch).changed
    BrokerNode.objects.filter(node_id__in=[2, 3]).update(state=BrokerState.OFFLINE)
    assert not ensure_internal_topics(controller_epoch=epoch).changed
    assert [partition.replicas for partition in partitions_of(OFFSETS_TOPIC)] == replicas
    assert current_versions()[SnapshotKind.PARTITIONS] == version


def test_nothing_is_created_without_a_broker() -> None:
    assert not ensure_internal_topics(controller_epoch=become_active()).changed
    assert not Topic.objects.exists()


@pytest.mark.usefixtures("small_counts")
def test_a_superseded_controller_creates_nothing() -> None:
    add_brokers(1)
    old_epoch = become_active()
    become_active()
    with pytest.raises(ControllerFencedError):
        ensure_internal_topics(controller_epoch=old_epoch)
    assert not Topic.objects.exists()


@pytest.mark.parametrize("value", [0, -3, "7"])
def test_a_bad_partition_count_setting_is_named(settings, value: object) -> None:  # type: ignore[no-untyped-def]
    settings.WEIR_USAGE_TOPIC_NUM_PARTITIONS = value
    with pytest.raises(ImproperlyConfigured, match="WEIR_USAGE_TOPIC_NUM_PARTITIONS"):
        internal_topics()


@pytest.mark.parametrize(
    ("replicas", "brokers", "target", "index", "expected"),
    [
        ([1], [PlacementBroker(1), PlacementBroker(2), PlacementBroker(3)], 3, 0, [1, 2, 3]),
        ([1], [PlacementBroker(1), PlacementBroker(2), PlacementBroker(3)], 2, 1, [1, 3]),  # rotated by the partition index
        ([1, 2, 3], [PlacementBroker(n) for n in (1, 2, 3, 4)], 3, 0, [1, 2, 3]),  # at the target already
        ([4, 1, 2, 3], [PlacementBroker(n) for n in (1, 2, 3)], 3, 0, [4, 1, 2, 3]),  # never shrinks
        ([7], [PlacementBroker(1)], 1, 0, [7]),  # a replica on a broker now offline stays
        # Every broker has a rack: a rack the partition lacks wins over the rotation's choice.
        ([1], [PlacementBroker(1, "a"), PlacementBroker(2, "a"), PlacementBroker(3, "b")], 2, 0, [1, 3]),
    ],
)
def test_grown_replicas(replicas: list[int], brokers: list[PlacementBroker], target: int, index: int, expected: list[int]) -> None:
    assert grown_replicas(replicas, brokers, target, index) == expected


# ------------------------------------------------------------------ constraints


def test_the_catalog_keeps_internal_and_tenant_names_apart() -> None:
    tenant = do_sign_up("owner", "owner@acme.example", "correct horse battery staple 42", "Acme").tenant
    # "__" in a LIKE pattern matches any two characters unless escaped: a two-letter tenant topic must pass.
    Topic.objects.create(tenant=tenant, name="ab", partition_count=1)
    Topic.objects.create(tenant=None, name="__internal", partition_count=1)
    for tenant_of_row, name in [(None, "orders"), (tenant, "__sneaky"), (None, "__internal")]:
        with pytest.raises(IntegrityError), transaction.atomic():
            Topic.objects.create(tenant=tenant_of_row, name=name, partition_count=1)


# ------------------------------------------------------------------ through the controller


class ManualMonotonic:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.usefixtures("small_counts")
def test_registrations_create_then_grow_the_internal_topics() -> None:
    pushes: list[int] = []
    service = ControllerService(session_timeout_ms=9000, first_epoch=1, push=lambda: pushes.append(1))
    service.register(1, "127.0.0.1", 9001, "")
    assert [len(partition.replicas) for partition in partitions_of(OFFSETS_TOPIC)] == [1] * 6
    service.register(2, "127.0.0.1", 9002, "")
    service.register(3, "127.0.0.1", 9003, "")
    assert [len(partition.replicas) for partition in partitions_of(USAGE_TOPIC)] == [3, 3]
    service.register(4, "127.0.0.1", 9004, "")  # past the target: nothing to grow
    assert [len(partition.replicas) for partition in partitions_of(OFFSETS_TOPIC)] == [3] * 6
    assert Topic.objects.get(name=OFFSETS_TOPIC).replication_factor == 3
    pushes.clear()
    assert not service.ensure_internal_topics().changed
    assert pushes == []  # the takeover's call pushes only a change


@pytest.mark.usefixtures("small_counts")
def test_the_takeover_call_creates_for_brokers_already_registered_and_pushes() -> None:
    add_brokers(1, 2, 3)
    pushes: list[int] = []
    service = ControllerService(session_timeout_ms=9000, first_epoch=1, push=lambda: pushes.append(1))
    assert service.ensure_internal_topics().created == (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, USAGE_TOPIC)
    assert pushes == [1]
    assert [len(partition.replicas) for partition in partitions_of(OFFSETS_TOPIC)] == [3] * 6


@pytest.mark.usefixtures("small_counts")
def test_internal_partition_fails_over_after_its_isr_grew_through_alter_partition() -> None:
    clock = ManualMonotonic()
    pushes: list[int] = []
    service = ControllerService(session_timeout_ms=9000, monotonic=clock, first_epoch=1, push=lambda: pushes.append(1))
    epochs = {node_id: service.register(node_id, "127.0.0.1", 9000 + node_id, "").broker_epoch for node_id in (1, 2, 3)}
    partition = partitions_of(OFFSETS_TOPIC)[0]
    assert (partition.leader, partition.isr) == (1, [1])
    grown_epoch = partition.leader_epoch
    # The appended followers caught up: the leader reports them under the plain internal name.
    result = service.alter_partition(OFFSETS_TOPIC, 0, 1, grown_epoch, partition.replicas, epochs[1])
    assert (result.error_code, sorted(result.isr)) == (ErrorCode.NO_ERROR, [1, 2, 3])
    clock.now += 5.0
    for node_id in (2, 3):
        assert service.heartbeat(node_id, epochs[node_id])
    clock.now += 5.0
    for node_id in (2, 3):
        assert service.heartbeat(node_id, epochs[node_id])
    assert service.check_sessions() == [1]
    partition.refresh_from_db()
    assert partition.leader in (2, 3) and partition.leader_epoch == grown_epoch + 1 and 1 not in partition.isr
    # A partition whose ISR was still only the dead leader goes offline.
    assert partitions_of(OFFSETS_TOPIC)[1].leader == -1


def test_alter_partition_of_a_plain_name_that_is_not_internal_is_unknown() -> None:
    service = ControllerService(session_timeout_ms=9000, first_epoch=1, push=lambda: None)
    assert service.alter_partition("orders", 0, 1, 0, [1], 0).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert service.alter_partition("__missing", 0, 1, 0, [1], 0).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# ------------------------------------------------------------------ cluster map and tenant views


@pytest.mark.usefixtures("small_counts")
def test_the_cluster_map_carries_internal_topics_with_an_empty_tenant_id() -> None:
    add_brokers(1, 2, 3)
    ensure_internal_topics(controller_epoch=become_active())
    snapshot = build_snapshots([SnapshotKind.PARTITIONS]).partitions
    assert snapshot is not None
    internal = {topic.name: topic for topic in snapshot.topics if not topic.tenant_id}
    assert set(internal) == {OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, USAGE_TOPIC}
    offsets = internal[OFFSETS_TOPIC]
    assert {entry.name: entry.value for entry in offsets.configs} == {"cleanup.policy": "compact", "segment.bytes": "104857600"}
    assert [(assignment.partition, len(assignment.replicas)) for assignment in offsets.partitions] == [(index, 3) for index in range(6)]
    assert offsets.topic_id == str(Topic.objects.get(name=OFFSETS_TOPIC).topic_id)


@pytest.mark.usefixtures("small_counts")
def test_tenant_api_dashboard_and_limits_never_see_internal_topics(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    add_brokers(1)
    ensure_internal_topics(controller_epoch=become_active())
    signed_up = do_sign_up("owner", "owner@acme.example", "correct horse battery staple 42", "Acme")
    Topic.objects.create(tenant=signed_up.tenant, name="orders", partition_count=1)
    actor = Actor(tenant=signed_up.tenant, role=signed_up.membership.role, membership=signed_up.membership)
    key = do_create_key(actor, "cloud", KeyOwner(membership=signed_up.membership), "test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION="Basic " + base64.b64encode(f"{key.key.key_id}:{key.secret}".encode()).decode())

    listed = api.get("/api/v1/topics")
    assert listed.status_code == 200
    assert [topic["topic_name"] for topic in listed.json()["results"]] == ["orders"]
    assert api.get(f"/api/v1/topics/{OFFSETS_TOPIC}").status_code == 404
    assert api.delete(f"/api/v1/topics/{OFFSETS_TOPIC}").status_code == 404

    dashboard = Client()
    dashboard.force_login(signed_up.user)
    page = dashboard.get("/topics/")
    assert page.status_code == 200 and b"orders" in page.content and OFFSETS_TOPIC.encode() not in page.content
    assert dashboard.get(f"/topics/{OFFSETS_TOPIC}/").status_code == 404

    assert tenant_usage(signed_up.tenant) == (1, 1)
    assert Topic.objects.filter(tenant__isnull=True).count() == 3
