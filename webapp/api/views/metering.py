"""What the metering pipelines computed: ``/usage`` (JSON or CSV), the lag pipeline's
evaluations of consumer groups, and ``/pipeline-runs``.

Two views of consumer lag sit side by side under ``/consumer-groups``:

* live, asked from the brokers on each request (``/consumer-groups/{g}/lags`` and
  ``/lag-summary``, in ``webapp.api.views.groups``): exact now, 503 when brokers are down;
* evaluated continuously by the lag evaluator (``spark_pipelines.lag_monitor``, here):
  ``/consumer-groups/{g}/lag`` (Burrow-style status per partition and group, time lag, lag rate, time to catch up,
  retention risk), ``/consumer-groups/{g}/lag/history`` (the lag over time) and
  ``/consumer-groups:lag-status`` (every group's status at once). These read the database
  only, so they answer while brokers are down, and say when the evaluation is stale.

The collection-wide status is ``consumer-groups:lag-status`` (a custom method, like
``offsets:reset``) rather than ``consumer-groups/lag-status``, which is the path of a group
named ``lag-status``.

Every read is the caller's tenant's: another tenant's group is not found (404). Viewers read.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import exceptions, mixins, serializers, viewsets
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.facade import Actor, Role
from webapp.api.pagination import CursorPagination
from webapp.api.permissions import HasRequiredRole, IsOperator, IsTenantMember
from webapp.api.query import validated_query
from webapp.api.serializers.metering import (
    GroupLagEvaluationSerializer,
    GroupLagStatusQuerySerializer,
    GroupLagStatusSerializer,
    LagHistoryPointSerializer,
    PipelineRunQuerySerializer,
    PipelineRunSerializer,
    TenantPipelineStatusListSerializer,
    TenantPipelineStatusSerializer,
    TimeWindowQuerySerializer,
    UsageListSerializer,
    UsageQuerySerializer,
    UsageRowSerializer,
)
from webapp.api.views.base import ActionErrorsMixin, BaseApiView
from webapp.metering import facade
from webapp.metering.facade import TOPIC_NAME_MAX_LENGTH, USAGE_CSV_COLUMNS, GroupStatus, PipelineRun, csv_lines

GROUP_ID = OpenApiParameter("consumer_group_id", str, OpenApiParameter.PATH)
WINDOW = [
    OpenApiParameter("from", OpenApiTypes.DATETIME, description="Start of the window (inclusive), ISO 8601; a from not before to is an empty window."),
    OpenApiParameter("to", OpenApiTypes.DATETIME, description="End of the window (exclusive), ISO 8601; default now."),
]
# The cursor pagination's parameters, for views that paginate by hand.
PAGING = [
    OpenApiParameter(parameter["name"], parameter["schema"], description=parameter["description"])
    for parameter in CursorPagination().get_schema_operation_parameters(view=None)
]


class UsagePagination(CursorPagination):
    ordering = ("bucket_start", "topic")


class LagHistoryPagination(CursorPagination):
    ordering = "evaluated_at"


class GroupStatusPagination(CursorPagination):
    ordering = "group"


class PipelineRunPagination(CursorPagination):
    ordering = "-started_at"


class CsvRenderer(BaseRenderer):
    """``text/csv``: chosen by ``?format=csv`` or ``Accept: text/csv``. The usage view
    streams its CSV itself; this renders a list of flat mappings (header from the first)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        rows = data if isinstance(data, list) else [data]
        buffer = io.StringIO()
        if rows and isinstance(rows[0], dict):
            writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        return buffer.getvalue().encode(self.charset)


class FormatNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, except that an unknown ``?format=`` is a 400 naming the parameter
    (DRF answers 404)."""

    def filter_renderers(self, renderers: Sequence[BaseRenderer], format: str) -> list[BaseRenderer]:
        matching = [renderer for renderer in renderers if renderer.format == format]
        if not matching:
            known = ", ".join(renderer.format for renderer in renderers)
            raise exceptions.ValidationError({"format": [f"Unknown format {format!r}; use one of: {known}."]})
        return matching


class TenantReadView(BaseApiView):
    """A read-only endpoint of the caller's tenant, open to viewers and above."""

    permission_classes = [IsTenantMember, HasRequiredRole]

    def required_role(self, request: Request) -> str:
        return Role.VIEWER

    @property
    def actor(self) -> Actor:
        user = self.request.user
        assert isinstance(user, Actor), "IsTenantMember admits only actors"
        return user

    def context(self, **values: Any) -> dict[str, Any]:
        return {"request": self.request, "tenant_public_id": self.actor.tenant.public_id, "now": timezone.now(), **values}

    def paginated(self, pagination: CursorPagination, queryset: QuerySet[Any], serializer: type[serializers.Serializer], **body: Any) -> Response:
        page = pagination.paginate_queryset(queryset, self.request, view=self)
        data = serializer(page, many=True, context=self.context()).data
        return Response({**body, "next": pagination.get_next_link(), "previous": pagination.get_previous_link(), "results": data})


