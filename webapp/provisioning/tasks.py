"""Celery tasks of provisioning: thin wrappers over ``jobs`` and ``reconciler``.

Both take primitive arguments and are idempotent, so a redelivered message (acks_late) is
harmless.
"""

from __future__ import annotations

from celery import Task
from django.db import OperationalError

from webapp.celery import app
from webapp.provisioning import jobs, reconciler

# A task that met a busy or unreachable database tries again this often, this many times.
DATABASE_RETRIES = 10
DATABASE_RETRY_SECONDS = 1.0


@app.task(bind=True, name="webapp.provisioning.tasks.run_job", max_retries=None)
def run_job(self: Task, job_id: int) -> str:
    """Push the snapshots of job ``job_id`` to the brokers; retry later while brokers are unreachable."""
    try:
        outcome = jobs.run_attempt(job_id)
    except OperationalError as error:
        # The database was busy (SQLite under several writers) or unreachable: the job is
        # unchanged or mid-attempt, and running it again is safe.
        if self.request.retries >= DATABASE_RETRIES:
            raise
        raise self.retry(exc=error, countdown=DATABASE_RETRY_SECONDS) from None
    if outcome.retry_in_seconds is not None:
        # The attempt count lives on the job, so the task itself retries without limit.
        raise self.retry(countdown=outcome.retry_in_seconds)
    return outcome.state


@app.task(name="webapp.provisioning.tasks.reconcile")
def reconcile() -> str:
    """Compare every broker with the desired state and repair what differs."""
    return reconciler.reconcile().summary()
