"""What apps above accounts add to a tenant's life: rows created with a new tenant, and the
checks a plan change must pass.

Signing up creates the tenant's quota row, and a plan change must fit the tenant's topics,
partitions and quotas; those rows belong to catalog, which imports accounts (its models hang
off ``Tenant``). So that accounts need not import catalog back, catalog registers its part here
when its Django app is ready, and the accounts actions run what is registered, inside their
own transaction.
"""

from __future__ import annotations

from collections.abc import Callable

from webapp.accounts.models import PlanLimits, Tenant

# Called with the new tenant inside the sign-up transaction, after the tenant row is saved.
SignUpHook = Callable[[Tenant], None]
# Called with the locked tenant, the plan's name and its limits; answers field errors
# (field -> messages), empty when what the tenant holds fits the plan.
PlanFitCheck = Callable[[Tenant, str, PlanLimits], dict[str, list[str]]]

_sign_up_hooks: list[SignUpHook] = []
_plan_fit_checks: list[PlanFitCheck] = []


def add_sign_up_hook(hook: SignUpHook) -> None:
    """Run ``hook`` for every tenant signed up from now on (registering the same hook twice
    runs it once)."""
    if hook not in _sign_up_hooks:
        _sign_up_hooks.append(hook)


def add_plan_fit_check(check: PlanFitCheck) -> None:
    """Ask ``check`` before every plan change from now on (registering it twice asks it once)."""
    if check not in _plan_fit_checks:
        _plan_fit_checks.append(check)


def run_sign_up_hooks(tenant: Tenant) -> None:
    """Precondition: inside the sign-up transaction, ``tenant`` saved."""
    for hook in _sign_up_hooks:
        hook(tenant)


def plan_fit_problems(tenant: Tenant, plan: str, limits: PlanLimits) -> dict[str, list[str]]:
    """Every registered check's field errors for moving ``tenant`` to ``plan``, merged in
    registration order. Precondition: the tenant row is locked in the current transaction."""
    problems: dict[str, list[str]] = {}
    for check in _plan_fit_checks:
        for field, messages in check(tenant, plan, limits).items():
            problems.setdefault(field, []).extend(messages)
    return problems
