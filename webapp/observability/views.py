"""``/metrics``, ``/healthz`` and ``/readyz`` of the web process (no authentication: operators'
probes and Prometheus call them; they show no tenant data).

``/metrics`` answers the process's own metrics (HTTP requests; provisioning events when tasks
run eagerly in it) and, read from the database at that moment, the provisioning job table
and the metering pipelines' runs and lag statuses. With PROMETHEUS_MULTIPROC_DIR set (several
gunicorn worker processes), the process metrics are those of every worker, merged.
"""

from __future__ import annotations

import os

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.registry import Collector

from webapp.observability.database_metrics import PipelineCollector
from webapp.observability.readiness import failed_checks
from webapp.provisioning.facade import JobTableCollector


class _ProcessMetrics(Collector):
    """This process's default registry (HTTP and event metrics), as one collector of the page."""

    def collect(self):  # type: ignore[no-untyped-def]
        return REGISTRY.collect()


def _page_registry() -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_ProcessMetrics())
    registry.register(JobTableCollector())
    registry.register(PipelineCollector())
    return registry


_PAGE = _page_registry()


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Every metric of the web process in the Prometheus text format."""
    return HttpResponse(generate_latest(_PAGE), content_type=CONTENT_TYPE_LATEST)


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers HTTP (no dependency is checked)."""
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: 200 when the database and the Celery broker answer, else 503 naming each failure."""
    failed = failed_checks()
    if failed:
        return JsonResponse({"status": "unavailable", "failed": failed}, status=503)
    return JsonResponse({"status": "ok", "checks": ["database", "celery_broker"]})
