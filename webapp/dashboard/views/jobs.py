"""Provisioning jobs: the tenant's list, and one job's page that refreshes until it finishes."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.accounts.facade import is_operator
from webapp.dashboard.tenancy import page_context, tenant_page
from webapp.provisioning.facade import JobState, ProvisioningJob

JOBS_PER_PAGE = 50
# Seconds between reloads of an unfinished job's page (a meta refresh: works without JS).
REFRESH_SECONDS = 1
UNFINISHED_STATES = (JobState.PENDING, JobState.RUNNING)


def visible_jobs(request: HttpRequest, everything: bool = False):  # type: ignore[no-untyped-def]
    """Jobs of the current tenant; every job (system ones included) for an operator asking."""
    jobs = ProvisioningJob.objects.select_related("tenant", "created_by")
    if everything and is_operator(request.user):
        return jobs
    return jobs.filter(tenant=request.actor.tenant)  # type: ignore[attr-defined]


@tenant_page()
def job_list(request: HttpRequest) -> HttpResponse:
    everything = request.GET.get("scope") == "all" and is_operator(request.user)
    jobs = visible_jobs(request, everything).order_by("-created_at", "-pk")
    state = request.GET.get("state", "")
    if state in JobState.values:
        jobs = jobs.filter(state=state)
    page = Paginator(jobs, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "dashboard/jobs/list.html",
        page_context(request, "jobs", page=page, state=state, states=JobState.values, everything=everything, can_see_all=is_operator(request.user)),
    )


@tenant_page()
def job_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    job = visible_jobs(request, everything=True).filter(public_id=public_id).first()
    if job is None:
        raise Http404("No such job.")
    unfinished = job.state in UNFINISHED_STATES
    return render(request, "dashboard/jobs/detail.html", page_context(request, "jobs", job=job, unfinished=unfinished, refresh_seconds=REFRESH_SECONDS))


def job_in_progress(request: HttpRequest, public_id: str | None) -> ProvisioningJob | None:
    """The current tenant's job ``public_id`` for showing inline after a change; None when
    absent or not the tenant's (a page never fails because of a stale ``?job=``)."""
    if not public_id:
        return None
    return ProvisioningJob.objects.filter(tenant=request.actor.tenant, public_id=public_id).first()  # type: ignore[attr-defined]
