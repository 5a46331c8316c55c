"""The metering pipelines' page: for a member, when each pipeline last evaluated its tenant
(its usage rows, its consumer groups' lag) and how the pipeline's latest run went; for an
operator, also every run (status, trigger, duration, rows written, errors).

A run covers every tenant at once, so its row counts and errors are figures of all tenants
together: members never see them, only their own tenant's evaluation times.
"""

from __future__ import annotations

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.accounts.facade import Actor, is_operator
from webapp.dashboard.tenancy import member_or_operator_page, page_context
from webapp.metering import facade
from webapp.metering.facade import Pipeline, RunStatus

RUNS_PER_PAGE = 50


@member_or_operator_page
def pipeline_runs(request: HttpRequest) -> HttpResponse:
    actor = getattr(request, "actor", None)
    statuses = facade.tenant_pipeline_statuses(actor.tenant) if isinstance(actor, Actor) else []
    values = {"statuses_of_tenant": statuses, "scheduled": settings.WEIR_PIPELINES_ENABLED, "operator": is_operator(request.user)}
    if values["operator"]:
        values.update(_runs(request))
    return render(request, "dashboard/pipelines/list.html", page_context(request, "pipelines", **values))


def _runs(request: HttpRequest) -> dict[str, object]:
    """The operator's part of the page: every run, filtered and paginated."""
    pipeline = request.GET.get("pipeline", "")
    pipeline = pipeline if pipeline in Pipeline.values else ""
    status = request.GET.get("status", "")
    status = status if status in RunStatus.values else ""
    runs = facade.pipeline_runs(pipeline or None, status or None)
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    intervals = {Pipeline.USAGE: settings.WEIR_USAGE_PIPELINE_INTERVAL_SECONDS, Pipeline.LAG: facade.lag_interval_seconds()}
    summaries = [{"pipeline": name, "interval_seconds": intervals[name], "last_succeeded": facade.last_succeeded_run(name)} for name in Pipeline.values]
    return {
        "page": page,
        "pipeline": pipeline,
        "pipelines": Pipeline.values,
        "status": status,
        "statuses": RunStatus.values,
        "summaries": summaries,
        "show_errors": True,
    }
