"""The Schemas page: the tenant's registry in the dashboard (issue 16).

Subjects, a subject's versions and compatibility level, one version's schema (pretty-printed,
its references linked), a diff of two versions, registering a version (the compatibility check's
reasons shown on refusal), changing the level and soft-deleting a version (each confirmed).
Everyone in the tenant reads; changes need developer, the REST API's rule. Every look-up goes
through ``webapp.schemas.facade`` with the signed-in tenant: another tenant's subject is 404.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from webapp.accounts.facade import Role, role_at_least
from webapp.dashboard.forms.confirmation import ExplicitConfirmationForm
from webapp.dashboard.forms.schemas import CompatibilityForm, DiffForm, RegisterSchemaForm
from webapp.dashboard.tenancy import page_context, tenant_page
from webapp.schemas.facade import (
    IncompatibleSchema,
    RegistryError,
    VersionSummary,
    delete_version,
    effective_settings,
    get_version,
    pretty_schema,
    register,
    schema_diff,
    set_compatibility,
    subject_summaries,
    version_summaries,
)

SECTION = "schemas"


def _versions(request: HttpRequest, subject: str) -> list[VersionSummary]:
    try:
        return version_summaries(request.actor.tenant, subject)  # type: ignore[attr-defined]
    except RegistryError:
        raise Http404(f"No subject {subject!r} in this organisation.") from None


def _can_change(request: HttpRequest) -> bool:
    return role_at_least(request.actor.role, Role.DEVELOPER)  # type: ignore[attr-defined]


@tenant_page()
def schema_list(request: HttpRequest) -> HttpResponse:
    tenant = request.actor.tenant  # type: ignore[attr-defined]
    context = page_context(
        request, SECTION, subjects=subject_summaries(tenant), global_level=effective_settings(tenant, None).compatibility, can_change=_can_change(request)
    )
    return render(request, "dashboard/schemas/list.html", context)


@tenant_page()
def schema_subject(request: HttpRequest, subject: str) -> HttpResponse:
    versions = _versions(request, subject)
    numbers = [row.version for row in versions]
    diff_form = DiffForm(
        request.GET if "old" in request.GET else None, versions=numbers, initial={"old": numbers[max(len(numbers) - 2, 0)], "new": numbers[-1]}
    )
    diff: list[str] | None = None
    if diff_form.is_bound and diff_form.is_valid():
        tenant = request.actor.tenant  # type: ignore[attr-defined]
        old, new = (get_version(tenant, subject, diff_form.cleaned_data[name], deleted=True) for name in ("old", "new"))
        diff = schema_diff(
            f"{subject} v{old.version}",
            pretty_schema(old.schema.schema_type, old.schema.text),
            f"{subject} v{new.version}",
            pretty_schema(new.schema.schema_type, new.schema.text),
        )
    level = effective_settings(request.actor.tenant, subject).compatibility  # type: ignore[attr-defined]
    context = page_context(
        request,
        SECTION,
        subject=subject,
        versions=versions,
        level=level,
        compatibility_form=CompatibilityForm(initial={"level": level}),
        diff_form=diff_form,
        diff=diff,
        can_change=_can_change(request),
    )
    return render(request, "dashboard/schemas/subject.html", context)


def _version_row(request: HttpRequest, subject: str, version: int) -> Any:
    """The subject's version, soft-deleted ones included; 404 for one this tenant does not have."""
    _versions(request, subject)
    try:
        return get_version(request.actor.tenant, subject, version, deleted=True)  # type: ignore[attr-defined]
    except RegistryError:
        raise Http404(f"Subject {subject!r} has no version {version}.") from None


@tenant_page()
def schema_version(request: HttpRequest, subject: str, version: int) -> HttpResponse:
    row = _version_row(request, subject, version)
    references = [(ref.name, ref.subject, ref.version) for ref in row.schema.references.all()]
    context = page_context(
        request,
        SECTION,
        subject=subject,
        row=row,
        schema_id=row.schema.schema_id,
        schema_type=row.schema.schema_type,
        pretty=pretty_schema(row.schema.schema_type, row.schema.text),
        references=references,
        can_change=_can_change(request),
    )
    return render(request, "dashboard/schemas/version.html", context)