class UsageView(TenantReadView):
    """``GET /usage``: the tenant's usage per topic and bucket, as JSON pages or one CSV."""

    renderer_classes = [JSONRenderer, CsvRenderer]
    content_negotiation_class = FormatNegotiation

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        # Errors are JSON whatever the format asked for: the standard body names the bad parameter.
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response

    @extend_schema(
        operation_id="v1_usage_list",
        parameters=[
            OpenApiParameter("granularity", str, enum=["hour", "day"], description="Bucket size (default hour)."),
            OpenApiParameter(
                "from",
                OpenApiTypes.DATETIME,
                description="Buckets starting at or after this time (ISO 8601); default 24 hours (hour) or 30 days (day) before to. A from not before to is an empty window.",
            ),
            OpenApiParameter("to", OpenApiTypes.DATETIME, description="Buckets starting before this time (ISO 8601); default now."),
            OpenApiParameter("topic", {"type": "string", "minLength": 1, "maxLength": TOPIC_NAME_MAX_LENGTH}, description="Only this topic."),
            OpenApiParameter("format", str, enum=["json", "csv"], description="csv: every row of the window as one CSV file (also with Accept: text/csv)."),
            *PAGING,
        ],
        responses={
            (200, "application/json"): OpenApiResponse(UsageListSerializer, description="A page of usage rows."),
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="Every row of the window; header: " + ",".join(USAGE_CSV_COLUMNS) + "."),
        },
        description="Usage of the caller's tenant per topic and hour or day, as the usage pipeline aggregated it: bytes and records in and out, requests, throttle time, storage (average and peak) and partition-hours.",
    )
    def get(self, request: Request) -> Response | StreamingHttpResponse:
        query = validated_query(UsageQuerySerializer, request)
        granularity = query.validated_data["granularity"]
        topic = query.validated_data.get("topic") or None
        start, end = query.window(timezone.now(), facade.default_usage_window(granularity))
        tenant = self.actor.tenant
        rows = facade.usage(tenant, granularity, start, end, topic)
        if request.accepted_renderer.format == "csv":
            response = StreamingHttpResponse(csv_lines(tenant.public_id, rows.iterator(chunk_size=2000)), content_type="text/csv; charset=utf-8")
            response["Content-Disposition"] = f'attachment; filename="usage-{tenant.public_id}-{granularity}-{start:%Y%m%dT%H%M}-{end:%Y%m%dT%H%M}.csv"'
            return response
        body = {
            "kind": "WeirUsageList",
            "cluster_id": tenant.public_id,
            "granularity": granularity,
            "from": start.isoformat(),
            "to": end.isoformat(),
            "topic_name": topic,
        }
        return self.paginated(UsagePagination(), rows, UsageRowSerializer, **body)


LagStatusListSerializer = inline_serializer(
    "WeirConsumerGroupLagStatusList",
    {
        "kind": serializers.CharField(),
        "cluster_id": serializers.CharField(),
        "counts": inline_serializer("WeirConsumerGroupLagStatusCounts", {status: serializers.IntegerField() for status in GroupStatus.values}),
        "next": serializers.URLField(allow_null=True),
        "previous": serializers.URLField(allow_null=True),
        "results": GroupLagStatusSerializer(many=True),
    },
)
LagHistorySerializer = inline_serializer(
    "WeirConsumerGroupLagHistory",
    {
        "kind": serializers.CharField(),
        "consumer_group_id": serializers.CharField(),
        "from": serializers.DateTimeField(),
        "to": serializers.DateTimeField(),
        "next": serializers.URLField(allow_null=True),
        "previous": serializers.URLField(allow_null=True),
        "results": LagHistoryPointSerializer(many=True),
    },
)
NOT_EVALUATED = OpenApiResponse(description="The lag evaluator has not evaluated this group (yet), or it is not the caller's tenant's.")


class LagStatusView(TenantReadView):
    """``GET /consumer-groups:lag-status``: every group the lag evaluator evaluated, with its status."""

    @extend_schema(
        operation_id="v1_consumer_groups_lag_status",
        parameters=[GroupLagStatusQuerySerializer, *PAGING],
        responses={200: LagStatusListSerializer},
        description="The lag evaluator's latest status of each of the tenant's consumer groups, by group id, with how many groups are in each status. For lag asked from the brokers now, see /consumer-groups/{consumer_group_id}/lag-summary.",
    )
    def get(self, request: Request) -> Response:
        query = validated_query(GroupLagStatusQuerySerializer, request)
        tenant = self.actor.tenant
        groups = facade.group_statuses(tenant, query.validated_data.get("status"))
        body = {"kind": "WeirConsumerGroupLagStatusList", "cluster_id": tenant.public_id, "counts": facade.group_status_counts(tenant)}
        return self.paginated(GroupStatusPagination(), groups, GroupLagStatusSerializer, **body)


