"""The web process's /healthz, /readyz and /metrics, and the metrics of provisioning jobs,
the reconciler, Celery tasks and the metering pipelines."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from webapp.accounts.models import Tenant
from webapp.metering.models import GroupLag, PipelineRun
from webapp.provisioning import jobs
from webapp.provisioning.models import JobKind, JobState, ProvisioningJob
from webapp.provisioning.tasks import reconcile


def _metrics(client: Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode("utf-8")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value for family in text_string_to_metric_families(text) for sample in family.samples}


def _value(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


@pytest.fixture
def filesystem_broker(settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    queue = tmp_path / "queue"
    queue.mkdir()
    settings.CELERY_BROKER_URL = "filesystem://"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_in": str(queue), "data_folder_out": str(queue)}
    return queue


def test_healthz_answers_without_any_dependency() -> None:
    response = Client().get("/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


@pytest.mark.django_db
def test_readyz_answers_200_when_the_database_and_the_celery_broker_answer(filesystem_broker: Path) -> None:
    response = Client().get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": ["database", "celery_broker"]}


@pytest.mark.django_db
def test_readyz_answers_503_naming_an_unreachable_celery_broker(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    response = Client().get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert list(body["failed"]) == ["celery_broker"]
    assert "127.0.0.1:1" in body["failed"]["celery_broker"]


def test_readyz_answers_503_naming_the_database_when_it_cannot_be_queried(filesystem_broker: Path) -> None:
    # Without the django_db mark every query fails, as it does when the database is down.
    response = Client().get("/readyz")
    assert response.status_code == 503
    assert list(response.json()["failed"]) == ["database"]


def test_readyz_names_a_missing_filesystem_queue(settings, filesystem_broker: Path) -> None:  # type: ignore[no-untyped-def]
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_in": str(filesystem_broker / "gone"), "data_folder_out": str(filesystem_broker)}
    from webapp.observability.readiness import check_celery_broker

    assert "data_folder_in" in (check_celery_broker() or "")


@pytest.mark.django_db
def test_metrics_count_requests_by_route_name_and_status() -> None:
    client = Client()
    before = _metrics(client)
    client.get("/healthz")
    client.get("/no/such/page/12345")
    after = _metrics(client)
    healthz = ("weir_web_requests_total", (("method", "GET"), ("route", "healthz"), ("status", "200")))
    unmatched = ("weir_web_requests_total", (("method", "GET"), ("route", "unmatched"), ("status", "404")))
    assert after[healthz] - before.get(healthz, 0) == 1
    assert after[unmatched] - before.get(unmatched, 0) == 1
    duration = ("weir_web_request_duration_seconds_count", (("method", "GET"), ("route", "healthz")))
    assert after[duration] - before.get(duration, 0) == 1


@pytest.mark.django_db
def test_metrics_report_the_job_table_and_the_pipelines_from_the_database() -> None:
    now = timezone.now()
    ProvisioningJob.objects.create(kind=JobKind.CREATE_TOPIC, target="orders", state=JobState.PENDING)
    ProvisioningJob.objects.filter(state=JobState.PENDING).update(created_at=now - timedelta(minutes=10))
    PipelineRun.objects.create(
        pipeline="usage",
        status="SUCCEEDED",
        trigger="schedule",
        started_at=now - timedelta(minutes=5),
        finished_at=now - timedelta(minutes=4),
        duration=timedelta(seconds=42),
        rows_written=17,
    )
    PipelineRun.objects.create(
        pipeline="lag", status="FAILED", trigger="schedule", started_at=now - timedelta(minutes=1), finished_at=now, duration=timedelta(seconds=3), error="boom"
    )
    tenant = Tenant.objects.create(name="Acme", slug="acme")
    for group, status in (("a", "ERROR"), ("b", "OK"), ("c", "ERROR")):
        GroupLag.objects.create(tenant=tenant, group=group, status=status, max_lag=1, total_lag=1, partition_count=1, evaluated_at=now)
    GroupLag.objects.create(tenant=tenant, group="gone", status="ERROR", max_lag=1, total_lag=1, partition_count=1, evaluated_at=now - timedelta(days=1))

    samples = _metrics(Client())
    assert samples[("weir_provisioning_jobs", (("kind", "CREATE_TOPIC"), ("state", "PENDING")))] == 1
    assert samples[("weir_provisioning_oldest_unfinished_job_age_seconds", ())] >= 590
    assert samples[("weir_pipeline_runs", (("pipeline", "usage"), ("status", "SUCCEEDED")))] == 1
    assert samples[("weir_pipeline_last_run_duration_seconds", (("pipeline", "usage"),))] == 42
    assert samples[("weir_pipeline_last_run_rows", (("pipeline", "usage"),))] == 17
    assert samples[("weir_pipeline_last_run_failed", (("pipeline", "usage"),))] == 0
    assert samples[("weir_pipeline_last_run_failed", (("pipeline", "lag"),))] == 1
    assert samples[("weir_pipeline_last_success_timestamp_seconds", (("pipeline", "usage"),))] == pytest.approx((now - timedelta(minutes=4)).timestamp())
    assert ("weir_pipeline_last_success_timestamp_seconds", (("pipeline", "lag"),)) not in samples
    assert samples[("weir_pipeline_consumer_groups", (("status", "ERROR"),))] == 2  # the stale evaluation is left out
    assert samples[("weir_pipeline_consumer_groups", (("status", "OK"),))] == 1
    assert samples[("weir_pipeline_consumer_groups", (("status", "WARNING"),))] == 0


@pytest.mark.django_db
def test_metrics_report_each_fresh_groups_lag_trend_and_retention() -> None:
    now = timezone.now()
    tenant = Tenant.objects.create(name="Acme", slug="acme")
    GroupLag.objects.create(
        tenant=tenant,
        group="etl",
        status="WARNING",
        max_lag=40,
        total_lag=70,
        max_time_lag_seconds=12.5,
        partition_count=2,
        lag_rate=3.5,
        catch_up_seconds=None,
        retention_seconds=600.0,
        retention_status="AT_RISK",
        evaluated_at=now,
    )
    GroupLag.objects.create(tenant=tenant, group="old", status="OK", max_lag=0, total_lag=0, partition_count=1, evaluated_at=now - timedelta(days=1))

    samples = _metrics(Client())
    key = (("group", "etl"), ("tenant", tenant.public_id))
    assert samples[("weir_consumer_group_lag_records", key)] == 70
    assert samples[("weir_consumer_group_lag_seconds", key)] == 12.5
    assert samples[("weir_consumer_group_lag_rate", key)] == 3.5
    assert samples[("weir_consumer_group_retention_seconds", key)] == 600
    assert ("weir_consumer_group_catch_up_seconds", key) not in samples  # not catching up
    assert samples[("weir_consumer_group_status", (("group", "etl"), ("status", "WARNING"), ("tenant", tenant.public_id)))] == 1
    assert samples[("weir_consumer_group_retention_status", (("group", "etl"), ("status", "AT_RISK"), ("tenant", tenant.public_id)))] == 1
    assert not any(labels and ("group", "old") in labels for _, labels in samples)  # a stale evaluation is left out
    assert samples[("weir_lag_evaluated_timestamp_seconds", ())] == pytest.approx(now.timestamp())


@pytest.mark.django_db
def test_a_finished_job_counts_its_attempt_and_its_duration() -> None:
    job = ProvisioningJob.objects.create(kind=JobKind.SYNC_SECURITY, target="key")
    attempts = {"kind": "SYNC_SECURITY", "outcome": "succeeded"}
    durations = {"kind": "SYNC_SECURITY", "state": "SUCCEEDED"}
    before = (_value("weir_provisioning_job_attempts_total", attempts), _value("weir_provisioning_job_duration_seconds_count", durations))
    assert jobs.run_attempt(job.pk).state == JobState.SUCCEEDED  # no broker is registered: nothing to push
    after = (_value("weir_provisioning_job_attempts_total", attempts), _value("weir_provisioning_job_duration_seconds_count", durations))
    assert (after[0] - before[0], after[1] - before[1]) == (1, 1)


@pytest.mark.django_db
def test_a_celery_task_counts_its_outcome_duration_and_the_reconciler_round() -> None:
    labels = {"task": "webapp.provisioning.tasks.reconcile", "state": "success"}
    before = (
        _value("weir_celery_tasks_total", labels),
        _value("weir_celery_task_duration_seconds_count", {"task": labels["task"]}),
        _value("weir_provisioning_reconcile_rounds_total"),
    )
    reconcile.apply()  # runs here, with Celery's signals, as a worker would run it
    after = (
        _value("weir_celery_tasks_total", labels),
        _value("weir_celery_task_duration_seconds_count", {"task": labels["task"]}),
        _value("weir_provisioning_reconcile_rounds_total"),
    )
    assert [late - early for early, late in zip(before, after)] == [1, 1, 1]


def test_reconciler_drift_is_counted_by_what_drifted() -> None:
    from grpc_protos.weir.v1 import admin_pb2
    from webapp.provisioning.broker_client import BrokerAddress
    from webapp.provisioning.models import SnapshotKind
    from webapp.provisioning.reconciler import _count_drift, _drift_of

    state = admin_pb2.DescribeStateResponse(partitions_version=3, security_version=1)
    drift = _drift_of(BrokerAddress(1, "127.0.0.1:1"), state, {SnapshotKind.PARTITIONS: 4, SnapshotKind.SECURITY: 2}, set())
    assert drift is not None
    kinds = ("partitions_behind", "security_behind", "hosted_partitions")
    before = [_value("weir_provisioning_reconcile_drift_total", {"kind": kind}) for kind in kinds]
    _count_drift(drift)
    after = [_value("weir_provisioning_reconcile_drift_total", {"kind": kind}) for kind in kinds]
    assert [late - early for early, late in zip(before, after)] == [1, 1, 0]
