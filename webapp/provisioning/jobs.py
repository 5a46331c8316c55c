"""A provisioning job's life: PENDING -> RUNNING (one or more attempts) -> SUCCEEDED | FAILED.

An attempt builds the latest snapshots of the job's kinds and pushes them to every broker
not known to be offline. Snapshots are full and versioned, so an attempt is idempotent and
a later job's push also carries an earlier job's change. A finished job is left alone when
its task runs again (a redelivered message).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db.models import F
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from webapp.provisioning.models import JobState, ProvisioningJob
from webapp.provisioning.push import push_snapshots, push_targets
from webapp.provisioning.snapshots import build_snapshots
from webapp.provisioning.versions import snapshot_kinds_for

# Attempts before a job fails, and the first retry delay (doubling: 4, 8, 16, 32 s, about a
# minute in all); settings WEIR_PROVISIONING_MAX_ATTEMPTS / _RETRY_BACKOFF_SECONDS override.
DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_RETRY_BACKOFF_SECONDS = 4.0
MAX_RETRY_DELAY_SECONDS = 60.0


def max_attempts() -> int:
    return int(getattr(settings, "WEIR_PROVISIONING_MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS))


def retry_delay_seconds(attempt: int) -> float:
    """Delay after failed attempt number ``attempt`` (1-based): exponential, capped."""
    base = float(getattr(settings, "WEIR_PROVISIONING_RETRY_BACKOFF_SECONDS", DEFAULT_RETRY_BACKOFF_SECONDS))
    return min(MAX_RETRY_DELAY_SECONDS, base * (2 ** (attempt - 1)))


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
        .update(state=JobState.RUNNING, attempts=F("attempts") + 1, started_at=Coalesce("started_at", Now()))
    )
    if not started:
        return None
    return ProvisioningJob.objects.get(pk=job_id)


def _finish(job: ProvisioningJob, state: str, error: str) -> None:
    ProvisioningJob.objects.filter(pk=job.pk).update(state=state, error=error, finished_at=timezone.now())


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
    snapshots = build_snapshots(snapshot_kinds_for(job.kind))
    failures = push_snapshots(snapshots, push_targets())
    if not failures:
        _finish(job, JobState.SUCCEEDED, "")
        return AttemptOutcome(state=JobState.SUCCEEDED)
    reasons = "; ".join(str(failure) for failure in failures)
    if all(failure.retriable for failure in failures) and job.attempts < max_attempts():
        delay = retry_delay_seconds(job.attempts)
        ProvisioningJob.objects.filter(pk=job.pk).update(
            error=f"attempt {job.attempts} of {max_attempts()} failed, retrying in {delay:g} s: {reasons}"
        )
        return AttemptOutcome(state=JobState.RUNNING, retry_in_seconds=delay)
    _finish(job, JobState.FAILED, f"failed after {job.attempts} attempt(s): {reasons}")
    return AttemptOutcome(state=JobState.FAILED)
