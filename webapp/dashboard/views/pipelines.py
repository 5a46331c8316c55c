"""The metering pipelines' runs: when each pipeline last succeeded, how often it runs, and
its recent runs (status, trigger, duration, rows written).

Runs belong to the whole service, so every member and every operator (with or without a
tenant) sees them; a failed run's error (the job's stderr, which may name any tenant's topics
and groups) is shown to operators only.
"""

from __future__ import annotations

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.accounts.identity import is_operator
from webapp.dashboard.tenancy import member_or_operator_page, page_context
from webapp.metering import facade
from webapp.metering.models import Pipeline, RunStatus

RUNS_PER_PAGE = 50


@member_or_operator_page
def pipeline_runs(request: HttpRequest) -> HttpResponse:
    pipeline = request.GET.get("pipeline", "")
    pipeline = pipeline if pipeline in Pipeline.values else ""
    status = request.GET.get("status", "")
    status = status if status in RunStatus.values else ""
    runs = facade.pipeline_runs(pipeline or None, status or None)
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    intervals = {Pipeline.USAGE: settings.WEIR_USAGE_PIPELINE_INTERVAL_SECONDS, Pipeline.LAG: settings.WEIR_LAG_PIPELINE_INTERVAL_SECONDS}
    summaries = [{"pipeline": name, "interval_seconds": intervals[name], "last_succeeded": facade.last_succeeded_run(name)} for name in Pipeline.values]
    context = page_context(
        request,
        "pipelines",
        page=page,
        pipeline=pipeline,
        pipelines=Pipeline.values,
        status=status,
        statuses=RunStatus.values,
        summaries=summaries,
        scheduled=settings.WEIR_PIPELINES_ENABLED,
        show_errors=is_operator(request.user),
    )
    return render(request, "dashboard/pipelines/list.html", context)
