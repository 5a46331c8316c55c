"""Where a Celery worker's metrics live across its pool processes; run before prometheus_client loads.

The worker's default pool is prefork: tasks run in child processes, and each child's counters
would be lost to the one HTTP endpoint in the parent. prometheus_client's multiprocess mode
solves that: every process writes its samples to memory-mapped files in
PROMETHEUS_MULTIPROC_DIR, and the endpoint merges them at scrape time. The library reads that
variable when it is first imported, so :func:`prepare_worker_metrics_directory` runs at the
top of ``webapp.celery``, before anything imports prometheus_client, and only when the
process is a worker asked to serve metrics (WEIR_WORKER_METRICS_PORT set and not 0): the
web process and beat never see the variable.

The directory (default ``<WEIR_DATA_DIR>/prometheus/worker-<port>``) is emptied at every
worker start, so that counts of an earlier run, whose processes are gone, are not added to
this one's. This module imports nothing from prometheus_client on purpose.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from pathlib import Path

PORT_VARIABLE = "WEIR_WORKER_METRICS_PORT"
DIRECTORY_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
SAMPLE_FILE_PATTERN = "*.db"  # what prometheus_client writes per process and metric type


class WorkerMetricsConfigError(ValueError):
    """WEIR_WORKER_METRICS_PORT is not a port number, or prometheus_client was loaded too early."""

    retriable = False


def worker_metrics_port(environment: MutableMapping[str, str]) -> int:
    """The worker's metrics port from WEIR_WORKER_METRICS_PORT; 0 (unset or "0") means none."""
    raw = environment.get(PORT_VARIABLE, "").strip() or "0"
    if not raw.isdigit() or int(raw) > 65535:
        raise WorkerMetricsConfigError(f"{PORT_VARIABLE} must be a port number from 0 to 65535, not {raw!r}")
    return int(raw)


def prepare_worker_metrics_directory(environment: MutableMapping[str, str] = os.environ) -> Path | None:
    """Create and empty the multiprocess directory and export it; None when the worker serves no metrics."""
    if worker_metrics_port(environment) == 0:
        return None
    directory = Path(
        environment.get(DIRECTORY_VARIABLE)
        or Path(environment.get("WEIR_DATA_DIR", ".weir-data")).resolve() / "prometheus" / f"worker-{worker_metrics_port(environment)}"
    )
    if "prometheus_client" in sys.modules and DIRECTORY_VARIABLE not in environment:
        raise WorkerMetricsConfigError("prometheus_client was imported before webapp.celery could choose its multiprocess directory")
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob(SAMPLE_FILE_PATTERN):
        stale.unlink(missing_ok=True)
    environment[DIRECTORY_VARIABLE] = str(directory)
    return directory
