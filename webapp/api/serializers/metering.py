"""Metering shapes: usage query parameters and rows, the lag pipeline's evaluations of
consumer groups (with their history), and pipeline runs.

Query parameters are validated by input serializers, so that a bad one answers 400 with its
name in ``errors``. Times are ISO 8601; a time without an offset is UTC, a bare date is its
midnight UTC, and a ``+`` that a query string turned into a space is put back.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.accounts.facade import is_operator
from webapp.api.serializers.common import RelatedLinkSerializer, ResourceMetadataSerializer, link, resource_name
from webapp.metering.facade import (
    TOPIC_NAME_MAX_LENGTH,
    USAGE_FIGURES,
    Granularity,
    GroupEvaluation,
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
    is_stale,
)

# Times are clamped to this range: far enough apart for any real query (no usage or lag is
# older or newer), near enough that defaults computed from them (a window before ``to``)
# never leave Python's datetime range. Clamping rather than refusing keeps every time the
# schema's date-time format allows a valid one.
EARLIEST_TIME = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_TIME = datetime(9000, 1, 1, tzinfo=UTC)
# Shown to callers that are not operators in place of a failed run's error: a job's stderr
# may name other tenants' topics and groups.
REDACTED_ERROR = "The run failed; operators see the details."


@extend_schema_field(OpenApiTypes.DATETIME)
class InstantField(serializers.Field):
    """An ISO 8601 time or date, as an aware UTC datetime within [EARLIEST_TIME, LATEST_TIME]."""

    default_error_messages = {
        "invalid": "Not a time: use ISO 8601, e.g. 2025-01-31T12:00:00Z, 2025-01-31T12:00:00+01:00 or 2025-01-31.",
    }

    def to_internal_value(self, value: Any) -> datetime:
        if not isinstance(value, str):
            self.fail("invalid")
        parsed = _parse_instant(value.strip())
        if parsed is None:
            self.fail("invalid")
        return min(max(parsed, EARLIEST_TIME), LATEST_TIME)

    def to_representation(self, value: datetime) -> str:
        return value.isoformat()


def _parse_instant(text: str) -> datetime | None:
    candidates = [text]
    if " " in text:
        # "2025-01-31T12:00:00+01:00" unencoded in a query string arrives with a space for the "+".
        head, _, tail = text.rpartition(" ")
        candidates.append(f"{head}+{tail}")
    for candidate in candidates:
        try:
            parsed = parse_datetime(candidate)
            if parsed is None:
                day = parse_date(candidate)
                parsed = datetime(day.year, day.month, day.day) if day is not None else None
            if parsed is None:
                continue
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            return parsed.astimezone(UTC)
        except (ValueError, OverflowError):
            continue
    return None


class TimeWindowQuerySerializer(serializers.Serializer):
    """``from`` (inclusive) and ``to`` (exclusive); each optional. A window whose ``from`` is
    not before its ``to`` is empty (no rows), like any window without data: both are valid
    times, and the schema cannot say that one must precede the other."""

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        # "from" is a Python keyword, so both are declared here rather than as attributes.
        fields["from"] = InstantField(required=False, help_text="Start of the window (inclusive), ISO 8601.")
        fields["to"] = InstantField(required=False, help_text="End of the window (exclusive), ISO 8601; default now.")
        return fields

    def window(self, now: datetime, default_length: Any) -> tuple[datetime, datetime]:
        """(start, end): ``to`` defaults to ``now``, ``from`` to ``default_length`` before ``to``.
        ``start >= end`` means an empty window."""
        end = self.validated_data.get("to") or now
        start = self.validated_data.get("from") or max(end - default_length, EARLIEST_TIME)
        return start, end


class UsageQuerySerializer(TimeWindowQuerySerializer):
    granularity = serializers.ChoiceField(choices=Granularity.values, default=Granularity.HOUR, help_text="Bucket size: hour (default) or day.")
    topic = serializers.CharField(required=False, max_length=TOPIC_NAME_MAX_LENGTH, help_text="Only this topic (deleted topics keep their usage).")
    # Chosen by content negotiation before the view runs; declared so that it is given once.
    format = serializers.ChoiceField(choices=["json", "csv"], required=False)


class UsageRowSerializer(serializers.ModelSerializer):
    """One topic's usage in one bucket ``[bucket_start, bucket_start + 1 hour or day)``."""

    topic_name = serializers.CharField(source="topic")

    class Meta:
        model = UsageAggregate
        fields = ["topic_name", "granularity", "bucket_start", *USAGE_FIGURES]


class UsageListSerializer(serializers.Serializer):
    kind = serializers.CharField()
    cluster_id = serializers.CharField()
    granularity = serializers.ChoiceField(choices=Granularity.values)
    # "from" is declared in get_fields, for the same reason as above.
    to = serializers.DateTimeField()
    topic_name = serializers.CharField(allow_null=True)
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = UsageRowSerializer(many=True)

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField()
        return fields


