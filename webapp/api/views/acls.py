"""``/acls``: list with filters, create one binding, delete every binding a filter matches."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.facade import Role
from webapp.api.query import validated_query
from webapp.api.serializers.acls import AclCreateSerializer, AclDeleteFilterSerializer, AclFilterSerializer, AclSerializer
from webapp.api.serializers.common import JobSummarySerializer, job_summary
from webapp.api.views.base import CONFLICT, TenantScopedViewSet
from webapp.catalog.facade import AclBinding, AclFilter, apply_acl_filter, check_create_acl, do_create_acl, do_delete_acls

AclDeleteResponseSerializer = inline_serializer(
    "KafkaAclDeleteResult", {"kind": serializers.CharField(), "data": AclSerializer(many=True), "job": JobSummarySerializer(allow_null=True)}
)


class AclViewSet(TenantScopedViewSet):
    queryset = AclBinding.objects.all()
    serializer_class = AclSerializer
    write_role = Role.ADMIN

    def safely_get_queryset(self, queryset: QuerySet[AclBinding]) -> QuerySet[AclBinding]:
        return queryset

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        if not getattr(self, "swagger_fake_view", False):
            context["tenant_public_id"] = self.actor.tenant.public_id
        return context

    def _filter(self, serializer_class: type[AclFilterSerializer]) -> AclFilter:
        return AclFilter(**validated_query(serializer_class, self.request).validated_data)

    @extend_schema(parameters=[AclFilterSerializer])
    def list(self, request: Request) -> Response:
        bindings = apply_acl_filter(self.get_queryset(), self._filter(AclFilterSerializer))
        page = self.paginate_queryset(bindings)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @extend_schema(
        request=AclCreateSerializer,
        responses={201: inline_serializer("KafkaAclCreated", {"acl": AclSerializer(), "job": JobSummarySerializer()}), 409: CONFLICT},
    )
    def create(self, request: Request) -> Response:
        payload = AclCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        binding = check_create_acl(self.actor, **payload.validated_data)
        created, job = do_create_acl(self.actor, binding, self.request_id)
        return Response({"acl": self.get_serializer(created).data, "job": job_summary(job, request)}, status=status.HTTP_201_CREATED)

    @extend_schema(parameters=[AclDeleteFilterSerializer], responses={200: AclDeleteResponseSerializer})
    def delete_matching(self, request: Request) -> Response:
        deleted, job = do_delete_acls(self.actor, self._filter(AclDeleteFilterSerializer), self.request_id)
        return Response({"kind": "KafkaAclList", "data": self.get_serializer(deleted, many=True).data, "job": job_summary(job, request)})
