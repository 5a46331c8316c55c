"""``GET /api/v1/audit-log``: the caller's tenant's audit events, newest first (admins)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.facade import Role
from webapp.api.pagination import CursorPagination
from webapp.api.query import validated_query
from webapp.api.serializers.audit import AuditEventSerializer, AuditLogQuerySerializer
from webapp.api.views.base import TenantScopedViewSet
from webapp.audit.facade import AuditEvent, AuditFilters, filtered_events


class AuditLogPagination(CursorPagination):
    ordering = ("-at", "-id")


class AuditLogViewSet(mixins.ListModelMixin, TenantScopedViewSet):
    """Who changed what in the tenant, when, from where and through which door; filter by
    ``actor``, ``action``, ``door``, ``since`` and ``until``."""

    queryset = AuditEvent.objects.all()
    serializer_class = AuditEventSerializer
    pagination_class = AuditLogPagination
    read_role = Role.ADMIN

    def safely_get_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.action != "list":
            return queryset
        filters = AuditFilters(**validated_query(AuditLogQuerySerializer, self.request).validated_data)
        # filtered_events starts again from the tenant's rows: the same tenant as ``queryset``.
        return filtered_events(self.actor.tenant, filters)

    @extend_schema(parameters=[AuditLogQuerySerializer])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)
