"""record_change, place_partitions and describe_partitions against the database."""

from __future__ import annotations

import pytest
from django.db import transaction

from webapp.accounts.models import Tenant
from webapp.catalog.models import Partition, Topic
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.provisioning import facade, tasks
from webapp.provisioning.models import JobKind, JobState, SnapshotKind
from webapp.provisioning.versions import current_versions

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenant() -> Tenant:
    return Tenant.objects.create(name="Acme", slug="acme")


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Job ids handed to Celery (recorded instead of sent)."""
    sent: list[int] = []
    monkeypatch.setattr(tasks.run_job, "delay", lambda job_id: sent.append(job_id))
    return sent


def register(*node_ids: int, rack: str = "", state: str = BrokerState.ONLINE) -> None:
    for node_id in node_ids:
        BrokerNode.objects.create(node_id=node_id, host="127.0.0.1", port=19000 + node_id, rack=rack, state=state)


def test_record_change_bumps_partitions_version_for_topic_kinds(tenant: Tenant, queued: list[int], django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        job = facade.record_change(tenant, JobKind.CREATE_TOPIC, "orders")
    assert current_versions() == {SnapshotKind.PARTITIONS: 1, SnapshotKind.SECURITY: 0}
    assert job.state == JobState.PENDING
    assert job.public_id.startswith("job-")
    assert queued == [job.pk]


def test_record_change_bumps_security_version_for_security_sync(tenant: Tenant, queued: list[int], django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        facade.record_change(tenant, JobKind.SYNC_SECURITY, "acl-x")
        facade.record_change(tenant, JobKind.SYNC_SECURITY, "acl-y")
    assert current_versions() == {SnapshotKind.PARTITIONS: 0, SnapshotKind.SECURITY: 2}
    assert len(queued) == 2


def test_record_change_queues_nothing_when_the_transaction_rolls_back(tenant: Tenant, queued: list[int], django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError), transaction.atomic():
        facade.record_change(tenant, JobKind.CREATE_TOPIC, "orders")
        raise RuntimeError("the action failed after recording")
    assert queued == []
    assert current_versions()[SnapshotKind.PARTITIONS] == 0


def test_record_change_refuses_unknown_kinds(tenant: Tenant, queued: list[int]) -> None:
    with pytest.raises(ValueError):
        facade.record_change(tenant, "REBOOT_EVERYTHING", "x")


def test_place_partitions_spreads_leaders_over_brokers(tenant: Tenant) -> None:
    register(1, 2, 3)
    topic = Topic.objects.create(tenant=tenant, name="orders", partition_count=6, replication_factor=2)
    rows = facade.place_partitions(topic, 0, 6)
    assert [row.index for row in rows] == [0, 1, 2, 3, 4, 5]
    assert sorted(row.leader for row in rows) == [1, 1, 2, 2, 3, 3]
    for row in Partition.objects.filter(topic=topic):
        assert len(set(row.replicas)) == 2
        assert row.leader == row.replicas[0]
        assert row.isr == row.replicas


def test_place_partitions_skips_offline_brokers(tenant: Tenant) -> None:
    register(1, 2)
    register(3, state=BrokerState.OFFLINE)
    topic = Topic.objects.create(tenant=tenant, name="orders", partition_count=4)
    facade.place_partitions(topic, 0, 4)
    assert set(Partition.objects.filter(topic=topic).values_list("leader", flat=True)) == {1, 2}


def test_added_partitions_continue_after_existing_ones(tenant: Tenant) -> None:
    register(1, 2, 3)
    topic = Topic.objects.create(tenant=tenant, name="orders", partition_count=2)
    facade.place_partitions(topic, 0, 2)
    facade.place_partitions(topic, 2, 3)
    rows = list(Partition.objects.filter(topic=topic).order_by("index"))
    assert [row.index for row in rows] == [0, 1, 2, 3, 4]
    # Round robin continues from partition 0's leader: five partitions over three brokers.
    assert sorted(row.leader for row in rows[:3]) == [1, 2, 3]


def test_replication_factor_above_brokers_is_refused_and_writes_nothing(tenant: Tenant) -> None:
    register(1, 2)
    topic = Topic.objects.create(tenant=tenant, name="orders", partition_count=3, replication_factor=3)
    with pytest.raises(facade.ReplicationFactorTooLargeError) as raised:
        facade.place_partitions(topic, 0, 3)
    assert raised.value.available_brokers == 2
    assert not Partition.objects.filter(topic=topic).exists()


def test_describe_partitions_marks_unreachable_leaders_unavailable(tenant: Tenant) -> None:
    from tests.support.processes import free_port

    BrokerNode.objects.create(node_id=1, host="127.0.0.1", port=free_port(), state=BrokerState.ONLINE)
    topic = Topic.objects.create(tenant=tenant, name="orders", partition_count=2)
    facade.place_partitions(topic, 0, 2)
    described = facade.describe_partitions(topic)
    assert [(item.partition, item.leader, item.available, item.log_end_offset) for item in described] == [(0, 1, False, None), (1, 1, False, None)]
