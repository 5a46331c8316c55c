"""REST API routes under ``/api/v1/`` (namespace ``api``)."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt
from rest_framework.routers import DefaultRouter

from webapp.api import schema  # noqa: F401  (registers the authentication schemes)
from webapp.api.views.acl_tools import AclExplainView, AclTemplateView
from webapp.api.views.acls import AclViewSet
from webapp.api.views.audit import AuditLogViewSet
from webapp.api.views.cluster import BrokerViewSet, ClusterView
from webapp.api.views.groups import ConsumerGroupViewSet
from webapp.api.views.identities import ApiKeyViewSet, ServiceAccountViewSet
from webapp.api.views.metering import GroupLagHistoryView, GroupLagView, LagStatusView, PipelineRunViewSet, PipelineStatusView, UsageView
from webapp.api.views.operations import JobViewSet
from webapp.api.views.scram_users import ScramUserViewSet
from webapp.api.views.tenants import (
    InvitationAcceptView,
    InvitationViewSet,
    MemberViewSet,
    QuotaView,
    SignUpView,
    TenantView,
)
from webapp.api.views.topics import TopicViewSet
from webapp.api.views.transactions import TransactionViewSet

router = DefaultRouter(trailing_slash=False)
# Topic names contain dots: no ".json"-style format suffixes, so that a name is never cut.
router.include_format_suffixes = False
router.register("topics", TopicViewSet, basename="topic")
router.register("consumer-groups", ConsumerGroupViewSet, basename="consumer-group")
router.register("service-accounts", ServiceAccountViewSet, basename="service-account")
router.register("api-keys", ApiKeyViewSet, basename="api-key")
router.register("scram-users", ScramUserViewSet, basename="scram-user")
router.register("members", MemberViewSet, basename="member")
router.register("invitations", InvitationViewSet, basename="invitation")
router.register("jobs", JobViewSet, basename="job")
router.register("brokers", BrokerViewSet, basename="broker")
router.register("pipeline-runs", PipelineRunViewSet, basename="pipeline-run")
router.register("audit-log", AuditLogViewSet, basename="audit-log")


@csrf_exempt
def no_such_endpoint(request: HttpRequest, rest: str) -> JsonResponse:
    """Any other path under /api/v1/ (or an identifier of the wrong shape, such as a
    broker id that is not a number): the API's 404 body, not the site's HTML page."""
    return JsonResponse({"error_code": 404, "message": f"No such resource: {request.path}"}, status=404)


app_name = "api"
urlpatterns = [
    # ACLs are deleted by filter on the collection, which the router does not route.
    path("acls", AclViewSet.as_view({"get": "list", "post": "create", "delete": "delete_matching"}), name="acl-list"),
    path("acls:apply-template", AclTemplateView.as_view(), name="acl-apply-template"),
    path("acls:explain", AclExplainView.as_view(), name="acl-explain"),
    path("tenant", TenantView.as_view(), name="tenant"),
    path("cluster", ClusterView.as_view(), name="cluster"),
    path("quotas", QuotaView.as_view(), name="quotas"),
    path("sign-up", SignUpView.as_view(), name="sign-up"),
    path("invitations/accept", InvitationAcceptView.as_view(), name="invitation-accept"),
    # Metering (webapp.api.views.metering): the lag pipeline's evaluations beside the live lag
    # of the consumer-groups viewset; "consumer-groups:lag-status" cannot be a group's path.
    path("usage", UsageView.as_view(), name="usage"),
    path("pipelines", PipelineStatusView.as_view(), name="pipelines"),
    path("consumer-groups:lag-status", LagStatusView.as_view(), name="consumer-group-lag-status"),
    path("consumer-groups/<str:consumer_group_id>/lag", GroupLagView.as_view(), name="consumer-group-lag"),
    path("consumer-groups/<str:consumer_group_id>/lag/history", GroupLagHistoryView.as_view(), name="consumer-group-lag-history"),
    # Transactions (webapp.api.views.transactions): ":abort" and ":hanging" in Confluent's custom-method style.
    path("transactions", TransactionViewSet.as_view({"get": "list"}), name="transaction-list"),
    path("transactions:hanging", TransactionViewSet.as_view({"get": "hanging"}), name="transaction-hanging"),
    re_path(r"^transactions/(?P<transactional_id>[^/]+):abort$", TransactionViewSet.as_view({"post": "abort"}), name="transaction-abort"),
    path("transactions/<str:transactional_id>", TransactionViewSet.as_view({"get": "retrieve"}), name="transaction-detail"),
    *router.urls,
    # Last: whatever no route above matched.
    re_path(r"^(?P<rest>.*)$", no_such_endpoint, name="not-found"),
]
