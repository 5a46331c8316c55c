"""What the pipelines computed, and the records of their runs.

* :class:`UsageAggregate`: one tenant's traffic and storage on one topic over one hour or
  one day (``granularity``), written by the usage job. The topic is a name, not a foreign
  key: a deleted topic's usage is history and stays.
* :class:`PartitionLag` / :class:`GroupLag`: the lag evaluator's latest evaluation of each
  group (per partition and for the group as a whole), upserted when it changes.
  :class:`GroupLagHistory` keeps a row per group each minute and at each status change for
  the lag-over-time chart, pruned after ``WEIR_METERING_HISTORY_DAYS``. :class:`LagWindow`
  holds the evaluator's windows of commits, so that a restart resumes with them.
* :class:`PipelineRun`: one run of a pipeline, written by :mod:`webapp.metering.launcher`.
* :class:`PipelineState`: a JSON document per pipeline (its cursor and small state).

Rows are written only by :mod:`webapp.metering.writer` and the launcher; every other app
reads through :mod:`webapp.metering.facade`.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from webapp.public_ids import new_public_id

# Kafka topic names are at most 249 characters; group ids have no limit in Kafka, this is ours.
TOPIC_NAME_MAX_LENGTH = 249
GROUP_ID_MAX_LENGTH = 255


class Granularity(models.TextChoices):
    HOUR = "hour"
    DAY = "day"


class Pipeline(models.TextChoices):
    """A pipeline is the module ``spark_pipelines.jobs.<value>``."""

    USAGE = "usage"
    LAG = "lag"


class PartitionStatus(models.TextChoices):
    """Burrow's partition evaluation: OK; WARNING (lag growing while the group commits);
    STALL (commits stopped moving with lag left), STOP (no commit for a long time), REWIND
    (the committed offset went backwards), ERROR (anything else wrong)."""

    OK = "OK"
    WARNING = "WARNING"
    ERROR = "ERROR"
    STOP = "STOP"
    STALL = "STALL"
    REWIND = "REWIND"


class GroupStatus(models.TextChoices):
    """Burrow's group status: ERROR when any partition is STOP, STALL, REWIND or ERROR,
    WARNING when any is WARNING, else OK."""

    OK = "OK"
    WARNING = "WARNING"
    ERROR = "ERROR"


class RetentionStatus(models.TextChoices):
    """Whether retention deletes records before the group reads them (``spark_pipelines.lag_trends``)."""

    OK = "OK"
    AT_RISK = "AT_RISK"
    LOST = "LOST"


class RunStatus(models.TextChoices):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class RunTrigger(models.TextChoices):
    SCHEDULE = "schedule"  # Celery beat
    MANUAL = "manual"  # manage.py run_pipeline


def new_pipeline_run_id() -> str:
    return new_public_id("run")


class UsageAggregate(models.Model):
    """A tenant's usage of one topic in the bucket ``[bucket_start, bucket_start + 1 hour or day)``.

    Counters are sums over the bucket; ``storage_bytes_avg`` / ``_peak`` are the topic's log
    size (all partitions, leaders only) averaged over and at its largest in the bucket;
    ``partition_hours`` counts partitions times the hours they existed in it.
    """

    tenant = models.ForeignKey("accounts.Tenant", on_delete=models.CASCADE, related_name="usage_aggregates")
    topic = models.CharField(max_length=TOPIC_NAME_MAX_LENGTH)
    granularity = models.CharField(max_length=4, choices=Granularity.choices)
    bucket_start = models.DateTimeField()
    bytes_in = models.BigIntegerField(default=0)
    bytes_out = models.BigIntegerField(default=0)
    records_in = models.BigIntegerField(default=0)
    records_out = models.BigIntegerField(default=0)
    produce_requests = models.BigIntegerField(default=0)
    fetch_requests = models.BigIntegerField(default=0)
    throttle_time_ms = models.BigIntegerField(default=0)
    storage_bytes_avg = models.BigIntegerField(default=0)
    storage_bytes_peak = models.BigIntegerField(default=0)
    partition_hours = models.FloatField(default=0.0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "granularity", "topic", "bucket_start"], name="usage_one_row_per_bucket")]
        # The unique constraint serves queries filtered by topic; this one a tenant's range.
        indexes = [models.Index(fields=["tenant", "granularity", "bucket_start"], name="usage_tenant_range")]

    def __str__(self) -> str:
        return f"{self.topic} {self.granularity} {self.bucket_start:%Y-%m-%dT%H:%M}Z"


class PartitionLag(models.Model):
    """The latest evaluation of one partition of a group; ``end_offset`` and
    ``log_start_offset`` are null when the partition's log could not be read."""

    tenant = models.ForeignKey("accounts.Tenant", on_delete=models.CASCADE, related_name="+")
    group = models.CharField(max_length=GROUP_ID_MAX_LENGTH)
    topic = models.CharField(max_length=TOPIC_NAME_MAX_LENGTH)
    partition = models.PositiveIntegerField()
    committed_offset = models.BigIntegerField()
    end_offset = models.BigIntegerField(null=True)
    log_start_offset = models.BigIntegerField(null=True)
    offset_lag = models.BigIntegerField()
    time_lag_seconds = models.FloatField(null=True)
    status = models.CharField(max_length=8, choices=PartitionStatus.choices)
    # Retention is about to delete (AT_RISK) or deleted (LOST) records the group has not read.
    retention_risk = models.BooleanField(default=False)
    # Beyond Burrow (spark_pipelines.lag_trends): records/s the lag grows (+) or shrinks (-), seconds
    # to catch up at that rate (null: not catching up), seconds until retention deletes the next
    # unconsumed record (null: unknown or no time retention), and OK / AT_RISK / LOST.
    lag_rate = models.FloatField(null=True)
    catch_up_seconds = models.FloatField(null=True)
    retention_seconds = models.FloatField(null=True)
    retention_status = models.CharField(max_length=8, choices=RetentionStatus.choices, default="OK")
    last_commit_at = models.DateTimeField(null=True)
    evaluated_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "group", "topic", "partition"], name="lag_one_row_per_group_partition")]
        indexes = [models.Index(fields=["evaluated_at"], name="partition_lag_evaluated")]

    def __str__(self) -> str:
        return f"{self.group} {self.topic}[{self.partition}] {self.status}"


