"""The seams that let a lower app start what a higher one does without importing it:
``webapp.common.changes`` (accounts and catalog actions record provisioning jobs) and
``webapp.accounts.tenant_hooks`` (catalog's quota row and plan checks)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from webapp.accounts import tenant_hooks
from webapp.accounts.actions.signup import do_sign_up
from webapp.accounts.actions.tenant import do_update_tenant
from webapp.accounts.errors import StateConflict
from webapp.accounts.identity import Actor
from webapp.accounts.models import PLAN_LIMITS, Membership, Plan, Role, Tenant
from webapp.catalog.models import Quota, Topic
from webapp.common import changes
from webapp.provisioning import facade as provisioning_facade
from webapp.provisioning import tasks
from webapp.provisioning.models import JobKind, JobState, ProvisioningJob

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Job ids handed to Celery (recorded instead of sent)."""
    sent: list[int] = []
    monkeypatch.setattr(tasks.run_job, "delay", lambda job_id: sent.append(job_id))
    return sent


def test_provisioning_installs_its_recorder_when_the_app_is_ready() -> None:
    assert changes._recorder is provisioning_facade.record_change


def test_record_change_without_a_recorder_names_the_missing_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changes, "_recorder", None)
    with pytest.raises(ImproperlyConfigured, match="webapp.provisioning"):
        changes.record_change(None, JobKind.RECONCILE, "everything")


def test_record_change_hands_back_provisioning_s_pending_job(queued: list[int], django_capture_on_commit_callbacks) -> None:
    tenant = Tenant.objects.create(name="Acme", slug="acme")
    with django_capture_on_commit_callbacks(execute=True):
        job = changes.record_change(tenant, JobKind.SYNC_SECURITY, "acl-x")
    assert isinstance(job, ProvisioningJob)
    assert (job.tenant, job.kind, job.state) == (tenant, JobKind.SYNC_SECURITY, JobState.PENDING)
    assert queued == [job.pk]


def test_sign_up_runs_catalog_s_hook_in_its_transaction() -> None:
    signed_up = do_sign_up("ada", "ada@example.com", "a long enough passphrase 42", "Acme")
    assert Quota.objects.filter(tenant=signed_up.tenant).count() == 1


def test_sign_up_hook_failing_rolls_the_whole_sign_up_back(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(tenant: Tenant) -> None:
        raise RuntimeError("the hook failed")

    monkeypatch.setattr(tenant_hooks, "_sign_up_hooks", [*tenant_hooks._sign_up_hooks, refuse])
    with pytest.raises(RuntimeError, match="the hook failed"):
        do_sign_up("ada", "ada@example.com", "a long enough passphrase 42", "Acme")
    assert not Tenant.objects.exists() and not Quota.objects.exists()


def test_registering_a_hook_or_check_twice_runs_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tenant_hooks, "_sign_up_hooks", [])
    monkeypatch.setattr(tenant_hooks, "_plan_fit_checks", [])
    calls: list[str] = []

    def hook(tenant: Tenant) -> None:
        calls.append(tenant.name)

    def check(tenant: Tenant, plan: str, limits: object) -> dict[str, list[str]]:
        calls.append(plan)
        return {"quota": [f"above {plan}"]}

    for _ in range(2):
        tenant_hooks.add_sign_up_hook(hook)
        tenant_hooks.add_plan_fit_check(check)
    tenant = Tenant(name="Acme", slug="acme")
    tenant_hooks.run_sign_up_hooks(tenant)
    assert tenant_hooks.plan_fit_problems(tenant, Plan.FREE, PLAN_LIMITS[Plan.FREE]) == {"quota": ["above free"]}
    assert calls == ["Acme", Plan.FREE]


def test_plan_change_is_refused_with_catalog_s_topic_and_quota_problems(queued: list[int]) -> None:
    signed_up = do_sign_up("ada", "ada@example.com", "a long enough passphrase 42", "Acme")
    tenant = signed_up.tenant
    free = PLAN_LIMITS[Plan.FREE]
    Topic.objects.create(tenant=tenant, name="wide", partition_count=free.max_partitions_per_topic + 1, replication_factor=1)
    Quota.objects.filter(tenant=tenant).update(produce_bytes_per_second=free.produce_bytes_per_second + 1)
    actor = Actor(tenant=tenant, role=Role.OWNER, membership=Membership.objects.get(tenant=tenant))
    with pytest.raises(StateConflict) as refused:
        do_update_tenant(actor, name=None, plan=Plan.FREE)
    message = str(refused.value.errors["plan"])
    assert "more than 6 partitions" in message and "quotas are above the free plan" in message
    assert Tenant.objects.get(pk=tenant.pk).plan == Plan.STANDARD
    assert queued == []
