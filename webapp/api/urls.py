"""REST API routes under ``/api/v1/`` (namespace ``api``)."""

from __future__ import annotations

from django.urls import path
from rest_framework.routers import DefaultRouter

from webapp.api import schema  # noqa: F401  (registers the authentication schemes)
from webapp.api.views.acls import AclViewSet
from webapp.api.views.cluster import BrokerViewSet, ClusterView
from webapp.api.views.groups import ConsumerGroupViewSet
from webapp.api.views.identities import ApiKeyViewSet, ServiceAccountViewSet
from webapp.api.views.metering import GroupLagHistoryView, GroupLagView, LagStatusView, PipelineRunViewSet, UsageView
from webapp.api.views.operations import JobViewSet
from webapp.api.views.tenants import (
    InvitationAcceptView,
    InvitationViewSet,
    MemberViewSet,
    QuotaView,
    SignUpView,
    TenantView,
)
from webapp.api.views.topics import TopicViewSet

router = DefaultRouter(trailing_slash=False)
# Topic names contain dots: no ".json"-style format suffixes, so that a name is never cut.
router.include_format_suffixes = False
router.register("topics", TopicViewSet, basename="topic")
router.register("consumer-groups", ConsumerGroupViewSet, basename="consumer-group")
router.register("service-accounts", ServiceAccountViewSet, basename="service-account")
router.register("api-keys", ApiKeyViewSet, basename="api-key")
router.register("members", MemberViewSet, basename="member")
router.register("invitations", InvitationViewSet, basename="invitation")
router.register("jobs", JobViewSet, basename="job")
router.register("brokers", BrokerViewSet, basename="broker")
router.register("pipeline-runs", PipelineRunViewSet, basename="pipeline-run")

app_name = "api"
urlpatterns = [
    # ACLs are deleted by filter on the collection, which the router does not route.
    path("acls", AclViewSet.as_view({"get": "list", "post": "create", "delete": "delete_matching"}), name="acl-list"),
    path("tenant", TenantView.as_view(), name="tenant"),
    path("cluster", ClusterView.as_view(), name="cluster"),
    path("quotas", QuotaView.as_view(), name="quotas"),
    path("sign-up", SignUpView.as_view(), name="sign-up"),
    path("invitations/accept", InvitationAcceptView.as_view(), name="invitation-accept"),
    # Metering (webapp.api.views.metering): the lag pipeline's evaluations beside the live lag
    # of the consumer-groups viewset; "consumer-groups:lag-status" cannot be a group's path.
    path("usage", UsageView.as_view(), name="usage"),
    path("consumer-groups:lag-status", LagStatusView.as_view(), name="consumer-group-lag-status"),
    path("consumer-groups/<str:consumer_group_id>/lag", GroupLagView.as_view(), name="consumer-group-lag"),
    path("consumer-groups/<str:consumer_group_id>/lag/history", GroupLagHistoryView.as_view(), name="consumer-group-lag-history"),
    *router.urls,
]