@tenant_page(Role.DEVELOPER)
def schema_register(request: HttpRequest) -> HttpResponse:
    form = RegisterSchemaForm(request.POST or None, initial={"subject": request.GET.get("subject", "")})
    reasons: list[str] = []
    if request.method == "POST" and form.is_valid():
        subject = form.cleaned_data["subject"]
        try:
            registration = register(request.actor, subject, form.body())  # type: ignore[attr-defined]
        except IncompatibleSchema as refusal:
            reasons = refusal.reasons
            form.add_error(None, "The schema is not compatible with the subject's earlier versions:")
        except RegistryError as error:
            form.add_error(None, error.message)
        else:
            done = "registered as" if registration.created else "is already"
            messages.success(request, f"The schema {done} version {registration.version} of {subject} (schema id {registration.schema_id}).")
            return redirect("dashboard:schema_version", subject=subject, version=registration.version)
    status = 400 if form.is_bound and not form.is_valid() else 200
    return render(request, "dashboard/schemas/register.html", page_context(request, SECTION, form=form, reasons=reasons), status=status)


@tenant_page(Role.DEVELOPER)
def schema_compatibility(request: HttpRequest, subject: str) -> HttpResponse:
    """POST ``level`` shows the confirmation; POST ``confirm`` (the level) sets it."""
    _versions(request, subject)
    subject_url = reverse("dashboard:schema_subject", args=[subject])
    # The confirmation page sends back only ``confirm``: the level it confirms.
    form = CompatibilityForm({"level": request.POST.get("level") or request.POST.get("confirm")} if request.method == "POST" else None)
    if not form.is_bound or not form.is_valid():
        return redirect(subject_url)
    level = form.cleaned_data["level"]
    confirmation = ExplicitConfirmationForm(request.POST if "confirm" in request.POST else None, expected=level)
    if not confirmation.is_valid():
        current = effective_settings(request.actor.tenant, subject).compatibility  # type: ignore[attr-defined]
        context = page_context(
            request,
            SECTION,
            title=f"Compatibility of {subject}",
            question=f"Change the compatibility level of {subject} from {current} to {level}?",
            facts=[("Subject", subject), ("Now", current), ("New", level)],
            consequences=[
                f"New versions of {subject} are checked under {level} from now on: one it refuses is not registered (409), and a producer whose serializer registers it fails.",
                "Versions already registered stay as they are.",
            ],
            form=confirmation,
            action=reverse("dashboard:schema_compatibility", args=[subject]),
            button=f"Set {level}",
            cancel_url=subject_url,
        )
        return render(request, "dashboard/confirm.html", context)
    try:
        set_compatibility(request.actor, subject, level)  # type: ignore[attr-defined]
    except RegistryError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"The compatibility level of {subject} is {level}.")
    return redirect(subject_url)


@tenant_page(Role.DEVELOPER)
def schema_version_delete(request: HttpRequest, subject: str, version: int) -> HttpResponse:
    row = _version_row(request, subject, version)
    version_url = reverse("dashboard:schema_version", args=[subject, version])
    if row.deleted:
        messages.info(request, f"Version {version} of {subject} is already soft-deleted.")
        return redirect(version_url)
    form = ExplicitConfirmationForm(request.POST if "confirm" in request.POST else None, expected=f"{subject}/{version}")
    if request.method != "POST" or not form.is_valid():
        context = page_context(
            request,
            SECTION,
            title=f"Delete version {version} of {subject}",
            question=f"Soft-delete version {version} of {subject}?",
            facts=[("Subject", subject), ("Version", str(version)), ("Schema id", str(row.schema.schema_id))],
            consequences=[
                "The version is no longer listed, used as latest or checked against new versions.",
                f"Records written with schema id {row.schema.schema_id} stay readable: the id still resolves.",
            ],
            form=form,
            action=reverse("dashboard:schema_version_delete", args=[subject, version]),
            button="Delete version",
            cancel_url=version_url,
        )
        return render(request, "dashboard/confirm.html", context)
    try:
        delete_version(request.actor, subject, version, permanent=False)  # type: ignore[attr-defined]
    except RegistryError as error:
        messages.error(request, error.message)
        return redirect(version_url)
    messages.success(request, f"Version {version} of {subject} is soft-deleted.")
    return redirect("dashboard:schema_subject", subject=subject)
