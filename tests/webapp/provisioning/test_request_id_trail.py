"""One request id followed from the REST call through the Celery task to the broker's log.

``POST /api/v1/topics`` with ``X-Request-ID`` goes through the Django test client; a real
Celery worker process on Redis runs the provisioning job, and a real managed broker applies
the pushed map. The worker and the broker run with ``WEIR_LOG_FORMAT=json``: the same id is in
the response header, on the job, in the worker's lines for the task (also Celery's own
line, which only the task header can give it) and in the broker's line for ApplyPartitions.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.support.celery_worker import CeleryWorkerProcess
from tests.support.processes import BrokerProcess
from tests.support.real_cluster import database_url_for_subprocesses
from tests.webapp.api.conftest import basic_client
from webapp.accounts.actions.keys import KeyOwner, do_create_key
from webapp.accounts.actions.signup import do_sign_up
from webapp.accounts.identity import Actor
from webapp.celery import app
from webapp.controller.registration import register_broker
from webapp.provisioning.models import JobState, ProvisioningJob
from webapp.runtime import redis_answers

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not redis_answers(settings.REDIS_URL), reason="needs Redis at REDIS_URL"),
    pytest.mark.skipif(connection.vendor == "sqlite", reason="needs PostgreSQL (the worker process shares the test database)"),
    pytest.mark.slow,
]

REQUEST_ID = "trail-6a1f0c"
WAIT_SECONDS = 30.0


def json_lines(text: str) -> list[dict[str, object]]:
    """Every log line of ``text`` that is a JSON object (Celery's start-up banner is not a log line)."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def wait_for_job(public_id: str, worker: CeleryWorkerProcess) -> ProvisioningJob:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        job = ProvisioningJob.objects.get(public_id=public_id)
        if job.state in (JobState.SUCCEEDED, JobState.FAILED):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {public_id} not finished after {WAIT_SECONDS:.0f} s\n{worker.read_log()[-3000:]}")


def wait_for_queued_jobs(worker: CeleryWorkerProcess) -> None:
    """Until every job queued so far finished: the broker's registration queues a RECONCILE, and a push of it still to
    come would also deliver the topic's job, under its own request id (its line says 'also delivered 1 pending job')."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if not ProvisioningJob.objects.exclude(state__in=(JobState.SUCCEEDED, JobState.FAILED)).exists():
            return
        time.sleep(0.1)
    raise AssertionError(f"jobs queued before the call not finished after {WAIT_SECONDS:.0f} s\n{worker.read_log()[-3000:]}")


def test_one_request_id_from_the_api_call_to_the_worker_and_the_broker(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    queue = app.conf.task_default_queue
    with app.connection_for_write() as celery_connection:
        app.amqp.queues[queue].bind(celery_connection).purge()
    broker = BrokerProcess(
        tmp_path / "broker",
        configs={"security.required": "true"},
        env={"WEIR_INTERNAL_TOKEN": settings.WEIR_INTERNAL_TOKEN, "WEIR_LOG_FORMAT": "json"},
    )
    worker = CeleryWorkerProcess(
        queue,
        tmp_path / "worker.log",
        {
            "DJANGO_SETTINGS_MODULE": "webapp.settings",
            "DATABASE_URL": database_url_for_subprocesses(),
            "WEIR_DATA_DIR": str(tmp_path / "worker-data"),
            "WEIR_INTERNAL_TOKEN": settings.WEIR_INTERNAL_TOKEN,
            "REDIS_URL": settings.REDIS_URL,
            "WEIR_QUIET_TRANSPORT_NOTICE": "1",
            "WEIR_LOG_FORMAT": "json",
        },
    )
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            for started in [pool.submit(broker.start), pool.submit(worker.start)]:
                started.result()
        register_broker(1, "127.0.0.1", broker.port)
        signed_up = do_sign_up("owner", "owner@trail.example", "a-long-enough-password-1", "Trail")
        owner = Actor(tenant=signed_up.tenant, role=signed_up.membership.role, membership=signed_up.membership)
        key = do_create_key(owner, "cloud", KeyOwner(membership=signed_up.membership), "trail key")
        wait_for_queued_jobs(worker)

        response = basic_client(key.key.key_id, key.secret).post(
            "/api/v1/topics", {"topic_name": "trail", "partitions_count": 2}, format="json", headers={"X-Request-ID": REQUEST_ID}
        )
        assert response.status_code == 201, response.json()
        assert response["X-Request-ID"] == REQUEST_ID
        job = wait_for_job(response.json()["job"]["id"], worker)
        assert (job.state, job.request_id) == (JobState.SUCCEEDED, REQUEST_ID), job.error
    finally:
        worker_exit = worker.terminate() if worker.process is not None and worker.process.poll() is None else None
        worker.kill()
        broker.stop()
    assert worker_exit == 0

    worker_lines = [line for line in json_lines(worker.read_log()) if line.get("request_id") == REQUEST_ID]
    messages = {(line["logger"], str(line["message"])) for line in worker_lines}
    assert ("webapp.provisioning.jobs", f"job {job.public_id} SUCCEEDED") in messages, worker.read_log()[-3000:]
    assert any(logger == "celery.app.trace" and "succeeded" in message for logger, message in messages), messages
    assert {"ts", "level", "logger", "message", "process", "thread"} <= set(worker_lines[0])

    broker_log = broker.read_log()
    broker_lines = json_lines(broker_log)
    assert len(broker_lines) == len(broker_log.splitlines()), "every broker log line is one JSON object"
    applied = [line for line in broker_lines if str(line["message"]).startswith("applied cluster map version")]
    assert any(line.get("request_id") == REQUEST_ID and line["logger"] == "broker_nodes.server.broker" for line in applied), applied
