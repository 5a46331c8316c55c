"""``/cluster`` (the caller's tenant as a logical cluster, with the health of its partitions)
and ``/brokers`` (the brokers serving it, with how many of the tenant's partitions each
leads and hosts)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.facade import Actor, Tenant
from webapp.api.permissions import IsTenantMemberOrOperator
from webapp.api.schema import single_object
from webapp.api.serializers.cluster import BrokerSerializer, ClusterSerializer
from webapp.api.serializers.common import link, resource_name
from webapp.api.views.base import ActionErrorsMixin
from webapp.api.views.tenants import TenantRoleView
from webapp.catalog.facade import Topic, broker_partition_counts, tenant_health_counts
from webapp.fleet.facade import BrokerNode, broker_state_counts, brokers

BrokerListSerializer = single_object(inline_serializer("KafkaBrokerList", {"kind": serializers.CharField(), "data": BrokerSerializer(many=True)}))


class ClusterView(TenantRoleView):
    """The caller's tenant as a Kafka cluster: links to its topics and brokers, and how many
    of its partitions are under-replicated, below min ISR or offline (every member may read)."""

    @extend_schema(responses={200: ClusterSerializer})
    def get(self, request: Request) -> Response:
        tenant = self.actor.tenant
        health = tenant_health_counts(tenant)
        states = broker_state_counts()
        cluster = {
            "kind": "KafkaCluster",
            "metadata": {"self": link(request, "api:cluster"), "resource_name": resource_name(tenant.public_id)},
            "cluster_id": tenant.public_id,
            "topics": {"related": link(request, "api:topic-list")},
            "brokers": {"related": link(request, "api:broker-list")},
            "topics_count": Topic.objects.filter(tenant=tenant).count(),
            "partitions_count": health.partitions,
            "under_replicated_partitions_count": health.under_replicated,
            "under_min_isr_partitions_count": health.under_min_isr,
            "offline_partitions_count": health.offline,
            "brokers_count": sum(states.values()),
            "broker_states": states,
        }
        return Response(ClusterSerializer(cluster).data)


class BrokerViewSet(ActionErrorsMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The brokers, for every member of a tenant and for operators.

    Brokers are shared by all tenants. A member learns what the brokers' Metadata answers
    tell any client anyway (ids, addresses, racks), their state, and how many of its own
    tenant's partitions each one leads and hosts: counts only, never another tenant's topics.
    An operator outside any tenant gets counts over every partition.
    """

    serializer_class = BrokerSerializer
    permission_classes = [IsTenantMemberOrOperator]
    lookup_field = "node_id"
    lookup_url_kwarg = "broker_id"
    lookup_value_regex = r"[0-9]+"
    pagination_class = None

    def get_queryset(self) -> QuerySet[BrokerNode]:
        return brokers()

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        if not getattr(self, "swagger_fake_view", False):
            context["partition_counts"] = broker_partition_counts(self._counted_tenant())
        return context

    @extend_schema(responses={200: BrokerListSerializer})
    def list(self, request: Request) -> Response:
        return Response({"kind": "KafkaBrokerList", "data": self.get_serializer(self.get_queryset(), many=True).data})

    def _counted_tenant(self) -> Tenant | None:
        """Whose partitions the counts are over: the caller's tenant; None (all) for an
        operator signed in outside any tenant."""
        user = self.request.user
        return user.tenant if isinstance(user, Actor) else None