class GroupLag(models.Model):
    """The latest evaluation of a group; ``worst_*`` name its worst partition (blank/null
    when the job named none)."""

    tenant = models.ForeignKey("accounts.Tenant", on_delete=models.CASCADE, related_name="+")
    group = models.CharField(max_length=GROUP_ID_MAX_LENGTH)
    status = models.CharField(max_length=8, choices=GroupStatus.choices)
    max_lag = models.BigIntegerField()
    total_lag = models.BigIntegerField()
    max_time_lag_seconds = models.FloatField(null=True)
    partition_count = models.PositiveIntegerField()
    retention_risk = models.BooleanField(default=False)
    worst_topic = models.CharField(max_length=TOPIC_NAME_MAX_LENGTH, blank=True)
    worst_partition = models.PositiveIntegerField(null=True)
    worst_status = models.CharField(max_length=8, choices=PartitionStatus.choices, blank=True)
    # Beyond Burrow (spark_pipelines.lag_trends): the sum of the partitions' records/s the lag grows (+) or shrinks (-), the longest of its partitions' seconds
    # to catch up at that rate (null: not catching up), the soonest seconds until retention deletes the next
    # unconsumed record (null: unknown or no time retention), and the worst of OK / AT_RISK / LOST.
    lag_rate = models.FloatField(null=True)
    catch_up_seconds = models.FloatField(null=True)
    retention_seconds = models.FloatField(null=True)
    retention_status = models.CharField(max_length=8, choices=RetentionStatus.choices, default="OK")
    evaluated_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "group"], name="lag_one_row_per_group")]
        indexes = [models.Index(fields=["evaluated_at"], name="group_lag_evaluated")]

    def __str__(self) -> str:
        return f"{self.group} {self.status}"


class LagWindow(models.Model):
    """The lag evaluator's window of recent commits of one group-partition (Burrow's ring of
    ``intervals`` commits), saved when it changes so that a restarted evaluator resumes with it.
    Tenants by public id, as brokers name them; the evaluator's cursor is its PipelineState."""

    tenant_public_id = models.CharField(max_length=64)
    group = models.CharField(max_length=GROUP_ID_MAX_LENGTH)
    topic = models.CharField(max_length=TOPIC_NAME_MAX_LENGTH)
    partition = models.PositiveIntegerField()
    window = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant_public_id", "group", "topic", "partition"], name="lag_one_window_per_group_partition")]

    def __str__(self) -> str:
        return f"{self.tenant_public_id} {self.group} {self.topic}[{self.partition}]"


class GroupLagHistory(models.Model):
    """One evaluation of a group, kept for the lag-over-time and lag-rate charts."""

    tenant = models.ForeignKey("accounts.Tenant", on_delete=models.CASCADE, related_name="+")
    group = models.CharField(max_length=GROUP_ID_MAX_LENGTH)
    evaluated_at = models.DateTimeField()
    status = models.CharField(max_length=8, choices=GroupStatus.choices)
    total_lag = models.BigIntegerField()
    max_lag = models.BigIntegerField()
    max_time_lag_seconds = models.FloatField(null=True)
    # The group's lag rate then (GroupLag.lag_rate: the sum of its partitions'); null when no
    # partition had enough points for one, and for points recorded before it was kept.
    lag_rate = models.FloatField(
        null=True, help_text="Records per second the group's lag grew (positive) or shrank (negative) then: the sum over its partitions; null when unknown."
    )

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "group", "evaluated_at"], name="lag_history_series"),
            models.Index(fields=["evaluated_at"], name="lag_history_pruning"),
        ]

    def __str__(self) -> str:
        return f"{self.group} at {self.evaluated_at:%Y-%m-%dT%H:%M:%S}Z {self.status}"


class PipelineRun(models.Model):
    """One run of a pipeline: RUNNING, then SUCCEEDED or FAILED with ``error`` (the reason,
    with the tail of the job's stderr). ``result`` is the JSON the job printed on its
    ``WEIR-PIPELINE-RESULT`` line. At most one run per pipeline is RUNNING (a partial
    unique index), which is how a second concurrent launch is refused."""

    public_id = models.CharField(max_length=32, unique=True, default=new_pipeline_run_id, editable=False)
    pipeline = models.CharField(max_length=16, choices=Pipeline.choices)
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.RUNNING)
    trigger = models.CharField(max_length=10, choices=RunTrigger.choices)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    duration = models.DurationField(null=True, blank=True)
    rows_written = models.BigIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    result = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["pipeline"], condition=Q(status="RUNNING"), name="one_running_run_per_pipeline")]
        indexes = [
            models.Index(fields=["pipeline", "-started_at"], name="pipeline_runs_recent"),
            models.Index(fields=["started_at"], name="pipeline_runs_pruning"),
        ]

    def __str__(self) -> str:
        return f"{self.pipeline} {self.public_id} ({self.status})"

    @property
    def duration_seconds(self) -> float | None:
        return self.duration.total_seconds() if self.duration is not None else None


class PipelineState(models.Model):
    """A pipeline's own small state between runs (offsets read per partition, ...)."""

    pipeline = models.CharField(max_length=16, primary_key=True)
    state = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.pipeline
