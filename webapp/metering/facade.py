"""What the REST API and the dashboard may read of metering: usage, the lag pipeline's
evaluations, and pipeline runs. Every tenant read takes the tenant and filters by it first.

These are the *lag monitor's* views of lag: evaluated every ``WEIR_LAG_REFRESH_SECONDS`` (2 s)
with Burrow-style statuses and kept as history; an evaluation is stale once the monitor has not
touched it for three of its ``WEIR_LAG_TOUCH_SECONDS`` (the monitor writes what changed each round
and refreshes every row's ``evaluated_at`` at that interval). The live lag asked from the brokers on each
request (``webapp.consumer_groups``) is the other view; the two meet only in the pages that
show both.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import quote

from django.conf import settings
from django.db.models import Count, Max, QuerySet, Sum

from webapp.accounts.facade import Tenant
from webapp.metering.figures import USAGE_FIGURES
from webapp.metering.models import (
    GROUP_ID_MAX_LENGTH,
    TOPIC_NAME_MAX_LENGTH,
    Granularity,
    GroupLag,
    GroupLagHistory,
    GroupStatus,
    PartitionLag,
    PartitionStatus,
    Pipeline,
    PipelineRun,
    RetentionStatus,
    RunStatus,
    UsageAggregate,
)
from webapp.metering.usage_export import USAGE_CSV_COLUMNS, csv_lines

__all__ = [
    "DEFAULT_LAG_HISTORY_WINDOW",
    "DEFAULT_USAGE_WINDOW",
    "Granularity",
    "GroupEvaluation",
    "GroupLag",
    "GroupLagHistory",
    "GroupStatus",
    "PartitionLag",
    "PartitionStatus",
    "Pipeline",
    "PipelineRun",
    "RetentionStatus",
    "RunStatus",
    "STALE_AFTER_INTERVALS",
    "TOPIC_NAME_MAX_LENGTH",
    "TenantPipelineStatus",
    "USAGE_CSV_COLUMNS",
    "USAGE_FIGURES",
    "USAGE_SUM_FIELDS",
    "UsageAggregate",
    "csv_lines",
    "default_usage_window",
    "group_evaluation",
    "group_status_counts",
    "group_statuses",
    "is_stale",
    "lag_history",
    "lag_interval_seconds",
    "last_succeeded_run",
    "not_evaluated_message",
    "pipeline_runs",
    "tenant_pipeline_statuses",
    "usage",
    "usage_topics",
    "usage_totals_by_bucket",
    "usage_totals_by_topic",
]

# The window a usage query covers when it names no ``from``.
DEFAULT_USAGE_WINDOW = {Granularity.HOUR: timedelta(hours=24), Granularity.DAY: timedelta(days=30)}
# The window of a lag history query that names no ``from``.
DEFAULT_LAG_HISTORY_WINDOW = timedelta(hours=6)
# An evaluation the lag monitor has not touched for this many touch intervals is stale (the
# monitor stopped or is behind, or the group is gone and no longer evaluated).
STALE_AFTER_INTERVALS = 3
USAGE_SUM_FIELDS = ("bytes_in", "bytes_out", "records_in", "records_out", "produce_requests", "fetch_requests", "throttle_time_ms", "partition_hours")


@dataclass(frozen=True)
class GroupEvaluation:
    """The lag pipeline's latest evaluation of one group, with its partitions (by topic, partition)."""

    group: GroupLag
    partitions: list[PartitionLag]
    stale: bool


def lag_interval_seconds() -> float:
    """How often the lag monitor evaluates every group (a round)."""
    return float(settings.WEIR_LAG_REFRESH_SECONDS)


def lag_touch_seconds() -> float:
    """The longest the lag monitor leaves a row's ``evaluated_at`` alone while it runs."""
    return max(float(settings.WEIR_LAG_TOUCH_SECONDS), lag_interval_seconds())


def default_usage_window(granularity: str) -> timedelta:
    return DEFAULT_USAGE_WINDOW[Granularity(granularity)]


def usage(tenant: Tenant, granularity: str, start: datetime, end: datetime, topic: str | None = None) -> QuerySet[UsageAggregate]:
    """The tenant's usage rows of ``granularity`` whose bucket starts in ``[start, end)``,
    of one topic or all, by bucket then topic."""
    rows = UsageAggregate.objects.filter(tenant=tenant, granularity=granularity, bucket_start__gte=start, bucket_start__lt=end)
    if topic:
        rows = rows.filter(topic=topic)
    return rows.order_by("bucket_start", "topic")


def usage_totals_by_bucket(tenant: Tenant, granularity: str, start: datetime, end: datetime, topic: str | None = None) -> list[dict[str, object]]:
    """One row per bucket summed over topics (storage sums the topics' averages and peaks),
    by bucket; keys: ``bucket_start`` and the counters."""
    rows = usage(tenant, granularity, start, end, topic).order_by().values("bucket_start")
    rows = rows.annotate(
        **{name: Sum(name) for name in USAGE_SUM_FIELDS}, storage_bytes_avg=Sum("storage_bytes_avg"), storage_bytes_peak=Sum("storage_bytes_peak")
    )
    return list(rows.order_by("bucket_start"))


def usage_totals_by_topic(tenant: Tenant, granularity: str, start: datetime, end: datetime, topic: str | None = None) -> list[dict[str, object]]:
    """One row per topic over the whole window: counters summed, ``storage_bytes_peak`` the
    largest of the window; biggest traffic first."""
    rows = usage(tenant, granularity, start, end, topic).order_by().values("topic")
    rows = rows.annotate(**{name: Sum(name) for name in USAGE_SUM_FIELDS}, storage_bytes_peak=Max("storage_bytes_peak"))
    return sorted(rows, key=lambda row: (-(row["bytes_in"] or 0) - (row["bytes_out"] or 0), row["topic"]))


