"""Members and invitations: everyone sees the list; admins invite (not owners); owners change
roles and remove members."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods, require_POST

from webapp.accounts.facade import Invitation, Membership, Role, check_change_role, check_invite, do_change_role, do_invite, do_remove_member, role_at_least
from webapp.dashboard.action_calls import call_action
from webapp.dashboard.consequences import member_removal_consequences
from webapp.dashboard.forms.confirmation import ExplicitConfirmationForm
from webapp.dashboard.forms.members import InviteForm, RoleForm
from webapp.dashboard.tenancy import page_context, tenant_page


def members_context(request: HttpRequest, **values: object) -> dict[str, object]:
    actor = request.actor  # type: ignore[attr-defined]
    memberships = Membership.objects.filter(tenant=actor.tenant).select_related("user").order_by("user__username")
    invitations = (
        Invitation.objects.filter(tenant=actor.tenant, accepted_at__isnull=True, expires_at__gt=timezone.now())
        .select_related("invited_by")
        .order_by("-created_at")
    )
    return page_context(
        request,
        "members",
        memberships=list(memberships),
        invitations=list(invitations),
        roles=Role.choices,
        can_invite=role_at_least(actor.role, Role.ADMIN),
        can_manage=role_at_least(actor.role, Role.OWNER),
        **values,
    )


@tenant_page()
def member_list(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/members/list.html", members_context(request, invite_form=InviteForm()))


@tenant_page(Role.ADMIN)
def member_invite(request: HttpRequest) -> HttpResponse:
    actor = request.actor  # type: ignore[attr-defined]
    form = InviteForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        if call_action(form, check_invite, actor, data["email"], data["role"]).ok:
            invited = call_action(form, do_invite, actor, data["email"], data["role"])
            if invited.ok:
                link = request.build_absolute_uri(reverse("dashboard:accept_invitation", args=[invited.value.token]))  # type: ignore[union-attr]
                # The token is shown once, here; only its hash is stored.
                response = render(request, "dashboard/members/invited.html", members_context(request, invitation=invited.value.invitation, link=link))  # type: ignore[union-attr]
                add_never_cache_headers(response)
                return response
    return render(request, "dashboard/members/list.html", members_context(request, invite_form=form))


@tenant_page(Role.OWNER)
@require_POST
def member_change_role(request: HttpRequest, public_id: str) -> HttpResponse:
    actor = request.actor  # type: ignore[attr-defined]
    membership = get_object_or_404(Membership.objects.select_related("user"), tenant=actor.tenant, public_id=public_id)
    form = RoleForm(request.POST)
    if form.is_valid():
        role = form.cleaned_data["role"]
        changed = call_action(form, do_change_role, actor, membership, role) if call_action(form, check_change_role, actor, membership, role).ok else None
        if changed is not None and changed.ok:
            _, job = changed.value  # type: ignore[misc]
            messages.success(request, f"{membership.user.get_username()} is now {role}.")
            if job is not None:
                # Across the admin line: the member's cluster keys become, or stop being, the
                # cluster administrator once the brokers have the job's snapshot.
                return redirect("dashboard:job", job.public_id)
            return redirect("dashboard:members")
    for error in form.errors.get("__all__", []) + form.errors.get("role", []):
        messages.error(request, error)
    return redirect("dashboard:members")


@tenant_page(Role.OWNER)
@require_http_methods(["GET", "POST"])
def member_remove(request: HttpRequest, public_id: str) -> HttpResponse:
    """GET (or a POST without the confirmation): what the member loses; the confirmed POST removes."""
    actor = request.actor  # type: ignore[attr-defined]
    membership = get_object_or_404(Membership.objects.select_related("user"), tenant=actor.tenant, public_id=public_id)
    confirmation = ExplicitConfirmationForm(request.POST if "confirm" in request.POST else None, expected=membership.public_id)
    if request.method != "POST" or not confirmation.is_valid():
        context = page_context(
            request,
            "members",
            title=f"Remove {membership.user.get_username()}",
            question=f"Remove {membership.user.get_username()} ({membership.role}) from {actor.tenant.name}?",
            facts=[("Member", membership.principal), ("E-mail", membership.user.email or "—")],
            consequences=member_removal_consequences(membership),
            form=confirmation,
            action=reverse("dashboard:member_remove", args=[membership.public_id]),
            button="Remove member",
            cancel_url=reverse("dashboard:members"),
        )
        return render(request, "dashboard/confirm.html", context)
    form = RoleForm()
    removed = call_action(form, do_remove_member, actor, membership)
    if not removed.ok:
        for error in form.errors.get("__all__", []) + form.errors.get("role", []):
            messages.error(request, error)
        return redirect("dashboard:members")
    messages.success(request, f"{membership.user.get_username()} is no longer a member.")
    if removed.value is not None:
        return redirect("dashboard:job", removed.value.public_id)
    return redirect("dashboard:members")
