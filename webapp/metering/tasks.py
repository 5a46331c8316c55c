"""Celery task of metering: a thin wrapper over :func:`webapp.metering.launcher.launch`.

Beat queues it for each pipeline (see ``webapp.celery``). A launch refused because the
pipeline is still running is not an error: the next beat tick tries again. Running the task
twice (a redelivered message) starts at most one run at a time for the same reason.
"""

from __future__ import annotations

import logging

from webapp.celery import app
from webapp.metering import launcher
from webapp.metering.models import RunTrigger

logger = logging.getLogger(__name__)


@app.task(name="webapp.metering.tasks.run_pipeline")
def run_pipeline(pipeline: str, trigger: str = RunTrigger.SCHEDULE) -> str:
    """Run ``pipeline`` (``usage``) now; returns a one-line outcome. ``lag`` (queued by a beat of
    an earlier version) is skipped: lag is evaluated continuously by its own process."""
    try:
        run = launcher.launch(pipeline, trigger)
    except (launcher.PipelineAlreadyRunning, launcher.NotAJob) as refused:
        logger.info("%s", refused.message)
        return f"skipped: {refused.message}"
    return f"{run.pipeline} {run.public_id} {run.status}"
