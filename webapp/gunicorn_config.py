"""gunicorn's settings for the web process: ``gunicorn -c python:webapp.gunicorn_config webapp.wsgi``.

* ``graceful_timeout``: on SIGTERM gunicorn stops accepting connections and gives the requests
  in flight this long to finish before it kills its workers. It is below the 20 s a
  supervisor waits before SIGKILL (``deploy.processes.STOP_TIMEOUT_SECONDS``; Kubernetes'
  default grace period is 30 s), so that a stop is always the graceful one.
* ``workers`` and ``threads``: the web process serves with ``WEIR_WEB_WORKERS`` worker processes
  of ``WEIR_WEB_THREADS`` threads each. By default one worker per CPU this process may use
  (its CPU affinity, lowered by a cgroup CPU quota such as a container's CPU limit), at most
  ``MAX_DEFAULT_WORKERS``, and ``DEFAULT_THREADS`` threads: a request is mostly Python under the
  GIL, so processes give it the CPUs and threads only cover the waits on the database. Each
  thread may hold one database connection (``CONN_MAX_AGE``): an instance opens up to
  workers x threads of them.
* Several workers share one ``/metrics``: before forking them gunicorn exports
  ``PROMETHEUS_MULTIPROC_DIR`` (the operator's, else a fresh temporary directory removed at exit),
  so that each worker writes its samples to prometheus_client's multiprocess files and the page
  (``webapp.observability.views``) merges every worker's, whichever worker answers the scrape.
* With ``WEIR_LOG_FORMAT=json`` gunicorn's own loggers (``gunicorn.error``, ``gunicorn.access``)
  write JSON lines like the rest of the process (``server_runtime.logging_setup``), and the access line
  ends with the response's request id (``X-Request-ID``: the request's log lines carry the
  same one). In the text format gunicorn keeps its own lines.

Options given on the command line override these.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from server_runtime.logging_setup import JSON, log_format, logging_config

graceful_timeout = 15

# Worker processes when WEIR_WEB_WORKERS is unset: one per usable CPU, at most this many (a big
# host's CPU count would otherwise open more database connections than PostgreSQL's default
# max_connections of 100 allows for a few instances).
MAX_DEFAULT_WORKERS = 8
# Threads per worker when WEIR_WEB_THREADS is unset: enough to overlap database round trips.
DEFAULT_THREADS = 4
# Bounds of what WEIR_WEB_WORKERS and WEIR_WEB_THREADS accept.
MAX_WORKERS = 64
MAX_THREADS = 64
# prometheus_client's multiprocess directory (the same name as webapp.observability.multiprocess_dir's).
METRICS_DIRECTORY_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
# cgroup v2's CPU quota of this process's group: "<quota> <period>" in microseconds, or "max <period>".
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


class WebSizingError(ValueError):
    """WEIR_WEB_WORKERS or WEIR_WEB_THREADS is not a whole number in its range."""


def usable_cpus(cpu_max: Path = CGROUP_CPU_MAX) -> int:
    """CPUs this process may run on: its affinity, lowered to a cgroup v2 CPU quota (rounded up)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    try:
        quota, period = cpu_max.read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        pass  # no cgroup v2 quota to honour
    return max(1, cpus)


def _setting(environment: Mapping[str, str], name: str, default: int, maximum: int) -> int:
    text = environment.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or not 1 <= int(text) <= maximum:
        raise WebSizingError(f"{name} must be a whole number from 1 to {maximum}, not {text!r}")
    return int(text)


def web_workers(environment: Mapping[str, str] = os.environ, cpus: int | None = None) -> int:
    """Worker processes: WEIR_WEB_WORKERS, else one per usable CPU up to MAX_DEFAULT_WORKERS."""
    default = min(MAX_DEFAULT_WORKERS, cpus if cpus is not None else usable_cpus())
    return _setting(environment, "WEIR_WEB_WORKERS", default, MAX_WORKERS)


def web_threads(environment: Mapping[str, str] = os.environ) -> int:
    """Threads per worker: WEIR_WEB_THREADS, else DEFAULT_THREADS."""
    return _setting(environment, "WEIR_WEB_THREADS", DEFAULT_THREADS, MAX_THREADS)


workers = web_workers()
threads = web_threads()
# Threads mean the gthread worker; set explicitly so that WEIR_WEB_THREADS=1 keeps it too.
worker_class = "gthread"
# The multiprocess directory this arbiter made (removed at exit), if any.
_created_metrics_directory: str | None = None


def on_starting(server: Any) -> None:
    """With several workers, export the metrics directory they inherit (see the module docstring):
    the operator's, emptied of an earlier run's samples, else a new temporary one."""
    global _created_metrics_directory
    if server.cfg.workers < 2:
        return
    directory = os.environ.get(METRICS_DIRECTORY_VARIABLE)
    if directory:
        for stale in Path(directory).glob("*.db"):
            stale.unlink(missing_ok=True)
        return
    _created_metrics_directory = tempfile.mkdtemp(prefix="weir-web-metrics-")
    os.environ[METRICS_DIRECTORY_VARIABLE] = _created_metrics_directory


def child_exit(server: Any, worker: Any) -> None:
    """A worker is gone: its live gauges leave the merged page (its counters stay counted)."""
    if os.environ.get(METRICS_DIRECTORY_VARIABLE):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


def on_exit(server: Any) -> None:
    if _created_metrics_directory is not None:
        shutil.rmtree(_created_metrics_directory, ignore_errors=True)


# gunicorn's default access line, plus the request id the response carries.
JSON_ACCESS_LOG_FORMAT = '%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s" request_id=%({x-request-id}o)s'


def json_logconfig() -> dict[str, Any]:
    """The logging dictionary gunicorn applies with WEIR_LOG_FORMAT=json: the root logger writes
    JSON lines and gunicorn's loggers send their records to it."""
    config = logging_config(text_format="%(message)s")
    config["loggers"] = {name: {"level": "INFO", "handlers": [], "propagate": True} for name in ("gunicorn.error", "gunicorn.access")}
    return config


if log_format() == JSON:
    logconfig_dict = json_logconfig()
    access_log_format = JSON_ACCESS_LOG_FORMAT
