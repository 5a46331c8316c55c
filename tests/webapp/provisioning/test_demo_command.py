"""``manage.py demo``: credentials that work, reuse on a second run, old demo keys revoked."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.core.management.base import CommandError

from webapp.accounts.api_keys import secret_matches
from webapp.accounts.models import ApiKey, Tenant
from webapp.catalog.models import AclBinding, Topic
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.provisioning import tasks

pytestmark = pytest.mark.django_db

EXPECTED_KEYS = {
    "username",
    "password",
    "tenant",
    "api_url",
    "schema_registry_url",
    "dashboard_url",
    "bootstrap_servers",
    "kafka_bootstrap_servers",
    "cloud_api_key",
    "cloud_api_secret",
    "cluster_api_key",
    "cluster_api_secret",
    "service_account",
}


@pytest.fixture(autouse=True)
def no_celery(monkeypatch: pytest.MonkeyPatch) -> None:
    # These tests check what demo stores; pushing to brokers is tested with real processes.
    monkeypatch.setattr(tasks.run_job, "delay", lambda job_id: None)


@pytest.fixture(autouse=True)
def one_broker() -> None:
    BrokerNode.objects.create(node_id=1, host="127.0.0.1", port=19092, kafka_port=29092, state=BrokerState.ONLINE)


def run_demo(*arguments: str) -> dict[str, str]:
    output = io.StringIO()
    call_command("demo", "--json", "--wait-seconds", "0", *arguments, stdout=output)
    lines = output.getvalue().strip().splitlines()
    assert len(lines) == 1, "--json prints exactly one line"
    return json.loads(lines[0])


def test_demo_json_prints_exactly_the_documented_keys() -> None:
    printed = run_demo()
    assert set(printed) == EXPECTED_KEYS
    assert printed["cloud_api_secret"].startswith("weir_cloud_")
    assert printed["cluster_api_secret"].startswith("weir_cluster_")
    assert printed["bootstrap_servers"] == "127.0.0.1:19092"
    assert printed["kafka_bootstrap_servers"] == "127.0.0.1:29092"
    assert printed["service_account"].startswith("sa-")
    assert printed["api_url"].endswith("/api/v1")
    assert printed["schema_registry_url"].endswith("/schema-registry")


def test_demo_credentials_are_usable() -> None:
    printed = run_demo()
    assert authenticate(username=printed["username"], password=printed["password"]) is not None
    cluster_key = ApiKey.objects.get(key_id=printed["cluster_api_key"])
    assert secret_matches(printed["cluster_api_secret"], cluster_key.secret_sha256)
    assert cluster_key.principal == f"User:{printed['service_account']}"
    tenant = Tenant.objects.get(public_id=printed["tenant"])
    assert Topic.objects.get(tenant=tenant, name="demo").partitions.count() == 3
    assert set(AclBinding.objects.filter(tenant=tenant).values_list("resource_type", "operation")) == {
        ("TOPIC", "READ"),
        ("TOPIC", "WRITE"),
        ("TOPIC", "DESCRIBE"),
        ("TOPIC", "DESCRIBE_CONFIGS"),
        ("TOPIC", "CREATE"),
        ("TOPIC", "ALTER_CONFIGS"),
        ("GROUP", "READ"),
    }


def test_second_run_reuses_the_tenant_and_revokes_the_old_keys() -> None:
    first = run_demo()
    second = run_demo()
    assert second["tenant"] == first["tenant"]
    assert second["service_account"] == first["service_account"]
    assert second["cluster_api_key"] != first["cluster_api_key"]
    assert ApiKey.objects.get(key_id=first["cluster_api_key"]).revoked_at is not None
    assert ApiKey.objects.get(key_id=first["cloud_api_key"]).revoked_at is not None
    assert ApiKey.objects.get(key_id=second["cluster_api_key"]).revoked_at is None
    assert authenticate(username=second["username"], password=second["password"]) is not None
    assert authenticate(username=first["username"], password=first["password"]) is None
    assert Topic.objects.filter(name="demo").count() == 1
    assert AclBinding.objects.count() == 7


def test_other_tenant_name_makes_another_tenant() -> None:
    first = run_demo()
    other = run_demo("--tenant", "Acme Trial")
    assert other["username"] == "acme-trial"
    assert other["tenant"] != first["tenant"]


def test_unfinished_jobs_fail_the_command_with_a_hint() -> None:
    with pytest.raises(CommandError, match="Celery worker"):
        call_command("demo", "--wait-seconds", "0.3", stdout=io.StringIO())
