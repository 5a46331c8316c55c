"""Celery task metrics (``weir_celery_*``) and the worker's ``/metrics`` endpoint.

Counted from Celery's signals in whichever process runs the task (a prefork child, the
worker itself with ``--pool=solo``/``threads``, or the web process when tasks run eagerly):

* ``weir_celery_tasks_total{task, state}``: tasks that ended, by the state they ended in
  (``success``, ``failure``, ``retry``...);
* ``weir_celery_task_duration_seconds{task}``: from ``task_prerun`` to ``task_postrun``;
* ``weir_celery_task_failures_total{task, exception}``: failures by exception class;
* ``weir_celery_task_retries_total{task}``: retries scheduled.

A worker started with WEIR_WORKER_METRICS_PORT serves every process's metrics, merged from
the multiprocess directory (``multiprocess_dir``), at ``http://<WEIR_WORKER_METRICS_HOST,
default 0.0.0.0>:<port>/metrics``, started in the parent process at ``worker_init``, before
the pool forks. The provisioning metrics counted in tasks (``webapp.provisioning.metrics``)
appear there too.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from celery import signals
from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics, multiprocess, start_http_server

from webapp.observability.multiprocess_dir import DIRECTORY_VARIABLE, worker_metrics_port

logger = logging.getLogger(__name__)

disable_created_metrics()  # no ``*_created`` series: they double the series for nothing read
HOST_VARIABLE = "WEIR_WORKER_METRICS_HOST"
DEFAULT_HOST = "0.0.0.0"  # a container's port is reached from outside it

TASKS = Counter("weir_celery_tasks", "Celery tasks that ended, by task name and final state.", ["task", "state"])
DURATION = Histogram(
    "weir_celery_task_duration_seconds",
    "Time Celery tasks ran, by task name.",
    ["task"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0),
)
FAILURES = Counter("weir_celery_task_failures", "Celery tasks that raised, by task name and exception class.", ["task", "exception"])
RETRIES = Counter("weir_celery_task_retries", "Celery task retries scheduled, by task name.", ["task"])

_started: dict[str, float] = {}  # task id -> perf_counter at prerun (threads pool: many at once)
_started_lock = threading.Lock()


def _task_name(sender: Any, task: Any = None) -> str:
    named = task if task is not None else sender
    return str(getattr(named, "name", None) or "unknown")


def on_task_prerun(task_id: str | None = None, **_: object) -> None:
    if task_id is not None:
        with _started_lock:
            _started[task_id] = time.perf_counter()


def on_task_postrun(sender: Any = None, task_id: str | None = None, task: Any = None, state: str | None = None, **_: object) -> None:
    name = _task_name(sender, task)
    with _started_lock:
        started = _started.pop(task_id, None) if task_id is not None else None
    if started is not None:
        DURATION.labels(name).observe(time.perf_counter() - started)
    TASKS.labels(name, (state or "unknown").lower()).inc()


def on_task_failure(sender: Any = None, exception: BaseException | None = None, **_: object) -> None:
    FAILURES.labels(_task_name(sender), type(exception).__name__ if exception is not None else "unknown").inc()


def on_task_retry(sender: Any = None, **_: object) -> None:
    RETRIES.labels(_task_name(sender)).inc()


def start_worker_endpoint(**_: object) -> None:
    """``worker_init``: serve the merged metrics when WEIR_WORKER_METRICS_PORT asks for it."""
    port = worker_metrics_port(os.environ)
    if port == 0:
        return
    directory = os.environ.get(DIRECTORY_VARIABLE)
    if not directory:
        logger.error("%s is set but %s is not: the worker serves no metrics", "WEIR_WORKER_METRICS_PORT", DIRECTORY_VARIABLE)
        return
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=directory)
    host = os.environ.get(HOST_VARIABLE, DEFAULT_HOST)
    start_http_server(port, addr=host, registry=registry)
    logger.info("worker metrics served at http://%s:%d/metrics (multiprocess directory %s)", host, port, directory)


def forget_dead_process(pid: int | None = None, **_: object) -> None:
    """``worker_process_shutdown``: drop the live gauges of a pool process that ended (counters stay)."""
    if os.environ.get(DIRECTORY_VARIABLE):
        multiprocess.mark_process_dead(pid if pid is not None else os.getpid())


def connect_task_signals() -> None:
    """Count every task and start the worker endpoint (idempotent: each receiver is connected once, strongly)."""
    signals.task_prerun.connect(on_task_prerun, weak=False, dispatch_uid="weir-task-metrics-prerun")
    signals.task_postrun.connect(on_task_postrun, weak=False, dispatch_uid="weir-task-metrics-postrun")
    signals.task_failure.connect(on_task_failure, weak=False, dispatch_uid="weir-task-metrics-failure")
    signals.task_retry.connect(on_task_retry, weak=False, dispatch_uid="weir-task-metrics-retry")
    signals.worker_init.connect(start_worker_endpoint, weak=False, dispatch_uid="weir-worker-metrics-endpoint")
    signals.worker_process_shutdown.connect(forget_dead_process, weak=False, dispatch_uid="weir-worker-metrics-dead-process")
