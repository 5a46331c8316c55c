"""The lag job against a real cluster: two tenants' groups (same group name, same topic name)
commit known offsets; two runs of the job give exactly the committed offsets, end offsets and
lags the test counted, Burrow's statuses, each tenant's own figures, the time lag from the
records' own timestamps, and Parquet rows.

One controller and one broker as processes (the controller shares the test's PostgreSQL
database); the job runs in-process with the session's Spark, writing to the test database.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_pipelines.jobs.lag import LagOptions, run
from spark_pipelines.settings import PipelineSettings
from tests.support.real_cluster import ClusterUnavailableError, RealCluster, TenantAccess, database_url_for_subprocesses
from webapp.metering.models import GroupLag, GroupLagHistory, PartitionLag
from weir import Consumer, Producer, TopicPartition

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "orders"
GROUP = "billing"  # both tenants use this group name and this topic name
RECORD_AGE_MS = 120_000  # records carry their own create times: record i at (test start - 120 s) + i s
# Records produced per (tenant, partition), and what each tenant's group commits first.
PRODUCED = {("alpha", 0): 10, ("alpha", 1): 6, ("beta", 0): 8}
FIRST_COMMITS = {("alpha", 0): 4, ("alpha", 1): 6, ("beta", 0): 3}


@pytest.fixture
def cluster(tmp_path: Path, transactional_db: None) -> Iterator[RealCluster]:
    try:
        database_url_for_subprocesses()
    except ClusterUnavailableError as error:
        pytest.skip(str(error))
    running = RealCluster(tmp_path / "cluster", broker_count=1)
    try:
        yield running.start()
    finally:
        running.close()


def tenant_config(cluster: RealCluster, access: TenantAccess, **overrides: object) -> dict[str, object]:
    return {"bootstrap.servers": cluster.bootstrap_servers(), "sasl.username": access.api_key, "sasl.password": access.api_secret, **overrides}


def produce(cluster: RealCluster, access: TenantAccess, counts: dict[int, int], base_ms: int) -> None:
    producer = Producer(tenant_config(cluster, access))
    for partition, count in counts.items():
        for index in range(count):
            producer.produce(TOPIC, value=f"{partition}-{index}".encode(), partition=partition, timestamp=base_ms + index * 1000)
    assert producer.flush(30) == 0


def consume_and_commit(cluster: RealCluster, access: TenantAccess, offsets: dict[int, int]) -> None:
    """Consume each partition up to ``offset`` (exclusive) from where the group stands, then commit."""
    consumer = Consumer(tenant_config(cluster, access, **{"group.id": GROUP, "enable.auto.commit": False, "auto.offset.reset": "earliest"}))
    try:
        consumer.assign([TopicPartition(TOPIC, partition) for partition in offsets])
        positions = {partition: 0 for partition in offsets}
        deadline = time.monotonic() + 30
        while any(positions[partition] < offset for partition, offset in offsets.items()) and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=100, timeout=1.0):
                if message.error() is None and message.offset() < offsets[message.partition()]:
                    positions[message.partition()] = message.offset() + 1
        assert positions == offsets, f"consumed up to {positions}, wanted {offsets}"
        consumer.commit(offsets=[TopicPartition(TOPIC, partition, offset) for partition, offset in offsets.items()], asynchronous=False)
    finally:
        consumer.close()


def current(tenant_id: str) -> tuple[dict[tuple[int, str], tuple], GroupLag]:
    partitions = {
        (row.partition, row.topic): (
            row.committed_offset,
            row.end_offset,
            row.log_start_offset,
            row.offset_lag,
            row.status,
            row.time_lag_seconds,
            row.retention_risk,
        )
        for row in PartitionLag.objects.filter(tenant__public_id=tenant_id, group=GROUP)
    }
    return partitions, GroupLag.objects.get(tenant__public_id=tenant_id, group=GROUP)


def time_lag(now_ms: int, base_ms: int, next_record: int) -> float:
    return (now_ms - (base_ms + next_record * 1000)) / 1000.0


def test_lag_job_reports_each_tenants_commits_against_real_brokers(cluster: RealCluster, spark, tmp_path: Path) -> None:
    cluster.wait_until(
        lambda: (rows := cluster.internal_partition_rows("__consumer_offsets")) and all(row.leader != -1 for row in rows), "__consumer_offsets led", 30
    )
    alpha = cluster.create_tenant("Alpha")
    cluster.create_topic(TOPIC, 2, 1)
    beta = cluster.create_tenant("Beta")
    cluster.create_topic(TOPIC, 1, 1)
    base_ms = int(time.time() * 1000) - RECORD_AGE_MS
    produce(cluster, alpha, {0: PRODUCED[("alpha", 0)], 1: PRODUCED[("alpha", 1)]}, base_ms)
    produce(cluster, beta, {0: PRODUCED[("beta", 0)]}, base_ms)
    consume_and_commit(cluster, alpha, {0: FIRST_COMMITS[("alpha", 0)], 1: FIRST_COMMITS[("alpha", 1)]})
    consume_and_commit(cluster, beta, {0: FIRST_COMMITS[("beta", 0)]})

    settings = PipelineSettings(
        bootstrap_servers=cluster.bootstrap_servers(),
        internal_token=cluster.internal_token,
        tls_ca=None,
        data_dir=tmp_path / "data",
        output_dir=tmp_path / "pipelines",
        spark_master="local[2]",
    )
    options = LagOptions(broker_timeout_seconds=20.0)
    first_now_ms = int(time.time() * 1000)
    first = run(spark, settings, options=options, clock=lambda: first_now_ms / 1000)

    assert first["commit"] == 3 and first["rows"] == 5, first  # 3 partition rows + 2 group rows
    alpha_partitions, alpha_group = current(alpha.tenant_id)
    beta_partitions, beta_group = current(beta.tenant_id)
    # A single commit with lag: the window spans 0 s, so any time since is longer -> STOP (Burrow's rule 3).
    assert alpha_partitions == {
        (0, TOPIC): (4, 10, 0, 6, "STOP", time_lag(first_now_ms, base_ms, 4), False),
        (1, TOPIC): (6, 6, 0, 0, "OK", 0.0, False),
    }
    assert beta_partitions == {(0, TOPIC): (3, 8, 0, 5, "STOP", time_lag(first_now_ms, base_ms, 3), False)}
    assert (
        alpha_group.status,
        alpha_group.max_lag,
        alpha_group.total_lag,
        alpha_group.partition_count,
        alpha_group.worst_partition,
        alpha_group.worst_status,
    ) == ("ERROR", 6, 6, 2, 0, "STOP")
    assert (beta_group.status, beta_group.max_lag, beta_group.total_lag, beta_group.partition_count) == ("ERROR", 5, 5, 1)
    assert alpha_group.max_time_lag_seconds == time_lag(first_now_ms, base_ms, 4)

    # Alpha's consumer moves on: lag 6 -> 3 at its second commit, evaluated right after it.
    consume_and_commit(cluster, alpha, {0: 7})
    second_now_ms = int(time.time() * 1000) + 1
    second = run(spark, settings, options=options, clock=lambda: second_now_ms / 1000)

    assert second["commit"] == 1 and second["groups"] == 2, second  # only the new commit was read
    alpha_partitions, alpha_group = current(alpha.tenant_id)
    assert alpha_partitions[(0, TOPIC)] == (7, 10, 0, 3, "OK", time_lag(second_now_ms, base_ms, 7), False)
    assert (alpha_group.status, alpha_group.max_lag, alpha_group.total_lag) == ("OK", 3, 3)
    beta_partitions, beta_group = current(beta.tenant_id)
    assert beta_partitions == {(0, TOPIC): (3, 8, 0, 5, "STOP", time_lag(second_now_ms, base_ms, 3), False)}  # no new commit, still stopped
    assert beta_group.status == "ERROR"
    assert GroupLagHistory.objects.filter(tenant__public_id=alpha.tenant_id, group=GROUP).count() == 2

    stored = spark.read.parquet(str(tmp_path / "pipelines" / "lag"))
    assert stored.count() == 6  # 3 partition rows per evaluation
    assert {
        (row["tenant_id"], row["partition"], row["offset_lag"])
        for row in stored.where(stored.evaluated_at == stored.agg({"evaluated_at": "max"}).first()[0]).collect()
    } == {(alpha.tenant_id, 0, 3), (alpha.tenant_id, 1, 0), (beta.tenant_id, 0, 5)}
