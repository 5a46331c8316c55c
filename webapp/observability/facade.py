"""What the rest of the project may use of observability: the Celery app (``webapp.celery``)
prepares each worker's metrics directory and connects the task metrics through here.

Importing this module must not import ``prometheus_client``: ``webapp.celery`` imports it
first thing and calls :func:`prepare_worker_metrics_directory`, which refuses to run once
``prometheus_client`` is loaded (its multiprocess directory is chosen at import). So only
``multiprocess_dir`` (standard library only) is imported here, and the task metrics module is
imported when :func:`connect_task_signals` is called.
"""

from __future__ import annotations

from webapp.observability.multiprocess_dir import prepare_worker_metrics_directory

__all__ = ["connect_task_signals", "prepare_worker_metrics_directory"]


def connect_task_signals() -> None:
    """Count every task and start the worker's metrics endpoint (idempotent). Precondition:
    :func:`prepare_worker_metrics_directory` ran, in a worker."""
    # Imported here, not above: it imports prometheus_client (see the module docstring).
    from webapp.observability.task_metrics import connect_task_signals as connect

    connect()
