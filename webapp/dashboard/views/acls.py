"""ACL bindings of the tenant: list (with filters), create, delete one binding (admins)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from webapp.accounts.facade import Membership, Role, ServiceAccount, role_at_least
from webapp.catalog.facade import (
    AclBinding,
    AclFilter,
    ResourceType,
    check_access_question,
    check_acl_template,
    check_create_acl,
    describe_binding,
    do_apply_acl_template,
    do_create_acl,
    do_delete_acls,
    explain_access,
)
from webapp.dashboard.action_calls import call_action
from webapp.dashboard.consequences import acl_deletion_consequences
from webapp.dashboard.forms.acls import AclCreateForm, AclExplainForm, AclTemplateForm
from webapp.dashboard.forms.confirmation import ExplicitConfirmationForm
from webapp.dashboard.tenancy import page_context, tenant_page
from webapp.dashboard.views.jobs import job_in_progress


def principal_labels(tenant) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """``User:<id>`` -> a readable label for every service account and member (two queries)."""
    labels = {account.principal: f"{account.name} ({account.public_id})" for account in ServiceAccount.objects.filter(tenant=tenant).order_by("name")}
    for membership in Membership.objects.filter(tenant=tenant).select_related("user").order_by("user__username"):
        labels[membership.principal] = f"{membership.user.get_username()} ({membership.public_id})"
    labels["User:*"] = "everyone"
    return labels


@tenant_page()
def acl_list(request: HttpRequest) -> HttpResponse:
    tenant = request.actor.tenant  # type: ignore[attr-defined]
    bindings = AclBinding.objects.filter(tenant=tenant)
    resource_type = request.GET.get("resource_type", "")
    if resource_type in ResourceType.values:
        bindings = bindings.filter(resource_type=resource_type)
    query = request.GET.get("q", "").strip()
    if query:
        bindings = bindings.filter(Q(resource_name__icontains=query) | Q(principal__icontains=query))
    labels = principal_labels(tenant)
    rows = [(binding, labels.get(binding.principal, "")) for binding in bindings]
    context = page_context(
        request,
        "acls",
        rows=rows,
        query=query,
        resource_type=resource_type,
        resource_types=ResourceType.values,
        can_manage=role_at_least(request.actor.role, Role.ADMIN),  # type: ignore[attr-defined]
        job=job_in_progress(request, request.GET.get("job")),
    )
    return render(request, "dashboard/acls/list.html", context)


@tenant_page(Role.ADMIN)
def acl_create(request: HttpRequest) -> HttpResponse:
    actor = request.actor  # type: ignore[attr-defined]
    labels = principal_labels(actor.tenant)
    principals = [(principal, label) for principal, label in labels.items() if principal != "User:*"]
    initial = {"principal": request.GET.get("principal", ""), "resource_name": request.GET.get("resource_name", "")}
    form = AclCreateForm(request.POST or None, principals=principals, initial=initial)
    if request.method == "POST" and form.is_valid():
        checked = call_action(form, check_create_acl, actor, **form.cleaned_data)
        if checked.ok:
            created = call_action(form, do_create_acl, actor, checked.value)
            if created.ok:
                _, job = created.value  # type: ignore[misc]
                return redirect(f"{reverse('dashboard:acls')}?job={job.public_id}")
    return render(request, "dashboard/acls/create.html", page_context(request, "acls", form=form))


def _principal_choices(tenant) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [(principal, label) for principal, label in principal_labels(tenant).items() if principal != "User:*"]


@tenant_page(Role.ADMIN)
def acl_template(request: HttpRequest) -> HttpResponse:
    """A producer's, consumer's or transactional producer's bindings in one step."""
    actor = request.actor  # type: ignore[attr-defined]
    form = AclTemplateForm(request.POST or None, principals=_principal_choices(actor.tenant), initial={"principal": request.GET.get("principal", "")})
    if request.method == "POST" and form.is_valid():
        checked = call_action(form, check_acl_template, actor, **form.cleaned_data)
        if checked.ok:
            result = call_action(form, do_apply_acl_template, actor, form.cleaned_data["template"], checked.value)
            if result.ok:
                applied = result.value
                assert applied is not None
                existing = f"; {len(applied.existing)} already existed" if applied.existing else ""
                messages.success(request, f"{len(applied.created)} ACL binding(s) created{existing}.")
                if applied.job is not None:
                    return redirect(f"{reverse('dashboard:acls')}?job={applied.job.public_id}")
                return redirect("dashboard:acls")
    return render(request, "dashboard/acls/template.html", page_context(request, "acls", form=form))


@tenant_page()
def acl_explain(request: HttpRequest) -> HttpResponse:
    """Can principal P do operation O on resource R, and which binding decides (every member may ask)."""
    actor = request.actor  # type: ignore[attr-defined]
    asked = "principal" in request.GET
    form = AclExplainForm(request.GET if asked else None, principals=_principal_choices(actor.tenant))
    explanation = None
    if asked and form.is_valid():
        question = call_action(form, check_access_question, **form.cleaned_data)
        if question.ok:
            explanation = explain_access(actor, question.value)
    status = 400 if asked and form.errors else 200
    return render(
        request,
        "dashboard/acls/explain.html",
        page_context(
            request,
            "acls",
            form=form,
            explanation=explanation,
            can_manage=role_at_least(actor.role, Role.ADMIN),
        ),
        status=status,
    )


@tenant_page(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def acl_delete(request: HttpRequest, public_id: str) -> HttpResponse:
    """GET (or a POST without the confirmation): what stops working; the confirmed POST deletes."""
    actor = request.actor  # type: ignore[attr-defined]
    binding = get_object_or_404(AclBinding, tenant=actor.tenant, public_id=public_id)
    form = ExplicitConfirmationForm(request.POST if "confirm" in request.POST else None, expected=binding.public_id)
    if request.method != "POST" or not form.is_valid():
        return render(
            request,
            "dashboard/confirm.html",
            page_context(
                request,
                "acls",
                title="Delete ACL binding",
                question="Delete this ACL binding?",
                facts=[("Principal", binding.principal), ("Binding", describe_binding(binding))],
                consequences=acl_deletion_consequences(binding),
                form=form,
                action=reverse("dashboard:acl_delete", args=[binding.public_id]),
                button="Delete binding",
                cancel_url=reverse("dashboard:acls"),
            ),
        )
    # An exact filter on every field matches this binding alone (the fields are unique together).
    exact = AclFilter(
        resource_type=binding.resource_type,
        resource_name=binding.resource_name,
        pattern_type=binding.pattern_type,
        principal=binding.principal,
        host=binding.host,
        operation=binding.operation,
        permission=binding.permission,
    )
    # The action raises no input errors for an exact filter; a role refusal becomes 403.
    deleted = call_action(forms.Form(), do_delete_acls, actor, exact)
    _, job = deleted.value  # type: ignore[misc]
    if job is None:
        return redirect("dashboard:acls")
    return redirect(f"{reverse('dashboard:acls')}?job={job.public_id}")
