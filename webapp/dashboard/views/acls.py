"""ACL bindings of the tenant: list (with filters), create, delete one binding (admins)."""

from __future__ import annotations

from django import forms
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from webapp.accounts.facade import Membership, Role, ServiceAccount, role_at_least
from webapp.catalog.facade import AclBinding, AclFilter, ResourceType, check_create_acl, do_create_acl, do_delete_acls
from webapp.dashboard.action_calls import call_action
from webapp.dashboard.forms.acls import AclCreateForm
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


@tenant_page(Role.ADMIN)
@require_POST
def acl_delete(request: HttpRequest, public_id: str) -> HttpResponse:
    actor = request.actor  # type: ignore[attr-defined]
    binding = get_object_or_404(AclBinding, tenant=actor.tenant, public_id=public_id)
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
