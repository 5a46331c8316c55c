"""Tenant actions (owners): rename, change plan."""

from __future__ import annotations

from django.db import transaction

from webapp.accounts.errors import InvalidInput, StateConflict
from webapp.accounts.identity import Actor
from webapp.accounts.models import PLAN_LIMITS, Plan, Role, Tenant
from webapp.accounts.roles import require_role
from webapp.accounts.tenant_hooks import plan_fit_problems
from webapp.audit.facade import record_event
from webapp.common.changes import JobKind, RecordedChange, record_change

MAX_NAME_LENGTH = 100


def check_update_tenant(actor: Actor, name: str | None, plan: str | None) -> None:
    require_role(actor, Role.OWNER, "change the tenant")
    errors: dict[str, object] = {}
    if name is not None and not (name.strip() and len(name) <= MAX_NAME_LENGTH):
        errors["name"] = [f"1 to {MAX_NAME_LENGTH} characters."]
    if plan is not None and plan not in Plan.values:
        errors["plan"] = [f"One of {', '.join(Plan.values)}."]
    if errors:
        raise InvalidInput(errors)


def do_update_tenant(actor: Actor, name: str | None, plan: str | None, request_id: str = "") -> tuple[Tenant, RecordedChange | None]:
    """Apply the changes; a plan change must fit what the tenant holds (a downgrade with too
    many topics or partitions, or quotas above the new plan, is refused) and records
    SYNC_SECURITY because the default quotas change with it."""
    with transaction.atomic():
        tenant = Tenant.objects.select_for_update().get(pk=actor.tenant.pk)
        job = None
        if name is not None:
            tenant.name = name.strip()
        if plan is not None and plan != tenant.plan:
            limits = PLAN_LIMITS[plan]
            # Catalog's checks (webapp.catalog.limits.plan_fit_problems): topics, partitions, quotas.
            problems = plan_fit_problems(tenant, plan, limits)
            if problems:
                reasons = " ".join(message for messages in problems.values() for message in messages)
                raise StateConflict.for_field("plan", f"The tenant holds more than the {plan} plan allows: {reasons}")
            tenant.plan = plan
            job = record_change(tenant, JobKind.SYNC_SECURITY, "plan", created_by=actor.user, request_id=request_id)
        tenant.save(update_fields=["name", "plan"])
        record_event(actor, "tenant.update", tenant.public_id, {field: value for field, value in {"name": name, "plan": plan}.items() if value is not None})
    return tenant, job
