"""Request ids in the control plane: X-Request-ID in and out, stored on the job, carried by
Celery task headers, shown in the job API and the dashboard; gunicorn's JSON log settings."""

from __future__ import annotations

import re
from types import SimpleNamespace

from django.test import Client
from django.urls import reverse

from server_runtime.request_ids import current_request_id, request_id_scope
from tests.webapp.api.conftest import TenantFixture
from webapp.accounts.models import Role
from webapp.fleet.models import BrokerNode
from webapp.gunicorn_config import json_logconfig
from webapp.provisioning.models import ProvisioningJob
from webapp.request_ids import CELERY_HEADER, add_request_id_header, enter_task, leave_task

TOPICS = "/api/v1/topics"


def create_topic(fixture: TenantFixture, **headers: str):  # type: ignore[no-untyped-def]
    return fixture.client(Role.DEVELOPER).post(TOPICS, {"topic_name": "orders", "partitions_count": 1}, format="json", headers=headers)


def test_given_request_id_is_answered_stored_on_the_job_and_shown_by_the_job_api(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    response = create_topic(acme, **{"X-Request-ID": "trace-0001"})
    assert response.status_code == 201, response.json()
    assert response["X-Request-ID"] == "trace-0001"
    job_id = response.json()["job"]["id"]
    assert ProvisioningJob.objects.get(public_id=job_id).request_id == "trace-0001"
    job = acme.client(Role.VIEWER).get(f"/api/v1/jobs/{job_id}")
    assert job.json()["request_id"] == "trace-0001"
    assert re.fullmatch(r"[0-9a-f]{32}", job["X-Request-ID"]), "a request without the header gets a new id"


def test_missing_or_unacceptable_request_id_is_replaced_by_a_new_one(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    response = create_topic(acme, **{"X-Request-ID": "two words\r\n"})
    assert response.status_code == 201, response.json()
    answered = response["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", answered)
    assert ProvisioningJob.objects.get(public_id=response.json()["job"]["id"]).request_id == answered
    assert Client().get("/healthz")["X-Request-ID"] != answered


def test_dashboard_change_stores_the_request_id_and_the_job_page_shows_it(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    client = Client()
    client.force_login(acme.members[Role.OWNER].user)
    response = client.post(reverse("dashboard:topic_create"), {"name": "events", "partitions": 1, "replication_factor": 1}, headers={"X-Request-ID": "dash-7"})
    assert response.status_code in (200, 302)
    job = ProvisioningJob.objects.get(target="events")
    assert job.request_id == "dash-7"
    page = client.get(reverse("dashboard:job", args=[job.public_id]))
    assert '<dd class="mono" id="job-request-id">dash-7</dd>' in page.content.decode()


def test_a_queued_task_carries_the_current_id_in_its_headers() -> None:
    headers: dict[str, object] = {}
    add_request_id_header(headers=headers)
    assert headers == {}
    with request_id_scope("queued-by-web"):
        add_request_id_header(headers=headers)
    assert headers == {CELERY_HEADER: "queued-by-web"}


def test_a_task_runs_with_its_header_id_and_restores_the_previous_one_after() -> None:
    task = SimpleNamespace(request=SimpleNamespace(**{CELERY_HEADER: "from-header"}))
    with request_id_scope("worker-before"):
        enter_task(task_id="t-1", task=task)
        assert current_request_id() == "from-header"
        leave_task(task_id="t-1")
        assert current_request_id() == "worker-before"
        # Without a header (an eager task, an old message) the task keeps its caller's id.
        enter_task(task_id="t-2", task=SimpleNamespace(request=SimpleNamespace()))
        assert current_request_id() == "worker-before"
        leave_task(task_id="t-2")
    assert current_request_id() is None


def test_gunicorn_json_logging_sends_its_loggers_to_the_json_root_handler(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("WEIR_LOG_FORMAT", "json")
    config = json_logconfig()
    assert config["formatters"]["plain"] == {"()": "server_runtime.logging_setup.JsonLogFormatter"}
    assert config["root"]["handlers"] == ["console"]
    assert config["loggers"]["gunicorn.access"] == {"level": "INFO", "handlers": [], "propagate": True}
    assert config["loggers"]["gunicorn.error"]["propagate"] is True
