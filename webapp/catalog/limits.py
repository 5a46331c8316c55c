"""Plan limits on a tenant's topics, partitions and quotas, checked under the tenant's row lock.

``create_quota_row`` and ``plan_fit_problems`` are registered with ``webapp.accounts.tenant_hooks``
(``CatalogConfig.ready``): signing up and changing plan, accounts actions, run them."""

from __future__ import annotations

from django.db.models import Count, Sum

from webapp.accounts.facade import InvalidInput, PlanLimits, Tenant
from webapp.catalog.models import Quota, Topic


def tenant_usage(tenant: Tenant) -> tuple[int, int]:
    """(topics, partitions summed over topics) the tenant has now."""
    totals = Topic.objects.filter(tenant=tenant).aggregate(topics=Count("pk"), partitions=Sum("partition_count"))
    return totals["topics"], totals["partitions"] or 0


def usage_problems(limits: PlanLimits, topics: int, partitions: int) -> dict[str, list[str]]:
    """Field errors for a tenant that would hold ``topics`` topics and ``partitions`` partitions."""
    problems: dict[str, list[str]] = {}
    if topics > limits.max_topics:
        problems["topic_name"] = [f"The plan allows {limits.max_topics} topics; the tenant would have {topics}."]
    if partitions > limits.max_partitions:
        problems["partitions_count"] = [f"The plan allows {limits.max_partitions} partitions in all; the tenant would have {partitions}."]
    return problems


def check_growth_fits_plan(locked_tenant: Tenant, new_topics: int, new_partitions: int) -> None:
    """Raise InvalidInput when adding ``new_topics`` topics and ``new_partitions`` partitions
    would exceed the plan. Precondition: the tenant row is locked (``select_for_update``) in
    the current transaction, so that two concurrent creations cannot both pass."""
    topics, partitions = tenant_usage(locked_tenant)
    problems = usage_problems(locked_tenant.limits, topics + new_topics, partitions + new_partitions)
    if problems:
        raise InvalidInput(problems, "The tenant's plan does not allow this; see errors.")


def holdings_exceeding(tenant: Tenant, limits: PlanLimits) -> dict[str, list[str]]:
    """Field errors when what ``tenant`` holds now does not fit ``limits`` (a plan change)."""
    topics, partitions = tenant_usage(tenant)
    problems = usage_problems(limits, topics, partitions)
    if Topic.objects.filter(tenant=tenant, partition_count__gt=limits.max_partitions_per_topic).exists():
        problems.setdefault("partitions_count", []).append(f"A topic has more than {limits.max_partitions_per_topic} partitions.")
    return problems


def quota_exceeding(tenant: Tenant, plan: str, limits: PlanLimits) -> dict[str, list[str]]:
    """A field error when the tenant's quota row sets rates above ``limits`` (a plan change)."""
    quota = Quota.objects.filter(tenant=tenant).first()
    if quota is None:
        return {}
    if (quota.produce_bytes_per_second or 0) > limits.produce_bytes_per_second or (quota.consume_bytes_per_second or 0) > limits.consume_bytes_per_second:
        return {"quota": [f"The tenant's quotas are above the {plan} plan's rates."]}
    return {}


def plan_fit_problems(tenant: Tenant, plan: str, limits: PlanLimits) -> dict[str, list[str]]:
    """What a move of ``tenant`` to ``plan`` must not break: its topics and partitions, then its
    quotas. Precondition: the tenant row is locked in the current transaction."""
    problems = holdings_exceeding(tenant, limits)
    problems.update(quota_exceeding(tenant, plan, limits))
    return problems


def create_quota_row(tenant: Tenant) -> None:
    """Every signed-up tenant has a quota row (null rates: the plan's defaults)."""
    Quota.objects.create(tenant=tenant)