def usage_topics(tenant: Tenant) -> list[str]:
    """Every topic name the tenant has usage of (deleted topics included), sorted."""
    return list(UsageAggregate.objects.filter(tenant=tenant).order_by("topic").values_list("topic", flat=True).distinct())


def group_evaluation(tenant: Tenant, group: str, now: datetime) -> GroupEvaluation | None:
    """The latest evaluation of the tenant's ``group``; None when the pipeline has none
    (never evaluated, not the tenant's, or not a possible group id)."""
    if not _possible_group_id(group):
        return None
    row = GroupLag.objects.filter(tenant=tenant, group=group).first()
    if row is None:
        return None
    partitions = list(PartitionLag.objects.filter(tenant=tenant, group=group).order_by("topic", "partition"))
    return GroupEvaluation(group=row, partitions=partitions, stale=is_stale(row.evaluated_at, now))


def group_statuses(tenant: Tenant, status: str | None = None) -> QuerySet[GroupLag]:
    """The latest evaluation of each of the tenant's groups (optionally of one status), by group id."""
    rows = GroupLag.objects.filter(tenant=tenant)
    if status:
        rows = rows.filter(status=status)
    return rows.order_by("group")


def group_status_counts(tenant: Tenant) -> dict[str, int]:
    """How many of the tenant's groups are in each group status (every status present, 0 or more)."""
    counts = dict(GroupLag.objects.filter(tenant=tenant).order_by().values_list("status").annotate(count=Count("pk")))
    return {status: counts.get(status, 0) for status in GroupStatus.values}


def lag_history(tenant: Tenant, group: str, start: datetime, end: datetime) -> QuerySet[GroupLagHistory]:
    """The evaluations of the tenant's ``group`` in ``[start, end)``, oldest first."""
    if not _possible_group_id(group):
        return GroupLagHistory.objects.none()
    return GroupLagHistory.objects.filter(tenant=tenant, group=group, evaluated_at__gte=start, evaluated_at__lt=end).order_by("evaluated_at")


def is_stale(evaluated_at: datetime, now: datetime) -> bool:
    return (now - evaluated_at).total_seconds() > STALE_AFTER_INTERVALS * lag_touch_seconds()


def pipeline_runs(pipeline: str | None = None, status: str | None = None) -> QuerySet[PipelineRun]:
    """Runs, newest first, optionally of one pipeline and status: every tenant's figures
    together, for operators only (members read :func:`tenant_pipeline_statuses`)."""
    runs = PipelineRun.objects.all()
    if pipeline:
        runs = runs.filter(pipeline=pipeline)
    if status:
        runs = runs.filter(status=status)
    return runs.order_by("-started_at", "-pk")


def last_succeeded_run(pipeline: str) -> PipelineRun | None:
    return PipelineRun.objects.filter(pipeline=pipeline, status=RunStatus.SUCCEEDED).order_by("-started_at", "-pk").first()


def not_evaluated_message(group: str) -> str:
    """What to tell a caller asking for the evaluation of a group the evaluator has none of."""
    return (
        f"The lag evaluator has not evaluated consumer group '{group}' (yet): it evaluates every group with "
        f"committed offsets within seconds of a commit. The live lag, asked from the brokers, "
        f"is at /api/v1/consumer-groups/{quote(group, safe='')}/lag-summary."
    )


def _possible_group_id(group: str) -> bool:
    # Names the database cannot hold are never any tenant's evaluated group (and PostgreSQL
    # refuses NUL in a query).
    return bool(group) and len(group) <= GROUP_ID_MAX_LENGTH and "\x00" not in group


@dataclass(frozen=True)
class TenantPipelineStatus:
    """What one pipeline means to one tenant: how often it runs, how its latest run went and
    when it last succeeded (times and status only), and when it last evaluated this tenant's
    data. A run covers every tenant at once, so its row counts, errors and results are
    figures of all tenants together: operators read them (:func:`pipeline_runs`), members
    never do."""

    pipeline: str
    interval_seconds: float
    last_run_started_at: datetime | None
    last_run_status: str | None
    last_succeeded_at: datetime | None
    last_evaluated_at: datetime | None


def tenant_pipeline_statuses(tenant: Tenant) -> list[TenantPipelineStatus]:
    """For each pipeline (usage, lag): its schedule, latest run and last success, and the last
    time it wrote ``tenant``'s usage rows or evaluated ``tenant``'s consumer groups."""
    intervals = {Pipeline.USAGE: settings.WEIR_USAGE_PIPELINE_INTERVAL_SECONDS, Pipeline.LAG: lag_interval_seconds()}
    evaluated = {
        Pipeline.USAGE: UsageAggregate.objects.filter(tenant=tenant).aggregate(last=Max("updated_at"))["last"],
        Pipeline.LAG: GroupLag.objects.filter(tenant=tenant).aggregate(last=Max("evaluated_at"))["last"],
    }
    statuses = []
    for pipeline in Pipeline.values:
        latest = PipelineRun.objects.filter(pipeline=pipeline).order_by("-started_at", "-pk").only("started_at", "status").first()
        succeeded = last_succeeded_run(pipeline)
        statuses.append(
            TenantPipelineStatus(
                pipeline=pipeline,
                interval_seconds=float(intervals[pipeline]),
                last_run_started_at=latest.started_at if latest else None,
                last_run_status=latest.status if latest else None,
                last_succeeded_at=(succeeded.finished_at or succeeded.started_at) if succeeded else None,
                last_evaluated_at=evaluated[pipeline],
            )
        )
    return statuses
