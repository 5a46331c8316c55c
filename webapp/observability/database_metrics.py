"""Metrics read from the database when Prometheus scrapes the web process.

The metering pipelines run as subprocesses of the worker and record each run in
``metering.PipelineRun``; the lag pipeline keeps each consumer group's latest Burrow-style
evaluation in ``metering.GroupLag``. Those rows are the truth whichever process wrote them,
so the web process reports them:

* ``weir_pipeline_runs{pipeline, status}``: runs kept in the history, by status;
* ``weir_pipeline_last_run_duration_seconds{pipeline}``, ``weir_pipeline_last_run_rows{pipeline}``
  and ``weir_pipeline_last_run_failed{pipeline}`` (1 when the latest finished run FAILED);
* ``weir_pipeline_last_success_timestamp_seconds{pipeline}``: when the latest successful run
  finished (a pipeline that stopped running shows as an old timestamp);
* ``weir_pipeline_consumer_groups{status}``: consumer groups by their current lag status (OK,
  WARNING, ERROR), evaluations older than the metering facade's staleness limit left out;
* per group (``tenant``: public id, ``group``), from the lag evaluator's current rows, stale
  ones left out: ``weir_consumer_group_lag_records`` (total lag),
  ``weir_consumer_group_lag_seconds`` (the most delayed partition's time lag),
  ``weir_consumer_group_lag_rate`` (records/s the lag grows, negative while it shrinks),
  ``weir_consumer_group_catch_up_seconds`` (at that rate; absent while not catching up),
  ``weir_consumer_group_retention_seconds`` (until retention deletes an unconsumed record),
  ``weir_consumer_group_status{status}`` and ``weir_consumer_group_retention_status{status}``
  (1 for the current one);
* ``weir_lag_evaluated_timestamp_seconds``: when the evaluator last evaluated (a stopped
  evaluator shows as an old timestamp).

The metering models are looked up by name, and a database without their tables (not
migrated yet) or an unreachable one yields no samples instead of failing the scrape: the
scrape still answers the metrics that do not need them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta

from django.apps import apps
from django.db import DatabaseError
from django.db.models import Count
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from log_formats.lag_statuses import GROUP_STATUSES

logger = logging.getLogger(__name__)

RUNNING = "RUNNING"
FAILED = "FAILED"
SUCCEEDED = "SUCCEEDED"
LAG_STATUSES = GROUP_STATUSES  # always exported, 0 when no group has it, so alerts see the series


def _model(name: str):  # type: ignore[no-untyped-def]
    try:
        return apps.get_model("metering", name)
    except LookupError:
        return None


class PipelineCollector(Collector):
    """The ``weir_pipeline_*`` gauges of the module docstring."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            families = list(self._runs()) + list(self._lag())
        except DatabaseError:
            logger.warning("metrics: the metering tables cannot be read; no pipeline metrics this scrape", exc_info=True)
            return
        yield from families

    def _runs(self) -> Iterator[GaugeMetricFamily]:
        run_model = _model("PipelineRun")
        if run_model is None:
            return
        runs = GaugeMetricFamily("weir_pipeline_runs", "Metering pipeline runs kept in the history, by pipeline and status.", labels=["pipeline", "status"])
        pipelines: set[str] = set()
        for row in run_model.objects.order_by().values("pipeline", "status").annotate(count=Count("pk")):
            runs.add_metric([row["pipeline"], row["status"]], row["count"])
            pipelines.add(row["pipeline"])
        yield runs
        duration = GaugeMetricFamily("weir_pipeline_last_run_duration_seconds", "Duration of the latest finished run of each pipeline.", labels=["pipeline"])
        rows = GaugeMetricFamily("weir_pipeline_last_run_rows", "Rows written by the latest finished run of each pipeline.", labels=["pipeline"])
        failed = GaugeMetricFamily("weir_pipeline_last_run_failed", "1 when the latest finished run of the pipeline FAILED.", labels=["pipeline"])
        succeeded = GaugeMetricFamily(
            "weir_pipeline_last_success_timestamp_seconds", "Unix time the latest successful run of each pipeline finished.", labels=["pipeline"]
        )
        # One query per pipeline: there are two, usage and lag.
        for pipeline in sorted(pipelines):
            finished = run_model.objects.filter(pipeline=pipeline).exclude(status=RUNNING)
            latest = finished.order_by("-started_at").values("status", "duration", "rows_written").first()
            if latest is not None:
                failed.add_metric([pipeline], int(latest["status"] == FAILED))
                if latest["duration"] is not None:
                    duration.add_metric([pipeline], _seconds(latest["duration"]))
                if latest["rows_written"] is not None:
                    rows.add_metric([pipeline], latest["rows_written"])
            last_success = finished.filter(status=SUCCEEDED).order_by("-finished_at").values_list("finished_at", flat=True).first()
            if last_success is not None:
                succeeded.add_metric([pipeline], last_success.timestamp())
        yield from (duration, rows, failed, succeeded)

    def _lag(self) -> Iterator[GaugeMetricFamily]:
        group_model = _model("GroupLag")
        if group_model is None:
            return
        from webapp.metering.facade import STALE_AFTER_INTERVALS, lag_interval_seconds

        fresh_since = timezone.now() - timedelta(seconds=STALE_AFTER_INTERVALS * lag_interval_seconds())
        counts = {status: 0 for status in LAG_STATUSES}
        for row in group_model.objects.filter(evaluated_at__gte=fresh_since).order_by().values("status").annotate(count=Count("pk")):
            counts[row["status"]] = row["count"]
        groups = GaugeMetricFamily(
            "weir_pipeline_consumer_groups", "Consumer groups by the lag pipeline's current status (stale evaluations left out).", labels=["status"]
        )
        for status, count in counts.items():
            groups.add_metric([status], count)
        yield groups
        yield from self._group_lag(group_model, fresh_since)

    def _group_lag(self, group_model, fresh_since) -> Iterator[GaugeMetricFamily]:  # type: ignore[no-untyped-def]
        labels = ["tenant", "group"]
        families = {
            "total_lag": GaugeMetricFamily("weir_consumer_group_lag_records", "Total lag of the consumer group in records (lag evaluator).", labels=labels),
            "max_time_lag_seconds": GaugeMetricFamily(
                "weir_consumer_group_lag_seconds", "Age of the oldest unconsumed record among the group's partitions.", labels=labels
            ),
            "lag_rate": GaugeMetricFamily("weir_consumer_group_lag_rate", "Records per second the group's lag grows (negative: shrinks).", labels=labels),
            "catch_up_seconds": GaugeMetricFamily(
                "weir_consumer_group_catch_up_seconds", "Seconds until the group catches up at its current rate (absent while it does not).", labels=labels
            ),
            "retention_seconds": GaugeMetricFamily(
                "weir_consumer_group_retention_seconds", "Seconds until retention deletes a record the group has not consumed.", labels=labels
            ),
        }
        status = GaugeMetricFamily("weir_consumer_group_status", "1 for the group's current Burrow status.", labels=[*labels, "status"])
        retention = GaugeMetricFamily("weir_consumer_group_retention_status", "1 for the group's current retention status.", labels=[*labels, "status"])
        evaluated = GaugeMetricFamily("weir_lag_evaluated_timestamp_seconds", "Unix time the lag evaluator last evaluated the consumer groups.")
        latest = None
        rows = group_model.objects.filter(evaluated_at__gte=fresh_since).select_related("tenant").order_by("tenant__public_id", "group")
        for row in rows:
            key = [row.tenant.public_id, row.group]
            for field, family in families.items():
                value = getattr(row, field)
                if value is not None:
                    family.add_metric(key, float(value))
            status.add_metric([*key, row.status], 1)
            retention.add_metric([*key, row.retention_status], 1)
            latest = row.evaluated_at if latest is None or row.evaluated_at > latest else latest
        if latest is not None:
            evaluated.add_metric([], latest.timestamp())
        yield from (*families.values(), status, retention, evaluated)


def _seconds(value: object) -> float:
    """A DurationField value (timedelta) or a number of seconds."""
    return value.total_seconds() if isinstance(value, timedelta) else float(value)  # type: ignore[arg-type]