class GroupLagView(TenantReadView):
    """``GET /consumer-groups/{g}/lag``: the lag evaluator's latest evaluation of one group."""

    @extend_schema(
        operation_id="v1_consumer_groups_lag_evaluation",
        parameters=[GROUP_ID],
        responses={200: GroupLagEvaluationSerializer, 404: NOT_EVALUATED},
        description="The lag evaluator's latest evaluation of the group, within seconds of a commit: status of the group and of each partition (Burrow's OK, WARNING, ERROR, STOP, STALL, REWIND), lag in records and seconds, lag rate, time to catch up, and retention status (seconds until retention deletes an unconsumed record; AT_RISK before data is lost). 404 until the evaluator has evaluated the group.",
    )
    def get(self, request: Request, consumer_group_id: str) -> Response:
        evaluation = facade.group_evaluation(self.actor.tenant, consumer_group_id, timezone.now())
        if evaluation is None:
            raise exceptions.NotFound(facade.not_evaluated_message(consumer_group_id))
        return Response(GroupLagEvaluationSerializer(evaluation, context=self.context()).data)


class GroupLagHistoryView(TenantReadView):
    """``GET /consumer-groups/{g}/lag/history``: the group's evaluations over time, oldest first."""

    @extend_schema(
        operation_id="v1_consumer_groups_lag_history",
        parameters=[GROUP_ID, *WINDOW, *PAGING],
        responses={200: LagHistorySerializer, 404: NOT_EVALUATED},
        description="The group's status, total and max lag, and lag rate (records/s the lag grew, positive, or shrank, negative; the sum over its partitions; null when unknown) at each recorded evaluation of the lag evaluator (a point a minute and at each status change) in the window (default: the last 6 hours), oldest first.",
    )
    def get(self, request: Request, consumer_group_id: str) -> Response:
        query = validated_query(TimeWindowQuerySerializer, request)
        start, end = query.window(timezone.now(), facade.DEFAULT_LAG_HISTORY_WINDOW)
        tenant = self.actor.tenant
        points = facade.lag_history(tenant, consumer_group_id, start, end)
        if not points.exists() and facade.group_evaluation(tenant, consumer_group_id, end) is None:
            raise exceptions.NotFound(facade.not_evaluated_message(consumer_group_id))
        body = {"kind": "WeirConsumerGroupLagHistory", "consumer_group_id": consumer_group_id, "from": start.isoformat(), "to": end.isoformat()}
        return self.paginated(LagHistoryPagination(), points, LagHistoryPointSerializer, **body)


class PipelineStatusView(TenantReadView):
    """``GET /pipelines``: when the usage and lag pipelines last evaluated the caller's tenant."""

    @extend_schema(
        operation_id="v1_pipelines_list",
        responses={200: TenantPipelineStatusListSerializer},
        description="For each pipeline (usage, lag): how often it runs, when its latest run started and how it went, when it last succeeded, and when it last wrote your usage or evaluated your consumer groups. Runs' row counts and errors cover every tenant and are for operators (/pipeline-runs).",
    )
    def get(self, request: Request) -> Response:
        tenant = self.actor.tenant
        statuses = facade.tenant_pipeline_statuses(tenant)
        data = TenantPipelineStatusSerializer(statuses, many=True).data
        return Response({"kind": "WeirPipelineStatusList", "cluster_id": tenant.public_id, "data": data})


class PipelineRunViewSet(ActionErrorsMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """``/pipeline-runs``: the runs of the usage and lag pipelines, newest first, for operators.

    A run covers every tenant at once: its row counts, error and result are figures of all
    tenants together, so members never read them; they read ``/pipelines`` (their tenant's
    evaluation times) instead.
    """

    serializer_class = PipelineRunSerializer
    permission_classes = [IsOperator]
    pagination_class = PipelineRunPagination
    lookup_field = "public_id"
    lookup_url_kwarg = "run_id"

    def get_queryset(self) -> QuerySet[PipelineRun]:
        if getattr(self, "swagger_fake_view", False) or self.action != "list":
            return PipelineRun.objects.all()
        query = validated_query(PipelineRunQuerySerializer, self.request)
        return facade.pipeline_runs(query.validated_data.get("pipeline"), query.validated_data.get("status"))

    @extend_schema(parameters=[PipelineRunQuerySerializer])
    def list(self, request: Request) -> Response:
        return super().list(request)
