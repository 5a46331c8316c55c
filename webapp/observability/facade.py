"""What the rest of the project may use of observability: the Celery app (``webapp.celery``)
connects the task metrics and prepares each worker's metrics directory through here."""

from __future__ import annotations

from webapp.observability.multiprocess_dir import prepare_worker_metrics_directory
from webapp.observability.task_metrics import connect_task_signals

__all__ = ["connect_task_signals", "prepare_worker_metrics_directory"]
