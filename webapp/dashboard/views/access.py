"""Service accounts and API keys. A new key's secret is rendered once, in the response to
the POST that created it (never stored, never redirected through the session), with
``Cache-Control: no-store`` so the browser does not keep the page either."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods, require_POST

from webapp.accounts.facade import (
    ApiKey,
    ApiKeyApplication,
    KeyAccess,
    Membership,
    Role,
    ServiceAccount,
    check_create_key,
    check_service_account_fields,
    do_create_key,
    do_create_service_account,
    do_delete_scram_user,
    do_delete_service_account,
    do_revoke_key,
    key_access,
    owns,
    role_at_least,
    scram_users,
)
from webapp.dashboard.action_calls import call_action
from webapp.dashboard.consequences import key_revocation_consequences
from webapp.dashboard.forms.access import ApiKeyForm, ServiceAccountForm
from webapp.dashboard.forms.confirmation import ExplicitConfirmationForm
from webapp.dashboard.key_access import key_access_explanation, key_access_summary
from webapp.dashboard.tenancy import page_context, tenant_page
from webapp.dashboard.views.jobs import job_in_progress


def tenant_keys(tenant):  # type: ignore[no-untyped-def]
    """The tenant's keys with their owners, newest first (one query)."""
    return ApiKey.objects.filter(tenant=tenant).select_related("owner_service_account", "owner_membership__user", "created_by").order_by("-created_at", "-pk")


# ------------------------------------------------------------------ service accounts


@tenant_page()
def service_account_list(request: HttpRequest) -> HttpResponse:
    accounts = (
        ServiceAccount.objects.filter(tenant=request.actor.tenant)  # type: ignore[attr-defined]
        .annotate(active_keys=Count("api_keys", filter=Q(api_keys__revoked_at__isnull=True)))
        .order_by("name")
    )
    can_manage = role_at_least(request.actor.role, Role.ADMIN)  # type: ignore[attr-defined]
    return render(request, "dashboard/access/service_accounts.html", page_context(request, "service_accounts", accounts=list(accounts), can_manage=can_manage))


@tenant_page(Role.ADMIN)
def service_account_create(request: HttpRequest) -> HttpResponse:
    actor = request.actor  # type: ignore[attr-defined]
    form = ServiceAccountForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        if call_action(
            form, check_service_account_fields, actor, data["name"], data["description"], data["role"], field_map=ServiceAccountForm.ACTION_FIELDS
        ).ok:
            created = call_action(
                form, do_create_service_account, actor, data["name"], data["description"], data["role"], field_map=ServiceAccountForm.ACTION_FIELDS
            )
            if created.ok:
                messages.success(request, f"Service account {created.value.name} created. Give it ACLs and a cluster key to connect.")  # type: ignore[union-attr]
                return redirect("dashboard:service_account", created.value.public_id)  # type: ignore[union-attr]
    return render(request, "dashboard/access/service_account_create.html", page_context(request, "service_accounts", form=form))


@tenant_page()
def service_account_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    tenant = request.actor.tenant  # type: ignore[attr-defined]
    account = get_object_or_404(ServiceAccount, tenant=tenant, public_id=public_id)
    can_manage = role_at_least(request.actor.role, Role.ADMIN)  # type: ignore[attr-defined]
    rows = [(key, can_manage, key_access_summary(key)) for key in tenant_keys(tenant).filter(owner_service_account=account)]
    context = page_context(request, "service_accounts", account=account, rows=rows, can_manage=can_manage, job=job_in_progress(request, request.GET.get("job")))
    return render(request, "dashboard/access/service_account_detail.html", context)


@tenant_page(Role.ADMIN)
@require_POST
def service_account_delete(request: HttpRequest, public_id: str) -> HttpResponse:
    actor = request.actor  # type: ignore[attr-defined]
    account = get_object_or_404(ServiceAccount, tenant=actor.tenant, public_id=public_id)
    deleted = call_action(forms.Form(), do_delete_service_account, actor, account)
    messages.success(request, f"Service account {account.name} and its keys are deleted.")
    if deleted.value is not None:
        return redirect("dashboard:job", deleted.value.public_id)
    return redirect("dashboard:service_accounts")


# ------------------------------------------------------------------ API keys


def key_owner_choices(request: HttpRequest) -> list[tuple[str, str]]:
    """Owners the caller may create keys for besides itself: every service account and member for admins."""
    actor = request.actor  # type: ignore[attr-defined]
    if not role_at_least(actor.role, Role.ADMIN):
        return []
    choices = [
        (account.public_id, f"Service account {account.name} ({account.public_id})")
        for account in ServiceAccount.objects.filter(tenant=actor.tenant).order_by("name")
    ]
    members = Membership.objects.filter(tenant=actor.tenant).exclude(pk=actor.membership.pk).select_related("user").order_by("user__username")
    choices += [(membership.public_id, f"Member {membership.user.get_username()} ({membership.public_id})") for membership in members]
    return choices


