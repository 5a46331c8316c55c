"""The tenant's home page: what it owns, how healthy its partitions are, what is being
provisioned, how the brokers are."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.accounts.facade import ApiKey
from webapp.catalog.facade import AclBinding, Topic, tenant_health_counts
from webapp.dashboard.tenancy import page_context, tenant_page
from webapp.fleet.facade import broker_state_counts, kafka_bootstrap_servers
from webapp.provisioning.facade import ProvisioningJob

RECENT_JOBS = 8


@tenant_page()
def overview(request: HttpRequest) -> HttpResponse:
    tenant = request.actor.tenant  # type: ignore[attr-defined]
    broker_states = broker_state_counts()
    context = page_context(
        request,
        "overview",
        topic_count=Topic.objects.filter(tenant=tenant).count(),
        health=tenant_health_counts(tenant),
        active_key_count=ApiKey.objects.filter(tenant=tenant, revoked_at__isnull=True).count(),
        acl_count=AclBinding.objects.filter(tenant=tenant).count(),
        recent_jobs=list(ProvisioningJob.objects.filter(tenant=tenant).order_by("-created_at", "-pk")[:RECENT_JOBS]),
        broker_states=sorted(broker_states.items()),
        broker_count=sum(broker_states.values()),
        limits=tenant.limits,
        bootstrap_servers=settings.WEIR_BOOTSTRAP_SERVERS,
        kafka_bootstrap_servers=kafka_bootstrap_servers(),
    )
    return render(request, "dashboard/overview.html", context)
