"""Lost jobs: a job whose Celery message was lost is re-queued by the reconciler, then failed.

Time is explicit: each test sets the jobs' timestamps and passes ``now``; no test sleeps.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from webapp.accounts.models import Tenant
from webapp.provisioning import jobs, tasks
from webapp.provisioning.models import JobKind, JobState, ProvisioningJob
from webapp.provisioning.reconciler import reconcile

pytestmark = pytest.mark.django_db

LOST_AFTER = timedelta(seconds=jobs.DEFAULT_LOST_AFTER_SECONDS)
NOW = datetime(2030, 1, 1, 12, 0, tzinfo=timezone.get_current_timezone())


@pytest.fixture
def tenant() -> Tenant:
    return Tenant.objects.create(name="Acme", slug="acme")


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Job ids handed to Celery (recorded instead of sent)."""
    sent: list[int] = []
    monkeypatch.setattr(tasks.run_job, "delay", lambda job_id: sent.append(job_id))
    return sent


def make_job(tenant: Tenant, state: str, *, created_at: datetime, heartbeat_at: datetime | None = None, attempts: int = 0) -> ProvisioningJob:
    job = ProvisioningJob.objects.create(tenant=tenant, kind=JobKind.CREATE_TOPIC, target="orders", state=state, attempts=attempts)
    # created_at is set on insert (auto_now_add); an UPDATE puts the job in the past.
    ProvisioningJob.objects.filter(pk=job.pk).update(created_at=created_at, heartbeat_at=heartbeat_at)
    job.refresh_from_db()
    return job


def recover(django_capture_on_commit_callbacks, now: datetime = NOW) -> jobs.LostJobs:
    with django_capture_on_commit_callbacks(execute=True):
        return jobs.recover_lost_jobs(now)


def test_pending_job_silent_past_the_grace_period_is_requeued_with_the_delivery_counted(tenant, queued, django_capture_on_commit_callbacks):
    job = make_job(tenant, JobState.PENDING, created_at=NOW - LOST_AFTER - timedelta(seconds=1))
    lost = recover(django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert lost.requeued == [job.public_id] and lost.failed == []
    assert queued == [job.pk]
    assert (job.state, job.attempts, job.heartbeat_at) == (JobState.PENDING, 1, NOW)
    assert job.error.startswith(jobs.LOST_JOB_REASON)


def test_pending_job_within_the_grace_period_is_left_alone(tenant, queued, django_capture_on_commit_callbacks):
    job = make_job(tenant, JobState.PENDING, created_at=NOW - LOST_AFTER + timedelta(seconds=1))
    lost = recover(django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert lost == jobs.LostJobs()
    assert queued == []
    assert (job.state, job.attempts, job.heartbeat_at) == (JobState.PENDING, 0, None)


def test_running_job_with_a_recent_heartbeat_is_left_alone_however_old(tenant, queued, django_capture_on_commit_callbacks):
    # A job retrying with backoff for a long time still shows a sign of life at every step.
    make_job(tenant, JobState.RUNNING, created_at=NOW - 10 * LOST_AFTER, heartbeat_at=NOW - LOST_AFTER + timedelta(seconds=1), attempts=3)
    assert recover(django_capture_on_commit_callbacks) == jobs.LostJobs()
    assert queued == []


def test_running_job_with_a_stale_heartbeat_is_requeued_without_counting_its_attempt_twice(tenant, queued, django_capture_on_commit_callbacks):
    job = make_job(tenant, JobState.RUNNING, created_at=NOW - 2 * LOST_AFTER, heartbeat_at=NOW - LOST_AFTER - timedelta(seconds=1), attempts=2)
    lost = recover(django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert lost.requeued == [job.public_id]
    assert queued == [job.pk]
    assert (job.state, job.attempts) == (JobState.PENDING, 2)


@override_settings(WEIR_PROVISIONING_MAX_ATTEMPTS=3)
def test_lost_job_without_an_attempt_left_fails_with_the_reason(tenant, queued, django_capture_on_commit_callbacks):
    stale = NOW - LOST_AFTER - timedelta(seconds=1)
    running = make_job(tenant, JobState.RUNNING, created_at=stale, heartbeat_at=stale, attempts=3)
    pending = make_job(tenant, JobState.PENDING, created_at=stale, heartbeat_at=stale, attempts=2)
    lost = recover(django_capture_on_commit_callbacks)
    assert sorted(lost.failed) == sorted([running.public_id, pending.public_id])
    assert lost.requeued == [] and queued == []
    for job in (running, pending):
        job.refresh_from_db()
        assert job.state == JobState.FAILED
        assert job.attempts == 3
        assert job.finished_at == NOW
        assert job.error.startswith(jobs.LOST_JOB_REASON)


@override_settings(WEIR_PROVISIONING_MAX_ATTEMPTS=3)
def test_a_job_no_worker_ever_runs_fails_after_the_attempt_limit(tenant, queued, django_capture_on_commit_callbacks):
    job = make_job(tenant, JobState.PENDING, created_at=NOW - LOST_AFTER - timedelta(seconds=1))
    now = NOW
    states = []
    for _round in range(5):  # more rounds than attempts: the job must end, not cycle
        recover(django_capture_on_commit_callbacks, now)
        job.refresh_from_db()
        states.append((job.state, job.attempts))
        now += LOST_AFTER + timedelta(seconds=1)
    assert states == [
        (JobState.PENDING, 1),
        (JobState.PENDING, 2),
        (JobState.FAILED, 3),
        (JobState.FAILED, 3),
        (JobState.FAILED, 3),
    ]
    assert queued == [job.pk, job.pk]


def test_finished_jobs_are_never_touched(tenant, queued, django_capture_on_commit_callbacks):
    long_ago = NOW - 10 * LOST_AFTER
    for state in (JobState.SUCCEEDED, JobState.FAILED):
        make_job(tenant, state, created_at=long_ago, heartbeat_at=long_ago, attempts=1)
    assert recover(django_capture_on_commit_callbacks) == jobs.LostJobs()
    assert list(ProvisioningJob.objects.values_list("state", "attempts").order_by("state")) == [(JobState.FAILED, 1), (JobState.SUCCEEDED, 1)]


@override_settings(WEIR_PROVISIONING_LOST_AFTER_SECONDS=10)
def test_the_grace_period_follows_the_setting(tenant, queued, django_capture_on_commit_callbacks):
    job = make_job(tenant, JobState.PENDING, created_at=NOW - timedelta(seconds=11))
    assert recover(django_capture_on_commit_callbacks).requeued == [job.public_id]


def test_an_attempt_refreshes_the_heartbeat(tenant, monkeypatch):
    # No broker is registered: the attempt pushes to nobody and succeeds; what matters is
    # that starting it left a sign of life the reconciler would see.
    job = make_job(tenant, JobState.PENDING, created_at=timezone.now() - 2 * LOST_AFTER)
    before = timezone.now()
    assert jobs.run_attempt(job.pk).state == JobState.SUCCEEDED
    job.refresh_from_db()
    assert job.heartbeat_at is not None and job.heartbeat_at >= before - timedelta(seconds=5)
    assert job.started_at is not None and job.attempts == 1


def test_reconcile_round_recovers_lost_jobs_and_says_so(tenant, queued, django_capture_on_commit_callbacks):
    job = make_job(tenant, JobState.PENDING, created_at=NOW - LOST_AFTER - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        report = reconcile(now=NOW)
    assert report.requeued_jobs == [job.public_id]
    assert job.public_id in report.summary()
    assert queued == [job.pk]
