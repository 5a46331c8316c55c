"""A provisioning job's life: PENDING -> RUNNING (one or more attempts) -> SUCCEEDED | FAILED.

An attempt builds the latest snapshots of the job's kinds and pushes them to every broker
not known to be offline. Snapshots are full and versioned, so an attempt is idempotent and
a later job's push also carries an earlier job's change. A finished job is left alone when
its task runs again (a redelivered message).

Because every push carries every topic, a broker's report that it could not create some
partition is charged only to the job whose target is that partition's topic (same tenant,
same name): that job fails naming the broker and the reason (after its retries when the
broker says the failure may pass), while the jobs of every other topic and tenant succeed.

An attempt that every broker applied without any failure also settles the PENDING jobs whose
changes its snapshots already carry (see ``snapshots``: jobs of kinds that change only the
pushed snapshots, with ids up to the snapshots' ``last_job_id``): they succeed with it, and
their own tasks then find them finished. A burst of changes (a thousand topics created at
once) thus costs a few full pushes instead of one per change; an attempt with any failure
settles nothing but its own job, so that each job still reports its own broker's refusal.

A job whose Celery message is lost (a worker killed mid-attempt, or while holding a delayed
retry) would stay PENDING or RUNNING forever: every step of a live job refreshes its
``heartbeat_at``, and :func:`recover_lost_jobs` (run by the reconciler) re-queues a job silent
for longer than :func:`lost_after_seconds`, counting the lost delivery as an attempt, and
fails it once the attempt limit is reached.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Case, F, PositiveIntegerField, When
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from server_runtime.request_ids import current_request_id, request_id_scope
from webapp.provisioning import metrics
from webapp.provisioning.broker_client import BrokerCallError
from webapp.provisioning.models import JobKind, JobState, ProvisioningJob, SnapshotKind
from webapp.provisioning.push import BrokerPush, PartitionNotApplied, push_targets, push_to_brokers
from webapp.provisioning.snapshots import Snapshots, build_snapshots
from webapp.provisioning.versions import JOB_KINDS_OF_SNAPSHOTS, snapshot_kinds_for
from weir.backoff import exponential_backoff

logger = logging.getLogger(__name__)

# Attempts before a job fails, and the first retry delay (doubling: 4, 8, 16, 32 s, about a
# minute in all); settings WEIR_PROVISIONING_MAX_ATTEMPTS / _RETRY_BACKOFF_SECONDS override.
DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_RETRY_BACKOFF_SECONDS = 4.0
MAX_RETRY_DELAY_SECONDS = 60.0
# A live job shows a sign of life at least every MAX_RETRY_DELAY_SECONDS plus one attempt's
# broker calls (seconds): silence for twice the longest delay means its message is lost.
# Setting WEIR_PROVISIONING_LOST_AFTER_SECONDS overrides.
DEFAULT_LOST_AFTER_SECONDS = 2 * MAX_RETRY_DELAY_SECONDS
# Lost jobs handled per reconciler round, so that one round stays short after a long outage;
# the rest are found by the next round.
MAX_LOST_JOBS_PER_ROUND = 500
LOST_JOB_REASON = "lost: no worker finished it"
# Jobs whose topic's partitions a broker must create or reconfigure: a partition it cannot
# apply fails them. A deleted topic is no longer in the map a DELETE_TOPIC job pushes.
_KINDS_THAT_CREATE_PARTITIONS = frozenset({JobKind.CREATE_TOPIC, JobKind.CREATE_PARTITIONS, JobKind.ALTER_TOPIC_CONFIGS})


def max_attempts() -> int:
    return int(getattr(settings, "WEIR_PROVISIONING_MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS))


def lost_after_seconds() -> float:
    """Silence after which an unfinished job counts as lost (its Celery message gone)."""
    return float(getattr(settings, "WEIR_PROVISIONING_LOST_AFTER_SECONDS", DEFAULT_LOST_AFTER_SECONDS))


def retry_delay_seconds(attempt: int) -> float:
    """Delay after failed attempt number ``attempt`` (1-based): exponential, capped."""
    base = float(getattr(settings, "WEIR_PROVISIONING_RETRY_BACKOFF_SECONDS", DEFAULT_RETRY_BACKOFF_SECONDS))
    return exponential_backoff(base, attempt - 1, MAX_RETRY_DELAY_SECONDS)


@dataclass(frozen=True)
class AttemptOutcome:
    """What the task does next: nothing (``retry_in_seconds`` is None) or retry after a delay."""

    state: str
    retry_in_seconds: float | None = None


def _start_attempt(job_id: int) -> ProvisioningJob | None:
    # One conditional UPDATE, not a read then a write: on SQLite a transaction that read
    # first cannot take the write lock once another process wrote, and fails at once.
    started = (
        ProvisioningJob.objects.filter(pk=job_id)
        .exclude(state__in=(JobState.SUCCEEDED, JobState.FAILED))
        .update(state=JobState.RUNNING, attempts=F("attempts") + 1, started_at=Coalesce("started_at", Now()), heartbeat_at=Now())
    )
    if not started:
        return None
    return ProvisioningJob.objects.select_related("tenant").get(pk=job_id)


def _finish(job: ProvisioningJob, state: str, error: str) -> None:
    finished_at = timezone.now()
    ProvisioningJob.objects.filter(pk=job.pk).update(state=state, error=error, finished_at=finished_at)
    metrics.job_attempt_finished(job.kind, state.lower())
    metrics.job_finished(job.kind, state, job.created_at, finished_at)


def run_attempt(job_id: int) -> AttemptOutcome:
    """Run one attempt of the job ``job_id`` and record its outcome on the job.

    A job that is finished or gone is left as it is. Failures of brokers that may answer
    later are retried until ``max_attempts()``; a broker that refuses (wrong token, invalid
    snapshot) fails the job at once. The job's ``error`` names each failing broker.
    """
    job = _start_attempt(job_id)
    if job is None:
        state = ProvisioningJob.objects.filter(pk=job_id).values_list("state", flat=True).first()
        return AttemptOutcome(state=state or "")
    # The id of the request that made the job, also when the reconciler re-queued it: the
    # attempt's log lines and its calls to the brokers carry it (server_runtime.request_ids).
    with request_id_scope(job.request_id or current_request_id()):
        return _push(job)


def _failures_of(job: ProvisioningJob, pushes: list[BrokerPush]) -> list[BrokerCallError | PartitionNotApplied]:
    """The failed calls, and the partitions brokers could not apply that belong to the job's
    own topic (see the module docstring)."""
    failures: list[BrokerCallError | PartitionNotApplied] = [push.error for push in pushes if push.error is not None]
    if job.kind in _KINDS_THAT_CREATE_PARTITIONS and job.tenant is not None:
        own_topic = (job.tenant.public_id, job.target)
        failures.extend(failure for push in pushes for failure in push.not_applied if (failure.tenant_id, failure.topic) == own_topic)
    return failures


def _push(job: ProvisioningJob) -> AttemptOutcome:
    snapshots = build_snapshots(snapshot_kinds_for(job.kind))
    targets = push_targets()
    logger.info("job %s (%s %s): attempt %d pushes to %d broker(s)", job.public_id, job.kind, job.target, job.attempts, len(targets))
    pushes = push_to_brokers(snapshots, targets)
    failures = _failures_of(job, pushes)
    if not failures:
        _finish(job, JobState.SUCCEEDED, "")
        logger.info("job %s SUCCEEDED", job.public_id)
        if not any(push.not_applied for push in pushes):
            _settle_covered_jobs(job, snapshots)
        return AttemptOutcome(state=JobState.SUCCEEDED)
    reasons = "; ".join(str(failure) for failure in failures)
    if all(failure.retriable for failure in failures) and job.attempts < max_attempts():
        delay = retry_delay_seconds(job.attempts)
        error = f"attempt {job.attempts} of {max_attempts()} failed, retrying in {delay:g} s: {reasons}"
        ProvisioningJob.objects.filter(pk=job.pk).update(error=error, heartbeat_at=Now())
        metrics.job_attempt_finished(job.kind, "retrying")
        logger.warning("job %s: %s", job.public_id, error)
        return AttemptOutcome(state=JobState.RUNNING, retry_in_seconds=delay)
    error = f"failed after {job.attempts} attempt(s): {reasons}"
    _finish(job, JobState.FAILED, error)
    logger.warning("job %s FAILED: %s", job.public_id, error)
    return AttemptOutcome(state=JobState.FAILED)


def _settle_covered_jobs(job: ProvisioningJob, snapshots: Snapshots) -> list[str]:
    """Mark SUCCEEDED the PENDING jobs whose changes ``snapshots`` carry and every broker just
    applied (see the module docstring); their public ids."""
    pushed = tuple(kind for kind, snapshot in ((SnapshotKind.PARTITIONS, snapshots.partitions), (SnapshotKind.SECURITY, snapshots.security)) if snapshot)
    covered_kinds = JOB_KINDS_OF_SNAPSHOTS.get(tuple(sorted(pushed)), ())
    if not covered_kinds or not snapshots.last_job_id:
        return []
    covered = ProvisioningJob.objects.filter(pk__lte=snapshots.last_job_id, state=JobState.PENDING, kind__in=covered_kinds).exclude(pk=job.pk)
    settled = list(covered.values_list("pk", "public_id", "kind", "created_at"))
    if not settled:
        return []
    finished_at = timezone.now()
    # Only still-PENDING rows: a job whose own attempt started meanwhile finishes by itself.
    ProvisioningJob.objects.filter(pk__in=[pk for pk, *_ in settled], state=JobState.PENDING).update(
        state=JobState.SUCCEEDED, error="", started_at=Coalesce("started_at", Now()), finished_at=finished_at
    )
    for _pk, _public_id, kind, created_at in settled:
        metrics.job_finished(kind, JobState.SUCCEEDED, created_at, finished_at)
    logger.info("job %s: its push also delivered %d pending job(s), now SUCCEEDED", job.public_id, len(settled))
    return [public_id for _pk, public_id, *_ in settled]


# The attempt count of a lost job once the loss is recorded: see recover_lost_jobs.
_ATTEMPTS_AFTER_LOSS = Case(When(state=JobState.PENDING, then=F("attempts") + 1), default=F("attempts"), output_field=PositiveIntegerField())


@dataclass
class LostJobs:
    """What :func:`recover_lost_jobs` did: public ids of the jobs re-queued and of those failed."""

    requeued: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def recover_lost_jobs(now: datetime | None = None) -> LostJobs:
    """Re-queue or fail the unfinished jobs silent for longer than :func:`lost_after_seconds`.

    ``now`` defaults to the current time (tests pass their own). A job's last sign of life is
    its ``heartbeat_at`` (its ``created_at`` while no worker ever touched it). A lost PENDING
    job's delivery counts as an attempt (a RUNNING job's lost attempt was counted when it
    started), so that a stack without any worker cannot re-queue forever. A lost job with an
    attempt left goes back to PENDING and its task is queued when the transaction commits;
    one without is FAILED with ``LOST_JOB_REASON``. A late worker that still runs a re-queued
    job does no harm: attempts are idempotent and a finished job is left alone.
    """
    now = now or timezone.now()
    silence = lost_after_seconds()
    cutoff = now - timedelta(seconds=silence)
    limit = max_attempts()
    lost = LostJobs()
    with transaction.atomic():
        # Locked rows (PostgreSQL) keep a worker's concurrent update from interleaving with
        # the decision; a row another round holds is skipped and handled by that round.
        silent = (
            ProvisioningJob.objects.select_for_update(skip_locked=True)
            .filter(state__in=(JobState.PENDING, JobState.RUNNING))
            .alias(last_sign_of_life=Coalesce("heartbeat_at", "created_at"))
            .filter(last_sign_of_life__lt=cutoff)
            .order_by("pk")
            .values_list("pk", "public_id", "state", "attempts")[:MAX_LOST_JOBS_PER_ROUND]
        )
        requeue_ids: list[int] = []
        fail_ids: list[int] = []
        for pk, public_id, state, attempts in silent:
            spent = attempts + 1 if state == JobState.PENDING else attempts
            if spent < limit:
                requeue_ids.append(pk)
                lost.requeued.append(public_id)
            else:
                fail_ids.append(pk)
                lost.failed.append(public_id)
        if requeue_ids:
            ProvisioningJob.objects.filter(pk__in=requeue_ids).update(
                state=JobState.PENDING,
                attempts=_ATTEMPTS_AFTER_LOSS,
                heartbeat_at=now,
                error=f"{LOST_JOB_REASON} within {silence:g} s; re-queued",
            )
        if fail_ids:
            ProvisioningJob.objects.filter(pk__in=fail_ids).update(
                state=JobState.FAILED,
                attempts=_ATTEMPTS_AFTER_LOSS,
                heartbeat_at=now,
                finished_at=now,
                error=f"{LOST_JOB_REASON}: silent for more than {silence:g} s and no attempt left of {limit}",
            )

        def queue() -> None:
            # Imported here: the tasks module imports this one.
            from webapp.provisioning.tasks import run_job

            for job_id in requeue_ids:
                run_job.delay(job_id)

        if requeue_ids:
            transaction.on_commit(queue)
    metrics.LOST_JOBS.labels("requeued").inc(len(lost.requeued))
    metrics.LOST_JOBS.labels("failed").inc(len(lost.failed))
    return lost
