"""The lag evaluator against a real cluster, freshness bounded as issue 17 asks: a commit shows in
``GET /api/v1/consumer-groups/{g}/lag`` within 10 s; a consumer that stops committing while
records keep coming moves from OK to STOP; a hanging transactional offset commit holds back no
other group of its ``__consumer_offsets`` partition, and its offsets count only once its
transaction commits (an aborted one never); a restarted evaluator resumes with its windows.

One controller and one broker as processes (the controller shares the test's PostgreSQL
database; ``__consumer_offsets`` with 3 partitions, which is all the scenario needs). The
evaluator runs in a thread of the test process, writing to the test database, as
``python -m spark_pipelines.lag_monitor`` does in ``make up``. Every wait polls with a bounded
deadline; the only timing bound asserted is the issue's 10 s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from django.db import connections
from rest_framework.test import APIClient

from log_formats.offset_commit_records import partition_for_group
from spark_pipelines.lag_monitor import LagMonitor, MonitorOptions
from tests.support.real_cluster import ClusterUnavailableError, RealCluster, TenantAccess, database_url_for_subprocesses
from tests.webapp.api.conftest import basic_client
from webapp.accounts.actions.keys import KeyOwner, do_create_key
from webapp.accounts.identity import Actor
from webapp.accounts.models import Membership, Role
from weir import Consumer, Producer, TopicPartition

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(300)]

TOPIC = "orders"
OFFSETS_PARTITIONS = 3
VISIBLE_WITHIN_SECONDS = 10.0  # issue 17: p99 <= 10 s
OPTIONS = MonitorOptions(refresh_seconds=1.0, window_size=3, broker_timeout_seconds=5.0, touch_seconds=5.0, history_seconds=5.0)
Value = TypeVar("Value")


@pytest.fixture
def cluster(tmp_path: Path, transactional_db: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[RealCluster]:
    try:
        database_url_for_subprocesses()
    except ClusterUnavailableError as error:
        pytest.skip(str(error))
    monkeypatch.setenv("WEIR_OFFSETS_TOPIC_NUM_PARTITIONS", str(OFFSETS_PARTITIONS))
    monkeypatch.setenv("WEIR_TRANSACTION_STATE_TOPIC_NUM_PARTITIONS", "1")
    running = RealCluster(tmp_path / "cluster", broker_count=1)
    try:
        yield running.start()
    finally:
        running.close()


class RunningMonitor:
    """The evaluator in a thread, as its process runs it."""

    def __init__(self, cluster: RealCluster) -> None:
        self.monitor = LagMonitor({"bootstrap.servers": cluster.bootstrap_servers(), "weir.internal.token": cluster.internal_token}, OPTIONS)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="lag monitor", daemon=True)
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            self.monitor.start()
            self.monitor.run(self.stop)
        except BaseException as error:  # noqa: BLE001 - reported by close()
            self.error = error
        finally:
            self.monitor.close()
            connections.close_all()

    def __enter__(self) -> RunningMonitor:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(30)
        assert not self.thread.is_alive(), "the evaluator did not stop within 30 s"
        assert self.error is None, self.error

    def rounds_pass(self, count: int, timeout: float = 30.0) -> None:
        target = self.monitor.rounds + count
        wait_for(lambda: self.monitor.rounds >= target or None, f"{count} rounds", timeout)


def wait_for(condition: Callable[[], Value | None], what: str, timeout: float) -> Value:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {what}")
        time.sleep(0.2)


def client_config(cluster: RealCluster, access: TenantAccess, **overrides: object) -> dict[str, object]:
    return {"bootstrap.servers": cluster.bootstrap_servers(), "sasl.username": access.api_key, "sasl.password": access.api_secret, **overrides}


def api_client(access: TenantAccess) -> APIClient:
    membership = Membership.objects.get(tenant__public_id=access.tenant_id, role=Role.OWNER)
    owner = Actor(tenant=membership.tenant, role=membership.role, membership=membership)
    created = do_create_key(owner, "cloud", KeyOwner(membership=membership), "lag freshness")
    return basic_client(created.key.key_id, created.secret)


def partitions_shown(api: APIClient, group: str) -> dict[int, dict[str, Any]]:
    response = api.get(f"/api/v1/consumer-groups/{group}/lag")
    if response.status_code == 404:
        return {}
    assert response.status_code == 200, response.content
    return {row["partition_id"]: {**row, "group_status": response.json()["status"]} for row in response.json()["partitions"]}


def commit(cluster: RealCluster, access: TenantAccess, group: str, offsets: dict[int, int]) -> float:
    consumer = Consumer(client_config(cluster, access, **{"group.id": group, "enable.auto.commit": False}))
    try:
        consumer.commit(offsets=[TopicPartition(TOPIC, partition, offset) for partition, offset in offsets.items()], asynchronous=False)
        return time.monotonic()
    finally:
        consumer.close()


def produce(cluster: RealCluster, access: TenantAccess, partition: int, count: int, base_ms: int) -> None:
    producer = Producer(client_config(cluster, access))
    for index in range(count):
        producer.produce(TOPIC, value=f"{partition}-{index}".encode(), partition=partition, timestamp=base_ms + index * 1000)
    assert producer.flush(30) == 0


def same_offsets_partition(tenant_a: str, group_a: str, tenant_b: str) -> str:
    """A group name of ``tenant_b`` stored in the same __consumer_offsets partition as ``group_a`` of ``tenant_a``."""
    wanted = partition_for_group(f"{tenant_a}~{group_a}", OFFSETS_PARTITIONS)
    return next(name for index in range(100) if partition_for_group(f"{tenant_b}~{(name := f'plain-{index}')}", OFFSETS_PARTITIONS) == wanted)


def test_commits_show_within_seconds_and_a_hanging_transaction_holds_no_one_back(cluster: RealCluster) -> None:
    cluster.wait_until(lambda: (rows := cluster.internal_partition_rows("__consumer_offsets")) and all(row.leader != -1 for row in rows), "offsets led", 30)
    alpha = cluster.create_tenant("Alpha")
    cluster.create_topic(TOPIC, 1, 1)
    beta = cluster.create_tenant("Beta")
    cluster.create_topic(TOPIC, 1, 1)
    base_ms = int(time.time() * 1000) - 60_000
    produce(cluster, alpha, 0, 10, base_ms)
    produce(cluster, beta, 0, 8, base_ms)
    alpha_api, beta_api = api_client(alpha), api_client(beta)

    with RunningMonitor(cluster) as running:
        # A commit shows, with its lag and the time lag from the next record's own timestamp.
        committed_at = commit(cluster, alpha, "billing", {0: 4})
        shown = wait_for(lambda: partitions_shown(alpha_api, "billing").get(0), "alpha's first commit in the lag API", 30)
        first_latency = time.monotonic() - committed_at
        assert (shown["current_offset"], shown["log_end_offset"], shown["lag"]) == (4, 10, 6)
        assert shown["time_lag_seconds"] is not None and shown["time_lag_seconds"] >= 50
        assert partitions_shown(beta_api, "billing") == {}  # another tenant's group of the same name is not beta's

        # Each further commit shows within the bound.
        latencies = [first_latency]
        for offset in (6, 8, 10):
            committed_at = commit(cluster, alpha, "billing", {0: offset})
            wait_for(lambda offset=offset: partitions_shown(alpha_api, "billing").get(0, {}).get("current_offset") == offset or None, f"commit {offset}", 30)
            latencies.append(time.monotonic() - committed_at)
        assert max(latencies[1:]) <= VISIBLE_WITHIN_SECONDS, latencies
        caught_up = wait_for(lambda: (row := partitions_shown(alpha_api, "billing").get(0)) and row["lag"] == 0 and row["status"] == "OK" and row, "OK", 10)
        assert caught_up["group_status"] == "OK"

        # The consumer stalls while records keep coming: the ring moves past its last commit -> STOP.
        produce(cluster, alpha, 0, 5, base_ms + 10_000)
        stopped = wait_for(lambda: (row := partitions_shown(alpha_api, "billing").get(0)) and row["status"] == "STOP" and row, "STOP", 60)
        assert stopped["lag"] == 5 and stopped["group_status"] == "ERROR" and stopped["lag_rate"] is not None and stopped["lag_rate"] > 0

        # A transaction commits alpha's etl offsets and hangs; beta's group on the same offsets partition still shows.
        plain_group = same_offsets_partition(alpha.tenant_id, "etl", beta.tenant_id)
        producer = Producer(client_config(cluster, alpha, **{"transactional.id": "etl-worker"}))
        group_consumer = Consumer(client_config(cluster, alpha, **{"group.id": "etl", "enable.auto.commit": False}))
        try:
            producer.init_transactions(30)
            producer.begin_transaction()
            producer.produce(TOPIC, value=b"out", partition=0)
            producer.send_offsets_to_transaction([TopicPartition(TOPIC, 0, 3)], group_consumer.consumer_group_metadata(), 30)
            committed_at = commit(cluster, beta, plain_group, {0: 2})
            wait_for(lambda: partitions_shown(beta_api, plain_group).get(0), "beta's commit behind alpha's open transaction", 30)
            assert time.monotonic() - committed_at <= VISIBLE_WITHIN_SECONDS
            running.rounds_pass(2)
            assert partitions_shown(alpha_api, "etl") == {}  # pending: not visible before its COMMIT marker

            producer.commit_transaction(30)
            wait_for(lambda: partitions_shown(alpha_api, "etl").get(0, {}).get("current_offset") == 3 or None, "etl at 3 after COMMIT", 30)

            producer.begin_transaction()
            producer.send_offsets_to_transaction([TopicPartition(TOPIC, 0, 7)], group_consumer.consumer_group_metadata(), 30)
            producer.abort_transaction(30)
            commit(cluster, beta, plain_group, {0: 5})  # a later record on the same partition: the abort marker was read before it
            wait_for(lambda: partitions_shown(beta_api, plain_group).get(0, {}).get("current_offset") == 5 or None, "beta's later commit", 30)
            running.rounds_pass(1)
            assert partitions_shown(alpha_api, "etl")[0]["current_offset"] == 3  # the aborted offsets never count
        finally:
            group_consumer.close()
            producer.close() if hasattr(producer, "close") else None

    # A restarted evaluator resumes with the windows it saved: still STOP without any new commit.
    with RunningMonitor(cluster) as restarted:
        restarted.rounds_pass(2)
        resumed = partitions_shown(alpha_api, "billing")[0]
        assert (resumed["status"], resumed["current_offset"]) == ("STOP", 10)
        assert restarted.monitor.book.window_count() == 3  # alpha billing, alpha etl, beta's plain group
