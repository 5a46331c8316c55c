"""Provisioning end to end: actions -> Celery (real Redis, a worker thread) -> real brokers.

Brokers run as processes with ``security.required=true`` and the control plane's internal
token; the worker consumes a queue unique to this test run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.conf import settings
from django.db import connection, connections

from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc
from tests.support.processes import BrokerProcess, free_port
from webapp.accounts.actions.keys import check_create_key, do_create_key, do_revoke_key
from webapp.accounts.actions.service_accounts import do_create_service_account
from webapp.accounts.actions.signup import do_sign_up
from webapp.accounts.identity import Actor
from webapp.accounts.models import ApiKeyKind, Role
from webapp.catalog.actions.topics import check_create_topic, do_create_topic
from webapp.catalog.models import Topic
from webapp.celery import app
from webapp.controller.registration import register_broker
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.provisioning.broker_client import BrokerAddress, BrokerAdminClient
from webapp.provisioning.models import JobKind, JobState, ProvisioningJob
from webapp.provisioning.reconciler import reconcile
from webapp.runtime import redis_answers

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not redis_answers(settings.REDIS_URL), reason="needs Redis at REDIS_URL"),
    # SQLite's shared in-memory test database locks whole tables across the worker thread
    # and the test; the control plane runs these on PostgreSQL (as CI does).
    pytest.mark.skipif(connection.vendor == "sqlite", reason="needs PostgreSQL (concurrent connections from the worker thread)"),
    pytest.mark.slow,
]

# Every wait below is bounded by this many seconds.
WAIT_SECONDS = 30.0


@pytest.fixture(autouse=True)
def fast_retries(settings) -> None:  # type: ignore[no-untyped-def]
    settings.WEIR_PROVISIONING_MAX_ATTEMPTS = 3
    settings.WEIR_PROVISIONING_RETRY_BACKOFF_SECONDS = 0.2


@pytest.fixture
def worker(django_db_blocker) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """A Celery worker thread on Redis, consuming this session's default queue.

    One worker per test, stopped before the test database is flushed: a job of one test
    retrying later (held by the worker as a scheduled task) must neither run during the next
    test nor write while the flush truncates the tables (a deadlock there fails the flush and
    leaves the rows for the next test). Stopping it hands its scheduled tasks back to the
    queue, which the next test's worker purges before it starts.
    """
    # The default queue is already this test session's own: settings derive it from the
    # session's temporary WEIR_DATA_DIR. Celery fixes its routing on first use, so changing
    # the queue here would not reach tasks sent earlier in the session; consume it instead,
    # minus anything an earlier test left there.
    queue = app.conf.task_default_queue
    previous_eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    with app.connection_for_write() as connection:
        app.amqp.queues[queue].bind(connection).purge()

    def close_worker_connections(**_: object) -> None:
        # Runs in the worker thread after each task: Django's connections are per thread, so
        # only this thread can close the one its tasks opened, which must not outlive the
        # test database (its teardown refuses to drop a database still in use).
        connections.close_all()

    task_postrun.connect(close_worker_connections, weak=False)
    try:
        with django_db_blocker.unblock(), start_worker(app, pool="solo", concurrency=1, perform_ping_check=False, loglevel="WARNING", shutdown_timeout=10):
            yield
    finally:
        task_postrun.disconnect(close_worker_connections)
        app.conf.task_always_eager = previous_eager
        connections.close_all()


@pytest.fixture
def start_broker(tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    started: list[BrokerProcess] = []

    def start(node_id: int, data_dir: Path | None = None, port: int | None = None) -> BrokerProcess:
        process = BrokerProcess(
            data_dir or tmp_path / f"broker-{node_id}",
            node_id=node_id,
            port=port or free_port(),
            configs={"security.required": "true"},
            env={"WEIR_INTERNAL_TOKEN": settings.WEIR_INTERNAL_TOKEN},
        )
        started.append(process)
        process.start()
        register_broker(node_id, "127.0.0.1", process.port)
        return process

    yield start
    for process in started:
        process.stop()


@pytest.fixture
def owner() -> Actor:
    signed_up = do_sign_up("owner", "owner@example.com", "a-long-enough-password-1", "Acme")
    return Actor(tenant=signed_up.tenant, role=signed_up.membership.role, membership=signed_up.membership)


def wait_for_job(job_id: int) -> ProvisioningJob:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        job = ProvisioningJob.objects.get(pk=job_id)
        if job.state in (JobState.SUCCEEDED, JobState.FAILED):
            return job
        time.sleep(0.05)
    jobs = list(ProvisioningJob.objects.order_by("pk").values_list("pk", "kind", "state", "attempts", "error"))
    raise AssertionError(f"job {job_id} not finished after {WAIT_SECONDS} s; every job: {jobs}")


def hosted(process: BrokerProcess, topic: Topic) -> set[int]:
    with BrokerAdminClient(BrokerAddress(process.node_id, process.address)) as client:
        state = client.describe_state()
    return {entry.partition for entry in state.partitions if entry.topic_id == str(topic.topic_id)}


def create_topic(owner: Actor, name: str, partitions: int) -> tuple[Topic, int]:
    change = do_create_topic(owner, check_create_topic(owner, name, partitions, 1, {}))
    return change.topic, change.job.pk


def expected_on(topic: Topic, node_id: int) -> set[int]:
    return {index for index, replicas in topic.partitions.values_list("index", "replicas") if node_id in replicas}


def test_created_topic_reaches_every_broker_that_holds_its_partitions(worker: None, start_broker, owner: Actor) -> None:
    first, second = start_broker(1), start_broker(2)
    topic, job_id = create_topic(owner, "orders", 4)
    job = wait_for_job(job_id)
    # One attempt of its own, or none: the push of a job running meanwhile (the reconciler's, for
    # a broker that just registered) carried the new topic to every broker and settled it.
    assert (job.state, job.error) == (JobState.SUCCEEDED, "") and job.attempts <= 1, (job.state, job.error, job.attempts)
    assert hosted(first, topic) == expected_on(topic, 1)
    assert hosted(second, topic) == expected_on(topic, 2)
    assert hosted(first, topic) | hosted(second, topic) == {0, 1, 2, 3}


def test_broker_down_fails_the_job_with_the_reason_and_the_reconciler_converges(worker: None, start_broker, owner: Actor) -> None:
    start_broker(1)
    second = start_broker(2)
    second.stop()
    topic, job_id = create_topic(owner, "orders", 4)
    job = wait_for_job(job_id)
    assert job.state == JobState.FAILED
    assert job.attempts == 3
    assert f"broker 2 at {second.address}" in job.error
    assert "UNAVAILABLE" in job.error
    assert Topic.objects.filter(pk=topic.pk).exists(), "the desired state stays"

    second.start()
    report = reconcile()
    assert report.online == [1, 2]
    assert report.job is not None and report.job.state == JobState.SUCCEEDED
    assert hosted(second, topic) == expected_on(topic, 2) != set()
    assert reconcile().job is None, "a converged cluster needs no repair"


def test_reconciler_marks_unreachable_brokers_offline_and_placement_avoids_them(worker: None, start_broker, owner: Actor) -> None:
    start_broker(1)
    start_broker(2).stop()
    report = reconcile()
    assert report.offline == [2]
    assert BrokerNode.objects.get(node_id=2).state == BrokerState.OFFLINE
    assert BrokerNode.objects.get(node_id=1).last_seen_at is not None
    topic, job_id = create_topic(owner, "orders", 2)
    assert wait_for_job(job_id).state == JobState.SUCCEEDED
    assert set(topic.partitions.values_list("leader", flat=True)) == {1}


def test_reconciler_recreates_partitions_of_a_broker_restarted_empty(worker: None, start_broker, owner: Actor, tmp_path: Path) -> None:
    broker = start_broker(1)
    topic, job_id = create_topic(owner, "orders", 3)
    assert wait_for_job(job_id).state == JobState.SUCCEEDED
    assert hosted(broker, topic) == {0, 1, 2}
    broker.stop()
    broker.data_dir = tmp_path / "broker-1-empty"
    broker.start()
    assert hosted(broker, topic) == set()
    report = reconcile()
    assert report.job is not None and report.job.kind == JobKind.RECONCILE
    assert "broker 1" in report.job.target
    assert hosted(broker, topic) == {0, 1, 2}


def metadata_call(process: BrokerProcess, key: str, secret: str) -> broker_pb2.MetadataResponse:
    with grpc.insecure_channel(process.address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)
        return stub.Metadata(broker_pb2.MetadataRequest(), timeout=5, metadata=(("x-weir-api-key", key), ("x-weir-api-secret", secret)))


def test_revoked_cluster_key_is_refused_after_the_security_push(worker: None, start_broker, owner: Actor) -> None:
    broker = start_broker(1)
    account = do_create_service_account(owner, "app", "", Role.DEVELOPER)
    created = do_create_key(owner, ApiKeyKind.CLUSTER, check_create_key(owner, ApiKeyKind.CLUSTER, account.public_id, ""), "")
    assert created.job is not None and wait_for_job(created.job.pk).state == JobState.SUCCEEDED
    metadata_call(broker, created.key.key_id, created.secret)

    _, job = do_revoke_key(owner, created.key)
    assert job is not None and wait_for_job(job.pk).state == JobState.SUCCEEDED
    with pytest.raises(grpc.RpcError) as refused:
        metadata_call(broker, created.key.key_id, created.secret)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
