"""Consumer group pages: the list (state, members, total lag, the lag pipeline's status), a
group's members, per-partition lag and the lag pipeline's evaluation with its lag over time
(``webapp.dashboard.lag_panels``, read from the database), resetting its offsets (a preview
first, then a confirmation that applies exactly the previewed offsets), and deletion with a
typed confirmation.

Groups live on the brokers: every page asks them through ``webapp.consumer_groups`` as the
current tenant, so another tenant's group is not found (404). When the brokers cannot be
reached the page says so (HTTP 503), never a 500. Viewers read; developers reset and delete.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from webapp.accounts.facade import Conflict, InvalidInput, NotFound, Role, role_at_least
from webapp.catalog.facade import Topic
from webapp.consumer_groups import BrokerError, get_group_lag, list_groups, plan_reset
from webapp.dashboard.action_calls import add_field_errors
from webapp.dashboard.forms.confirmation import ExplicitConfirmationForm, TypedConfirmationForm
from webapp.dashboard.forms.groups import ConfirmResetForm, ResetOffsetsForm
from webapp.dashboard.lag_panels import group_lag_panel, group_statuses, lag_trend
from webapp.dashboard.tenancy import page_context, tenant_page
from webapp.group_changes import apply_recorded_reset, delete_recorded_group, undo_last_reset, undo_plan

SECTION = "groups"


def _tenant_id(request: HttpRequest) -> str:
    return request.actor.tenant.public_id  # type: ignore[attr-defined]


def _can_change(request: HttpRequest) -> bool:
    return role_at_least(request.actor.role, Role.DEVELOPER)  # type: ignore[attr-defined]


def _unavailable(request: HttpRequest, template: str, error: BrokerError, **values: object) -> HttpResponse:
    return render(request, template, page_context(request, SECTION, error=error.message, **values), status=503)


@tenant_page()
def group_list(request: HttpRequest) -> HttpResponse:
    try:
        overviews = list_groups(_tenant_id(request), with_lag=True)
    except BrokerError as error:
        return _unavailable(request, "dashboard/groups/list.html", error, rows=[])
    statuses = group_statuses(request.actor.tenant)  # type: ignore[attr-defined]
    rows = [(overview, statuses.get(overview.group.group_id), lag_trend(statuses.get(overview.group.group_id))) for overview in overviews]
    return render(request, "dashboard/groups/list.html", page_context(request, SECTION, rows=rows))


@tenant_page()
def group_detail(request: HttpRequest, group_id: str) -> HttpResponse:
    values: dict[str, object] = {"group_id": group_id, "can_change": _can_change(request)}
    values.update(group_lag_panel(request.actor.tenant, group_id, request.GET.get("lag_window"), timezone.now()))  # type: ignore[attr-defined]
    try:
        group, lag = get_group_lag(_tenant_id(request), group_id)
    except NotFound as error:
        raise Http404(error.message) from error
    except BrokerError as error:
        return _unavailable(request, "dashboard/groups/detail.html", error, **values)
    topics = sorted({row.topic for row in lag.partitions})
    if group is None or not group.members:
        values["undo"] = undo_plan(request.actor.tenant, group_id)  # type: ignore[attr-defined]
    reset_url = f"{reverse('dashboard:group_reset_offsets', args=[group_id])}?{urlencode([('topic', topic) for topic in topics])}"
    return render(request, "dashboard/groups/detail.html", page_context(request, SECTION, group=group, lag=lag, reset_url=reset_url, **values))


@tenant_page(Role.DEVELOPER)
def group_reset_offsets(request: HttpRequest, group_id: str) -> HttpResponse:
    """GET: the form. POST without ``plan``: the preview (nothing written) with a confirm
    form. POST with ``plan``: apply exactly that plan, then back to the group."""
    tenant_id = _tenant_id(request)
    topic_names = list(Topic.objects.filter(tenant=request.actor.tenant).order_by("name").values_list("name", flat=True))  # type: ignore[attr-defined]
    values: dict[str, object] = {"group_id": group_id, "preview": None, "confirm": None, "apply_errors": []}
    if request.method == "POST" and "plan" in request.POST:
        confirm = ConfirmResetForm(request.POST)
        if confirm.is_valid():
            try:
                outcome = apply_recorded_reset(request.actor, group_id, confirm.reset_request())  # type: ignore[attr-defined]
            except (Conflict, InvalidInput, BrokerError) as error:
                values["apply_errors"] = [error.message]
            else:
                count = len(outcome.changes)
                messages.success(request, f"Reset the offsets of group {group_id} on {count} partition{'s' if count != 1 else ''}.")
                return redirect("dashboard:group", group_id)
        else:
            values["apply_errors"] = [message for messages_of_field in confirm.errors.values() for message in messages_of_field]
        return render(request, "dashboard/groups/reset.html", page_context(request, SECTION, form=ResetOffsetsForm(topic_names=topic_names), **values))
    form = ResetOffsetsForm(
        request.POST or None, topic_names=topic_names, initial={"topics": [name for name in request.GET.getlist("topic") if name in topic_names]}
    )
    if request.method == "POST" and form.is_valid():
        try:
            preview = plan_reset(tenant_id, group_id, form.reset_request())
        except InvalidInput as error:
            add_field_errors(form, error.errors, {})
        except BrokerError as error:
            form.add_error(None, error.message)
        else:
            values["preview"] = preview
            values["confirm"] = ConfirmResetForm(initial={"plan": ConfirmResetForm.encode(preview.changes)})
    return render(request, "dashboard/groups/reset.html", page_context(request, SECTION, form=form, **values))


@tenant_page(Role.DEVELOPER)
def group_undo_reset(request: HttpRequest, group_id: str) -> HttpResponse:
    """GET: the offsets the undo writes back; the confirmed POST writes them (``webapp.group_changes``)."""
    plan = undo_plan(request.actor.tenant, group_id)  # type: ignore[attr-defined]
    if plan is None:
        messages.info(request, f"Consumer group {group_id} has no offset reset to undo.")
        return redirect("dashboard:group", group_id)
    form = ExplicitConfirmationForm(request.POST if "confirm" in request.POST else None, expected=plan.event_id)
    errors: list[str] = []
    if request.method == "POST" and form.is_valid():
        try:
            outcome = undo_last_reset(request.actor, group_id)  # type: ignore[attr-defined]
        except (Conflict, NotFound, InvalidInput, BrokerError) as error:
            errors.append(error.message)
        else:
            count = len(outcome.changes)
            messages.success(request, f"Undid the last reset of group {group_id}: {count} partition{'s' if count != 1 else ''} back where they were.")
            return redirect("dashboard:group", group_id)
    context = page_context(
        request,
        SECTION,
        group_id=group_id,
        plan=plan,
        rows=[(topic, partition, plan.expected.get((topic, partition)), offset) for (topic, partition), offset in sorted(plan.restore.items())],
        form=form,
        apply_errors=errors,
    )
    return render(request, "dashboard/groups/undo_reset.html", context, status=409 if errors else 200)


@tenant_page(Role.DEVELOPER)
def group_delete(request: HttpRequest, group_id: str) -> HttpResponse:
    form = TypedConfirmationForm(request.POST or None, expected=group_id, what="group's id")
    if request.method == "POST" and form.is_valid():
        try:
            delete_recorded_group(request.actor, group_id)  # type: ignore[attr-defined]
        except NotFound as error:
            raise Http404(error.message) from error
        except (Conflict, BrokerError) as error:
            form.add_error(None, error.message)
        else:
            messages.success(request, f"Deleted consumer group {group_id} and its committed offsets.")
            return redirect("dashboard:groups")
    return render(request, "dashboard/groups/delete.html", page_context(request, SECTION, group_id=group_id, form=form))