class WorstPartitionSerializer(serializers.Serializer):
    topic_name = serializers.CharField()
    partition_id = serializers.IntegerField(allow_null=True)
    status = serializers.ChoiceField(choices=PartitionStatus.values)


def _worst_partition(group: GroupLag) -> dict[str, Any] | None:
    if not group.worst_topic:
        return None
    return {"topic_name": group.worst_topic, "partition_id": group.worst_partition, "status": group.worst_status or None}


class PartitionLagStatusSerializer(serializers.ModelSerializer):
    """One partition as the lag pipeline evaluated it: offsets, lag in records and seconds,
    Burrow's status, and whether retention is about to delete records not yet consumed."""

    topic_name = serializers.CharField(source="topic")
    partition_id = serializers.IntegerField(source="partition")
    current_offset = serializers.IntegerField(source="committed_offset")
    log_end_offset = serializers.IntegerField(source="end_offset", allow_null=True)
    lag = serializers.IntegerField(source="offset_lag")

    class Meta:
        model = PartitionLag
        fields = [
            "topic_name",
            "partition_id",
            "status",
            "current_offset",
            "log_end_offset",
            "log_start_offset",
            "lag",
            "time_lag_seconds",
            "retention_risk",
            "lag_rate",
            "catch_up_seconds",
            "retention_seconds",
            "retention_status",
            "last_commit_at",
        ]
        extra_kwargs = {
            "lag_rate": {"help_text": "Records per second the lag grows (positive) or shrinks (negative) over the window of recent commits."},
            "catch_up_seconds": {"help_text": "Seconds until the lag reaches 0 at the current rate; null while it is not shrinking."},
            "retention_seconds": {
                "help_text": "Seconds until retention deletes the next record the group has not consumed (its timestamp + retention.ms); 0 once records were lost; null when unknown or without time retention."
            },
            "retention_status": {
                "help_text": "OK; AT_RISK when retention deletes unconsumed records within the risk horizon or before the group catches up; LOST once it has."
            },
        }


class GroupLagStatusSerializer(serializers.ModelSerializer):
    """A group's latest evaluation (without partitions); ``stale`` when the lag monitor has not
    touched it for three of its touch intervals. The context gives ``request``, ``tenant_public_id`` and ``now``."""

    kind = serializers.SerializerMethodField()
    consumer_group_id = serializers.CharField(source="group")
    partitions_count = serializers.IntegerField(source="partition_count")
    worst_partition = serializers.SerializerMethodField()
    stale = serializers.SerializerMethodField()
    lag = serializers.SerializerMethodField()

    class Meta:
        model = GroupLag
        fields = [
            "kind",
            "consumer_group_id",
            "status",
            "evaluated_at",
            "stale",
            "total_lag",
            "max_lag",
            "max_time_lag_seconds",
            "partitions_count",
            "retention_risk",
            "lag_rate",
            "catch_up_seconds",
            "retention_seconds",
            "retention_status",
            "worst_partition",
            "lag",
        ]

    def get_kind(self, group: GroupLag) -> str:
        return "WeirConsumerGroupLagStatus"

    @extend_schema_field(WorstPartitionSerializer(allow_null=True))
    def get_worst_partition(self, group: GroupLag) -> dict[str, Any] | None:
        return _worst_partition(group)

    def get_stale(self, group: GroupLag) -> bool:
        return is_stale(group.evaluated_at, self.context["now"])

    @extend_schema_field(RelatedLinkSerializer)
    def get_lag(self, group: GroupLag) -> dict[str, str]:
        return {"related": link(self.context["request"], "api:consumer-group-lag", consumer_group_id=group.group)}


