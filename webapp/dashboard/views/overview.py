"""The tenant's home page: what it owns, what is being provisioned, how the brokers are."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.accounts.models import ApiKey
from webapp.catalog.models import AclBinding, Topic
from webapp.dashboard.tenancy import page_context, tenant_page
from webapp.fleet.facade import brokers
from webapp.provisioning.models import ProvisioningJob

RECENT_JOBS = 8


@tenant_page()
def overview(request: HttpRequest) -> HttpResponse:
    tenant = request.actor.tenant  # type: ignore[attr-defined]
    topic_totals = Topic.objects.filter(tenant=tenant).aggregate(topics=Count("pk"), partitions=Sum("partition_count"))
    broker_states = {row["state"]: row["count"] for row in brokers().order_by().values("state").annotate(count=Count("pk"))}
    context = page_context(
        request,
        "overview",
        topic_count=topic_totals["topics"],
        partition_count=topic_totals["partitions"] or 0,
        active_key_count=ApiKey.objects.filter(tenant=tenant, revoked_at__isnull=True).count(),
        acl_count=AclBinding.objects.filter(tenant=tenant).count(),
        recent_jobs=list(ProvisioningJob.objects.filter(tenant=tenant).order_by("-created_at", "-pk")[:RECENT_JOBS]),
        broker_states=sorted(broker_states.items()),
        broker_count=sum(broker_states.values()),
        limits=tenant.limits,
        bootstrap_servers=settings.WEIR_BOOTSTRAP_SERVERS,
    )
    return render(request, "dashboard/overview.html", context)
