"""``/jobs``: the tenant's own; operators see every tenant's."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.facade import Actor, Tenant, is_operator
from webapp.api.permissions import IsTenantMemberOrOperator
from webapp.api.query import validated_query_data
from webapp.api.serializers.common import Timestamps
from webapp.api.views.base import ActionErrorsMixin
from webapp.provisioning.facade import JobKind, JobState, ProvisioningJob

# The columns a member's page of jobs reads (``values_list(*JOB_ROW_FIELDS, named=True)``): rows of
# them render as ProvisioningJob instances do, for a fraction of the CPU of building the instances.
JOB_ROW_FIELDS = ("public_id", "kind", "target", "state", "attempts", "error", "request_id", "created_at", "started_at", "finished_at")


class JobSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="public_id")
    tenant_id = serializers.CharField(source="tenant.public_id", allow_null=True, default=None)

    class Meta:
        model = ProvisioningJob
        fields = ["id", "tenant_id", "kind", "target", "state", "attempts", "error", "request_id", "created_at", "started_at", "finished_at"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timestamps = Timestamps()

    def to_representation(self, job: ProvisioningJob) -> dict[str, Any]:
        """Meta.fields, in their order, built directly (the declarations stay for the OpenAPI
        schema): DRF's per-field machinery was most of the cost of a page of jobs.

        ``job`` is a ProvisioningJob, or a row of :data:`JOB_ROW_FIELDS` when the context's
        ``tenant_public_id`` names the tenant of every job (a member's page)."""
        timestamps = self._timestamps
        if "tenant_public_id" in self.context:
            tenant_id = self.context["tenant_public_id"]
        else:
            tenant_id = job.tenant.public_id if job.tenant is not None else None
        return {
            "id": job.public_id,
            "tenant_id": tenant_id,
            "kind": str(job.kind),
            "target": job.target,
            "state": str(job.state),
            "attempts": int(job.attempts),
            "error": job.error,
            "request_id": job.request_id,
            "created_at": timestamps(job.created_at),
            "started_at": timestamps(job.started_at),
            "finished_at": timestamps(job.finished_at),
        }


class JobFilterSerializer(serializers.Serializer):
    """Query parameters of ``GET /jobs``."""

    state = serializers.ChoiceField(choices=JobState.values, required=False, help_text="Only jobs in this state.")
    kind = serializers.ChoiceField(choices=JobKind.values, required=False, help_text="Only jobs of this kind.")


class JobViewSet(ActionErrorsMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Jobs, newest first, filterable by ``state`` and ``kind``.

    Not a TenantScopedViewSet because operators see all jobs; the scoping is the first line
    of :meth:`get_queryset` and a member only ever gets its tenant's jobs.
    """

    serializer_class = JobSerializer
    permission_classes = [IsTenantMemberOrOperator]
    lookup_field = "public_id"

    def get_queryset(self) -> QuerySet[ProvisioningJob]:
        jobs = ProvisioningJob.objects.all()
        if getattr(self, "swagger_fake_view", False):
            return jobs.none()
        user = self.request.user
        if not is_operator(user):
            assert isinstance(user, Actor)
            jobs = jobs.filter(tenant=user.tenant)
        if self.action == "list":
            jobs = jobs.filter(**validated_query_data(JobFilterSerializer, self.request))
        if self._tenant_of_every_job() is None:
            jobs = jobs.select_related("tenant")
        return jobs

    def _tenant_of_every_job(self) -> Tenant | None:
        """The tenant of every job a page of the list holds: the caller's, unless it is an operator."""
        user = self.request.user
        if self.action != "list" or is_operator(user) or not isinstance(user, Actor):
            return None
        return user.tenant

    # Inline enums: a serializer here would make a second "kind" enum component.
    @extend_schema(
        parameters=[
            OpenApiParameter("state", str, enum=JobState.values, description="Only jobs in this state."),
            OpenApiParameter("kind", str, enum=JobKind.values, description="Only jobs of this kind."),
        ]
    )
    def list(self, request: Request) -> Response:
        tenant = self._tenant_of_every_job()
        if tenant is None:
            page = self.paginate_queryset(self.get_queryset())
            assert page is not None, "every list is paginated (DEFAULT_PAGINATION_CLASS)"
            return self.get_paginated_response(self.get_serializer(page, many=True).data)
        # A member's jobs are all its tenant's: its id is given once instead of joined and built per
        # job, and the page reads rows of the columns it shows rather than building instances.
        rows = self.paginate_queryset(self.get_queryset().values_list(*JOB_ROW_FIELDS, named=True))
        assert rows is not None, "every list is paginated (DEFAULT_PAGINATION_CLASS)"
        context = {**self.get_serializer_context(), "tenant_public_id": tenant.public_id}
        return self.get_paginated_response(JobSerializer(rows, many=True, context=context).data)