class GroupLagEvaluationSerializer(serializers.Serializer):
    """The lag pipeline's latest evaluation of a group, with every partition it evaluated.
    ``history`` is the lag over time; ``live_lag_summary`` the lag asked from the brokers now."""

    kind = serializers.SerializerMethodField()
    metadata = serializers.SerializerMethodField()
    cluster_id = serializers.SerializerMethodField()
    consumer_group_id = serializers.CharField(source="group.group")
    status = serializers.ChoiceField(
        source="group.status",
        choices=GroupStatus.values,
        help_text="OK; WARNING when a partition's lag grows; ERROR when a partition is STOP, STALL, REWIND or ERROR.",
    )
    evaluated_at = serializers.DateTimeField(source="group.evaluated_at")
    stale = serializers.BooleanField(
        help_text="The lag monitor has not touched the evaluation for three of its touch intervals (WEIR_LAG_TOUCH_SECONDS, 30 s): it is not running or is behind."
    )
    total_lag = serializers.IntegerField(source="group.total_lag")
    max_lag = serializers.IntegerField(source="group.max_lag")
    max_time_lag_seconds = serializers.FloatField(
        source="group.max_time_lag_seconds", allow_null=True, help_text="How far behind in time the most delayed partition is."
    )
    partitions_count = serializers.IntegerField(source="group.partition_count")
    retention_risk = serializers.BooleanField(
        source="group.retention_risk",
        help_text="Retention is about to delete (AT_RISK) or has deleted (LOST) records of a partition before the group consumed them.",
    )
    lag_rate = serializers.FloatField(source="group.lag_rate", allow_null=True, help_text="Records per second the group's total lag grows (+) or shrinks (-).")
    catch_up_seconds = serializers.FloatField(
        source="group.catch_up_seconds",
        allow_null=True,
        help_text="Seconds until every partition has caught up at its current rate; null while one is not catching up.",
    )
    retention_seconds = serializers.FloatField(
        source="group.retention_seconds", allow_null=True, help_text="The soonest a partition's next unconsumed record is deleted by retention, in seconds."
    )
    retention_status = serializers.ChoiceField(
        source="group.retention_status", choices=RetentionStatus.values, help_text="The worst partition's: OK, AT_RISK or LOST."
    )
    worst_partition = serializers.SerializerMethodField()
    partitions = PartitionLagStatusSerializer(many=True)
    history = serializers.SerializerMethodField()
    live_lag_summary = serializers.SerializerMethodField()

    def get_kind(self, evaluation: GroupEvaluation) -> str:
        return "WeirConsumerGroupLag"

    @extend_schema_field(ResourceMetadataSerializer)
    def get_metadata(self, evaluation: GroupEvaluation) -> dict[str, str]:
        group_id = evaluation.group.group
        return {
            "self": link(self.context["request"], "api:consumer-group-lag", consumer_group_id=group_id),
            "resource_name": resource_name(self.context["tenant_public_id"], f"consumer-group={group_id}", "lag"),
        }

    def get_cluster_id(self, evaluation: GroupEvaluation) -> str:
        return self.context["tenant_public_id"]

    @extend_schema_field(WorstPartitionSerializer(allow_null=True))
    def get_worst_partition(self, evaluation: GroupEvaluation) -> dict[str, Any] | None:
        return _worst_partition(evaluation.group)

    @extend_schema_field(RelatedLinkSerializer)
    def get_history(self, evaluation: GroupEvaluation) -> dict[str, str]:
        return {"related": link(self.context["request"], "api:consumer-group-lag-history", consumer_group_id=evaluation.group.group)}

    @extend_schema_field(RelatedLinkSerializer)
    def get_live_lag_summary(self, evaluation: GroupEvaluation) -> dict[str, str]:
        return {"related": link(self.context["request"], "api:consumer-group-lag-summary", consumer_group_id=evaluation.group.group)}


class LagHistoryPointSerializer(serializers.ModelSerializer):
    class Meta:
        model = GroupLagHistory
        fields = ["evaluated_at", "status", "total_lag", "max_lag", "max_time_lag_seconds", "lag_rate"]


class GroupLagStatusQuerySerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=GroupStatus.values, required=False, help_text="Only groups in this status.")


class PipelineRunQuerySerializer(serializers.Serializer):
    pipeline = serializers.ChoiceField(choices=Pipeline.values, required=False)
    status = serializers.ChoiceField(choices=RunStatus.values, required=False)


class PipelineRunSerializer(serializers.ModelSerializer):
    """One run of a pipeline. ``error`` and ``result`` are an operator's to read in full: a
    job's output may name any tenant's topics and groups."""

    id = serializers.CharField(source="public_id")
    duration_seconds = serializers.FloatField(allow_null=True)
    error = serializers.SerializerMethodField()
    result = serializers.SerializerMethodField()

    class Meta:
        model = PipelineRun
        fields = ["id", "pipeline", "status", "trigger", "started_at", "finished_at", "duration_seconds", "rows_written", "error", "result"]

    def get_error(self, run: PipelineRun) -> str:
        if not run.error or self._operator():
            return run.error
        return REDACTED_ERROR

    @extend_schema_field(serializers.JSONField(allow_null=True, help_text="The job's result line (operators only; null otherwise)."))
    def get_result(self, run: PipelineRun) -> Any:
        return run.result if self._operator() else None

    def _operator(self) -> bool:
        return is_operator(self.context["request"].user)


class TenantPipelineStatusSerializer(serializers.Serializer):
    """One pipeline as the caller's tenant sees it (``webapp.metering.facade.TenantPipelineStatus``)."""

    pipeline = serializers.ChoiceField(choices=Pipeline.values)
    interval_seconds = serializers.FloatField(help_text="How often it runs when scheduled (usage: its Celery beat schedule; lag: the lag monitor's round).")
    last_run_started_at = serializers.DateTimeField(allow_null=True, help_text="When its latest run started.")
    last_run_status = serializers.ChoiceField(choices=RunStatus.values, allow_null=True, help_text="How its latest run went (RUNNING while it runs).")
    last_succeeded_at = serializers.DateTimeField(allow_null=True, help_text="When a run last succeeded.")
    last_evaluated_at = serializers.DateTimeField(
        allow_null=True, help_text="usage: when your usage rows were last written; lag: when your consumer groups were last evaluated. Null: never."
    )


class TenantPipelineStatusListSerializer(serializers.Serializer):
    kind = serializers.CharField()
    cluster_id = serializers.CharField()
    data = TenantPipelineStatusSerializer(many=True)
