"""Signing up, choosing the current tenant, and accepting an invitation."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.accounts.facade import NotFound, check_accept_invitation, check_new_user, check_sign_up, create_user, do_accept_invitation, do_sign_up
from webapp.dashboard.action_calls import call_action
from webapp.dashboard.forms.accounts import NewUserForm, SignUpForm
from webapp.dashboard.tenancy import remember_tenant, user_memberships

# Django authenticates the freshly created user without a password round trip.
MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


def sign_up(request: HttpRequest) -> HttpResponse:
    """Create an organisation and its owner, then sign the owner in."""
    if request.user.is_authenticated:
        return redirect("dashboard:overview")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        credentials = (data["username"], data["email"], data["password"], data["organisation"])
        if call_action(form, check_sign_up, *credentials, field_map=SignUpForm.ACTION_FIELDS).ok:
            created = call_action(form, do_sign_up, *credentials, field_map=SignUpForm.ACTION_FIELDS)
            if created.ok:
                login(request, created.value.user, backend=MODEL_BACKEND)  # type: ignore[union-attr]
                remember_tenant(request, created.value.tenant.public_id)  # type: ignore[union-attr]
                messages.success(request, f"Welcome to Weir: {created.value.tenant.name} is ready.")  # type: ignore[union-attr]
                return redirect("dashboard:overview")
    return render(request, "dashboard/sign_up.html", {"form": form})


@login_required
def no_tenant(request: HttpRequest) -> HttpResponse:
    """A signed-in user without any membership (removed, or an operator)."""
    if user_memberships(request.user):
        return redirect("dashboard:overview")
    return render(request, "dashboard/no_tenant.html", {})


@login_required
@require_POST
def switch_tenant(request: HttpRequest) -> HttpResponse:
    chosen = request.POST.get("tenant", "")
    membership = next((membership for membership in user_memberships(request.user) if membership.tenant.public_id == chosen), None)
    if membership is None:
        raise Http404("No such organisation among yours.")
    remember_tenant(request, membership.tenant.public_id)
    return redirect("dashboard:overview")


def accept_invitation(request: HttpRequest, token: str) -> HttpResponse:
    """Signed in: accept into the current user. Anonymous: sign in first, or create a user."""
    try:
        invitation = check_accept_invitation(token)
    except NotFound as error:
        raise Http404(error.message) from error
    form = NewUserForm(request.POST or None, initial={"email": invitation.email})
    if request.method == "POST":
        user = request.user if request.user.is_authenticated else None
        if user is None and form.is_valid():
            data = form.cleaned_data
            if call_action(form, check_new_user, data["username"], data["email"], data["password"]).ok:
                created = call_action(form, create_user, data["username"], data["email"], data["password"])
                if created.ok:
                    user = created.value
                    login(request, user, backend=MODEL_BACKEND)  # type: ignore[arg-type]
        if user is not None:
            accepted = call_action(form, do_accept_invitation, invitation, user)
            if accepted.ok:
                remember_tenant(request, invitation.tenant.public_id)
                messages.success(request, f"You joined {invitation.tenant.name} as {invitation.role}.")
                return redirect("dashboard:overview")
    return render(request, "dashboard/accept_invitation.html", {"invitation": invitation, "form": form})