@tenant_page()
def api_key_list(request: HttpRequest) -> HttpResponse:
    actor = request.actor  # type: ignore[attr-defined]
    keys = list(tenant_keys(actor.tenant))
    is_admin = role_at_least(actor.role, Role.ADMIN)
    rows = [(key, is_admin or owns(actor, key), key_access_summary(key)) for key in keys]
    context = page_context(
        request,
        "api_keys",
        rows=rows,
        can_create=role_at_least(actor.role, Role.DEVELOPER),
        job=job_in_progress(request, request.GET.get("job")),
        scram_users=scram_users(actor.tenant),
        can_delete_scram_users=is_admin,
    )
    return render(request, "dashboard/access/api_keys.html", context)


@tenant_page(Role.ADMIN)
@require_POST
def scram_user_delete(request: HttpRequest, name: str) -> HttpResponse:
    """Delete a SCRAM user with every credential it has (another tenant's user, like an unknown one, is 404)."""
    actor = request.actor  # type: ignore[attr-defined]
    deleted = call_action(forms.Form(), do_delete_scram_user, actor, name)
    if not deleted.ok:
        raise Http404(f"No SCRAM user {name!r}.")
    messages.success(request, f"SCRAM user {name} is deleted: its Kafka connections are refused from their next request.")
    return redirect("dashboard:api_keys")


@tenant_page(Role.DEVELOPER)
def api_key_create(request: HttpRequest) -> HttpResponse:
    actor = request.actor  # type: ignore[attr-defined]
    form = ApiKeyForm(request.POST or None, owners=key_owner_choices(request), initial={"owner": request.GET.get("owner", "")})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        owner = call_action(form, check_create_key, actor, data["kind"], form.owner_id(), data["description"])
        if owner.ok:
            created = call_action(form, do_create_key, actor, data["kind"], owner.value, data["description"])
            if created.ok:
                response = render(
                    request, "dashboard/access/api_key_created.html", page_context(request, "api_keys", new_key=created.value, job=created.value.job)
                )  # type: ignore[union-attr]
                add_never_cache_headers(response)
                return response
    return render(request, "dashboard/access/api_key_create.html", page_context(request, "api_keys", form=form))


def key_applications(key: ApiKey) -> list[ApiKeyApplication]:
    """The applications brokers saw using ``key``, most recently seen first (one query; bounded per key)."""
    return list(ApiKeyApplication.objects.filter(api_key=key).order_by("-last_seen_at", "-pk"))


@tenant_page()
def api_key_detail(request: HttpRequest, key_id: str) -> HttpResponse:
    """One key: its facts and the applications brokers saw using it (another tenant's key answers 404)."""
    actor = request.actor  # type: ignore[attr-defined]
    key = get_object_or_404(tenant_keys(actor.tenant), key_id=key_id)
    can_revoke = owns(actor, key) or role_at_least(actor.role, Role.ADMIN)
    context = page_context(
        request,
        "api_keys",
        key=key,
        access=key_access_explanation(key),
        acls_decide=key_access(key) == KeyAccess.ACLS,
        applications=key_applications(key),
        can_revoke=can_revoke and role_at_least(actor.role, Role.DEVELOPER),
    )
    return render(request, "dashboard/access/api_key_detail.html", context)


@tenant_page(Role.DEVELOPER)
@require_http_methods(["GET", "POST"])
def api_key_revoke(request: HttpRequest, key_id: str) -> HttpResponse:
    """GET (or a POST without the confirmation): who uses the key and what stops; the confirmed POST revokes."""
    actor = request.actor  # type: ignore[attr-defined]
    key = get_object_or_404(tenant_keys(actor.tenant), key_id=key_id)
    form = ExplicitConfirmationForm(request.POST if "confirm" in request.POST else None, expected=key.key_id)
    if request.method != "POST" or not form.is_valid():
        if not owns(actor, key) and not role_at_least(actor.role, Role.ADMIN):
            raise PermissionDenied(f"Your role ({actor.role}) may revoke only your own keys.")
        if key.revoked_at is not None:
            messages.info(request, f"Key {key.key_id} is already revoked.")
            return redirect("dashboard:api_keys")
        applications = key_applications(key)
        context = page_context(
            request,
            "api_keys",
            applications_of_key=key,
            applications=applications,
            title=f"Revoke API key {key.key_id}",
            question=f"Revoke the {key.kind} key {key.key_id}?",
            facts=[("Owner", key.principal), ("Description", key.description or "—"), ("Created", f"{key.created_at:%Y-%m-%d %H:%M} UTC")],
            consequences=key_revocation_consequences(key, applications),
            form=form,
            action=reverse("dashboard:api_key_revoke", args=[key.key_id]),
            button="Revoke key",
            cancel_url=reverse("dashboard:api_keys"),
        )
        return render(request, "dashboard/confirm.html", context)
    revoked = call_action(forms.Form(), do_revoke_key, actor, key)
    _, job = revoked.value  # type: ignore[misc]
    messages.success(request, f"Key {key.key_id} is revoked.")
    if job is not None:
        return redirect(f"{reverse('dashboard:api_keys')}?job={job.public_id}")
    return redirect("dashboard:api_keys")
