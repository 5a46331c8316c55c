"""A push every broker applied settles the pending jobs whose changes it carried.

The brokers are replaced by a recording fake (``push_to_brokers``), so each test counts the
full pushes a burst of changes costs, and checks which jobs an attempt settles: only PENDING
jobs recorded before its snapshot was read, of kinds that change only the pushed snapshot,
and none at all when a broker could not apply some partition.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from webapp.accounts.models import Tenant
from webapp.provisioning import facade, jobs, tasks
from webapp.provisioning.broker_client import BrokerAddress
from webapp.provisioning.models import JobKind, JobState, ProvisioningJob
from webapp.provisioning.push import BrokerPush, PartitionNotApplied
from webapp.provisioning.snapshots import Snapshots

pytestmark = pytest.mark.django_db

BROKER = BrokerAddress(1, "127.0.0.1:19001")


@pytest.fixture
def tenant() -> Tenant:
    return Tenant.objects.create(name="Acme", slug="acme")


@pytest.fixture(autouse=True)
def queued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Job ids handed to Celery (recorded instead of sent)."""
    sent: list[int] = []
    monkeypatch.setattr(tasks.run_job, "delay", lambda job_id: sent.append(job_id))
    return sent


class FakeBrokers:
    """Stands in for ``push_to_brokers``: records each push; ``during_push`` runs inside it."""

    def __init__(self) -> None:
        self.pushes: list[Snapshots] = []
        self.not_applied: tuple[PartitionNotApplied, ...] = ()
        self.during_push: Callable[[], None] | None = None

    def __call__(self, snapshots: Snapshots, brokers: list[BrokerAddress]) -> list[BrokerPush]:
        self.pushes.append(snapshots)
        if self.during_push is not None:
            self.during_push()
        return [BrokerPush(None, self.not_applied) for _ in brokers]


@pytest.fixture
def brokers(monkeypatch: pytest.MonkeyPatch) -> FakeBrokers:
    fake = FakeBrokers()
    monkeypatch.setattr(jobs, "push_to_brokers", fake)
    monkeypatch.setattr(jobs, "push_targets", lambda: [BROKER])
    return fake


def record(tenant: Tenant, kind: str, target: str) -> ProvisioningJob:
    return facade.record_change(tenant, kind, target)


def states(*records: ProvisioningJob) -> list[str]:
    return [ProvisioningJob.objects.get(pk=job.pk).state for job in records]


def test_a_burst_of_topic_jobs_costs_one_push_and_every_job_succeeds(tenant: Tenant, brokers: FakeBrokers) -> None:
    burst = [record(tenant, JobKind.CREATE_TOPIC, f"orders-{index}") for index in range(5)]
    for job in burst:  # each job's own task, in order
        jobs.run_attempt(job.pk)
    assert len(brokers.pushes) == 1
    assert states(*burst) == [JobState.SUCCEEDED] * 5
    settled = ProvisioningJob.objects.get(pk=burst[-1].pk)
    assert (settled.attempts, settled.error) == (0, "")
    assert settled.started_at is not None and settled.finished_at is not None


def test_a_job_recorded_after_the_snapshot_was_read_is_left_to_its_own_push(tenant: Tenant, brokers: FakeBrokers) -> None:
    first = record(tenant, JobKind.CREATE_TOPIC, "orders")
    late: list[ProvisioningJob] = []
    brokers.during_push = lambda: late.append(record(tenant, JobKind.CREATE_TOPIC, "payments"))
    jobs.run_attempt(first.pk)
    assert states(first, *late) == [JobState.SUCCEEDED, JobState.PENDING]
    brokers.during_push = None
    jobs.run_attempt(late[0].pk)
    assert len(brokers.pushes) == 2
    assert states(*late) == [JobState.SUCCEEDED]


def test_a_partitions_push_leaves_security_jobs_pending(tenant: Tenant, brokers: FakeBrokers) -> None:
    topic_job = record(tenant, JobKind.CREATE_TOPIC, "orders")
    security_job = record(tenant, JobKind.SYNC_SECURITY, "acl-1")
    other_topic_job = record(tenant, JobKind.ALTER_TOPIC_CONFIGS, "orders")
    jobs.run_attempt(topic_job.pk)
    assert states(topic_job, security_job, other_topic_job) == [JobState.SUCCEEDED, JobState.PENDING, JobState.SUCCEEDED]


def test_a_push_with_a_partition_not_applied_settles_no_other_job(tenant: Tenant, brokers: FakeBrokers) -> None:
    first = record(tenant, JobKind.CREATE_TOPIC, "orders")
    second = record(tenant, JobKind.CREATE_TOPIC, "bad-disk")
    # The second topic's partition failed on the broker: only the second job's own attempt may say so.
    brokers.not_applied = (PartitionNotApplied(BROKER, tenant.public_id, "bad-disk", 0, 0, "cannot create the directory", retriable=False),)
    jobs.run_attempt(first.pk)
    assert states(first, second) == [JobState.SUCCEEDED, JobState.PENDING]
    jobs.run_attempt(second.pk)
    assert states(second) == [JobState.FAILED]
    assert "bad-disk" in ProvisioningJob.objects.get(pk=second.pk).error
