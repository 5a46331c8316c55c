"""Quota actions: a tenant's byte-rate quotas, within its plan."""

from __future__ import annotations

from django.db import transaction

from webapp.accounts.facade import Actor, InvalidInput, Role, StateConflict, require_role
from webapp.audit.facade import record_event
from webapp.catalog.models import Quota
from webapp.common.changes import JobKind, RecordedChange, record_change

QUOTA_TARGET = "quota"  # the job target of quota changes


def tenant_quota(actor: Actor) -> Quota:
    """The tenant's quota row (created with plan defaults if sign-up predates quotas)."""
    quota, _ = Quota.objects.select_related("tenant").get_or_create(tenant=actor.tenant)
    return quota


def check_set_quota(actor: Actor, produce_bytes_per_second: int | None, consume_bytes_per_second: int | None) -> None:
    """Each rate is None (the plan's default) or 1 .. the plan's rate. Below 1 is invalid
    input; above the plan's rate a conflict with the tenant's plan (a higher plan allows it)."""
    require_role(actor, Role.ADMIN, "change quotas")
    limits = actor.tenant.limits
    errors: dict[str, object] = {}
    above_plan = False
    for field, value, maximum in (
        ("produce_bytes_per_second", produce_bytes_per_second, limits.produce_bytes_per_second),
        ("consume_bytes_per_second", consume_bytes_per_second, limits.consume_bytes_per_second),
    ):
        if value is not None and not 1 <= value <= maximum:
            errors[field] = [f"Between 1 and {maximum} (the {actor.tenant.plan} plan's rate), or null for the plan's rate."]
            above_plan = above_plan or value > maximum
    if errors:
        raise (
            StateConflict(errors)
            if above_plan and all(value is None or value >= 1 for value in (produce_bytes_per_second, consume_bytes_per_second))
            else InvalidInput(errors)
        )


def do_set_quota(
    actor: Actor, produce_bytes_per_second: int | None, consume_bytes_per_second: int | None, request_id: str = ""
) -> tuple[Quota, RecordedChange]:
    with transaction.atomic():
        quota, _ = Quota.objects.select_for_update().get_or_create(tenant=actor.tenant)
        quota.produce_bytes_per_second = produce_bytes_per_second
        quota.consume_bytes_per_second = consume_bytes_per_second
        quota.save(update_fields=["produce_bytes_per_second", "consume_bytes_per_second", "updated_at"])
        job = record_change(actor.tenant, JobKind.SYNC_SECURITY, QUOTA_TARGET, created_by=actor.user, request_id=request_id)
        record_event(
            actor,
            "quota.set",
            QUOTA_TARGET,
            {"produce_bytes_per_second": produce_bytes_per_second, "consume_bytes_per_second": consume_bytes_per_second},
        )
    quota.tenant = actor.tenant
    return quota, job
