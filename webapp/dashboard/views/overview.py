"""The tenant's home page: what it owns, how healthy its partitions are, how much traffic its
topics have now (live throughput, refreshed alone), what is being provisioned, how the
brokers are."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache

from webapp.accounts.facade import ApiKey, Tenant
from webapp.catalog.facade import AclBinding, Topic, tenant_health_counts
from webapp.dashboard.fragments import fragment_of
from webapp.dashboard.tenancy import page_context, tenant_page
from webapp.dashboard.throughput_panels import tenant_panel
from webapp.fleet.facade import broker_state_counts, kafka_bootstrap_servers
from webapp.provisioning.facade import ProvisioningJob, describe_tenant_traffic

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
        **_throughput(tenant),
    )
    return render(request, "dashboard/overview.html", context)


def _throughput(tenant: Tenant) -> dict[str, Any]:
    return tenant_panel(Topic.objects.filter(tenant=tenant), describe_tenant_traffic(tenant), timezone.now())


@never_cache
@fragment_of(lambda: f"{reverse('dashboard:overview')}#throughput")
@tenant_page()
def overview_throughput(request: HttpRequest) -> HttpResponse:
    """The overview's live throughput alone, for its periodic refresh."""
    return render(request, "dashboard/overview_throughput.html", _throughput(request.actor.tenant))  # type: ignore[attr-defined]
