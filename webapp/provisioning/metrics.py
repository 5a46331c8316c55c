"""Provisioning metrics (``weir_provisioning_*``): events where they happen, state at scrape time.

Events are counted by the process that runs the attempt or the reconciler round (the Celery
worker; the web process when tasks run eagerly) in the process's default registry, which the
worker serves on WEIR_WORKER_METRICS_PORT (``webapp.observability.task_metrics``):

* ``weir_provisioning_job_attempts_total{kind, outcome}``: attempts that ``succeeded``, will be
  ``retrying``, or ``failed`` the job;
* ``weir_provisioning_job_duration_seconds{kind, state}``: a job's life from its creation to
  SUCCEEDED or FAILED (queueing and retries included: what the user waits for);
* ``weir_provisioning_lost_jobs_total{action}``: jobs found without a worker, ``requeued`` or ``failed``;
* ``weir_provisioning_reconcile_rounds_total`` and
  ``weir_provisioning_reconcile_drift_total{kind}``: brokers found drifting from the desired
  state (``partitions_behind``, ``security_behind``, ``hosted_partitions``), and
  ``weir_provisioning_reconcile_repairs_total{outcome}``.

The job table's state is the same from every process, so the web process reads it when
scraped (:class:`JobTableCollector`): ``weir_provisioning_jobs{kind, state}`` and the age of
the oldest unfinished job, which grows when no worker runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from django.db.models import Count, Min
from django.db.models.functions import Coalesce
from django.utils import timezone
from prometheus_client import Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from webapp.provisioning.models import JobState, ProvisioningJob

JOB_ATTEMPTS = Counter(
    "weir_provisioning_job_attempts", "Provisioning job attempts by job kind and outcome (succeeded, retrying, failed).", ["kind", "outcome"]
)
JOB_DURATION = Histogram(
    "weir_provisioning_job_duration_seconds",
    "Time from a provisioning job's creation to SUCCEEDED or FAILED.",
    ["kind", "state"],
    buckets=(0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0),
)
LOST_JOBS = Counter("weir_provisioning_lost_jobs", "Jobs found without a worker by the reconciler, by what was done (requeued, failed).", ["action"])
RECONCILE_ROUNDS = Counter("weir_provisioning_reconcile_rounds", "Reconciler rounds run.")
RECONCILE_DRIFT = Counter(
    "weir_provisioning_reconcile_drift",
    "Brokers the reconciler found drifting from the desired state, by what drifted (partitions_behind, security_behind, hosted_partitions).",
    ["kind"],
)
RECONCILE_REPAIRS = Counter("weir_provisioning_reconcile_repairs", "Pushes the reconciler made to repair drift, by outcome (ok, failed).", ["outcome"])

UNFINISHED = (JobState.PENDING, JobState.RUNNING)


def job_attempt_finished(kind: str, outcome: str) -> None:
    """Count one attempt of a job of ``kind``; ``outcome`` is succeeded, retrying or failed."""
    JOB_ATTEMPTS.labels(kind, outcome).inc()


def job_finished(kind: str, state: str, created_at: datetime, finished_at: datetime) -> None:
    """Record a job's whole life once it reached ``state`` (SUCCEEDED or FAILED)."""
    JOB_DURATION.labels(kind, state).observe(max(0.0, (finished_at - created_at).total_seconds()))


class JobTableCollector(Collector):
    """``weir_provisioning_jobs{kind, state}`` and the oldest unfinished job's age, from the database."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        jobs = GaugeMetricFamily("weir_provisioning_jobs", "Provisioning jobs in the database by kind and state.", labels=["kind", "state"])
        for row in ProvisioningJob.objects.order_by().values("kind", "state").annotate(count=Count("pk")):
            jobs.add_metric([row["kind"], row["state"]], row["count"])
        yield jobs
        oldest = ProvisioningJob.objects.filter(state__in=UNFINISHED).aggregate(oldest=Min(Coalesce("heartbeat_at", "created_at")))["oldest"]
        age = (timezone.now() - oldest).total_seconds() if oldest is not None else 0.0
        yield GaugeMetricFamily(
            "weir_provisioning_oldest_unfinished_job_age_seconds",
            "Seconds since the last sign of life of the oldest PENDING or RUNNING job (0: none); grows while no worker runs.",
            value=max(0.0, age),
        )
