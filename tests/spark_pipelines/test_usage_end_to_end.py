"""The usage pipeline end to end: real brokers meter two tenants' traffic into ``__usage`` and the
usage job turns it into the control plane's figures, exactly what the test itself counted (lag
has its own end-to-end test, test_lag_monitor_end_to_end.py).

A controller and two brokers as processes (half-second metering windows,
``WEIR_BROKER_METERING_INTERVAL_MS``); three topics of two tenants (one name in both),
replicated on both brokers, so the rows come from both brokers and replication fetches are
there to be (wrongly) counted. Each tenant produces known records in two phases, and a group
of each tenant consumes exactly the first phase and commits it. The test counts records
itself (acknowledged deliveries, consumed messages) and bytes from the batches the leaders
stored (the batches are what brokers count: bytes in is the appended batches, bytes out the
returned ones, read once from the first offset to the end of the first phase).

The job runs in-process (the session's Spark, the test database) once ``__usage`` holds the
traffic (checked with an internal-token consumer that the brokers do not meter).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pyarrow.dataset
import pytest
from pyspark.sql import SparkSession

from log_formats.log_files import LOG_SUFFIX, partition_directory_name
from spark_pipelines.jobs import usage as usage_job
from spark_pipelines.settings import PipelineSettings
from tests.support.real_cluster import ClusterUnavailableError, RealCluster, TenantAccess, database_url_for_subprocesses
from tests.support.usage_topic import UsageReader
from webapp.catalog.models import Partition
from webapp.metering.models import UsageAggregate
from weir import Consumer, Producer, TopicPartition
from weir.consumer import consume_available
from weir.records import iter_batch_positions

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(240)]

INTERVAL_MS = 500
FETCH_WAIT_MS = 50  # the consumers' long polls: short, so none is still parked when phase 2 appends
USAGE_SECONDS = 30.0  # longest the brokers may take to show the traffic in __usage
# (tenant, topic) -> partitions, and records per partition produced in phase 1 and phase 2, and their size.
TOPICS = {("acme", "orders"): 2, ("acme", "clicks"): 1, ("globex", "orders"): 2}
PHASE_1 = {("acme", "orders"): 40, ("acme", "clicks"): 25, ("globex", "orders"): 12}
PHASE_2 = {("acme", "orders"): 9, ("acme", "clicks"): 30, ("globex", "orders"): 6}
VALUE_BYTES = {("acme", "orders"): 120, ("acme", "clicks"): 40, ("globex", "orders"): 300}

Key = tuple[str, str]  # (tenant id, topic)


@pytest.fixture
def cluster(tmp_path: Path, transactional_db: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[RealCluster]:
    try:
        database_url_for_subprocesses()
    except ClusterUnavailableError as error:
        pytest.skip(str(error))
    monkeypatch.setenv("WEIR_BROKER_METERING_INTERVAL_MS", str(INTERVAL_MS))  # the brokers inherit it
    running = RealCluster(tmp_path / "cluster", broker_count=2)
    try:
        yield running.start()
    finally:
        running.close()


def config(cluster: RealCluster, access: TenantAccess, **overrides: object) -> dict[str, object]:
    return {"bootstrap.servers": cluster.bootstrap_servers(), "sasl.username": access.api_key, "sasl.password": access.api_secret, **overrides}


def produce(cluster: RealCluster, access: TenantAccess, topic: str, partitions: int, count: int, value_bytes: int, phase: str) -> int:
    """``count`` records of ``value_bytes`` to each partition; returns how many were acknowledged."""
    producer = Producer(config(cluster, access, **{"linger.ms": 5, "acks": "all"}))
    delivered: list[int] = []
    failures: list[object] = []
    for partition in range(partitions):
        for index in range(count):
            value = f"{phase}-{partition}-{index}-".encode().ljust(value_bytes, b"x")
            producer.produce(
                topic, value=value, partition=partition, on_delivery=lambda error, _message: failures.append(error) if error else delivered.append(1)
            )
    assert producer.flush(30) == 0 and not failures, f"produce to {topic} failed: {failures[:3]}"
    producer.close(5)
    return len(delivered)


def consume_and_commit(cluster: RealCluster, access: TenantAccess, ends: dict[tuple[str, int], int]) -> Counter[str]:
    """Read every partition of ``ends`` from offset 0 to its end once and commit the ends as the
    tenant's group; returns the records read per topic."""
    consumer = Consumer(config(cluster, access, **{"group.id": "billing", "enable.auto.commit": False, "fetch.wait.max.ms": FETCH_WAIT_MS}))
    read: Counter[str] = Counter()
    try:
        consumer.assign([TopicPartition(topic, partition, 0) for topic, partition in ends])
        positions = {key: 0 for key in ends}
        deadline = time.monotonic() + 30
        while any(positions[key] < end for key, end in ends.items()):
            assert time.monotonic() < deadline, f"consumer stuck at {positions}, ends {ends}"
            for message in consume_available(consumer, 500, 0.5):
                if message.error() is None:
                    read[message.topic()] += 1
                    positions[(message.topic(), message.partition())] = message.offset() + 1
        assert positions == ends, f"read past the first phase: {positions}, ends {ends}"
        consumer.commit(offsets=[TopicPartition(topic, partition, end) for (topic, partition), end in ends.items()], asynchronous=False)
    finally:
        consumer.close()
    # A closed consumer's last long poll is answered (and counted) when records arrive: let it expire.
    time.sleep(4 * FETCH_WAIT_MS / 1000)
    return read


def stored_batches(cluster: RealCluster, tenant_id: str, topic: str, partition: int) -> list[tuple[int, int, int]]:
    """(base offset, bytes, records) of every batch the partition's leader stored."""
    leader = Partition.objects.get(topic__tenant__public_id=tenant_id, topic__name=topic, index=partition).leader
    directory = cluster.brokers[leader].data_dir / partition_directory_name(f"{tenant_id}~{topic}", partition)
    batches = []
    for path in sorted(directory.glob(f"*{LOG_SUFFIX}")):
        batches += [(header.base_offset, header.size, header.records_count) for _, header in iter_batch_positions(path.read_bytes())]
    return batches


def usage_in_topic(reader: UsageReader) -> dict[Key, tuple[int, int, int, int]]:
    """(bytes in, records in, bytes out, records out) per tenant and topic in the deduplicated rows."""
    totals: dict[Key, Counter[str]] = {}
    for (tenant_id, topic, _partition), counters in reader.traffic().items():
        if tenant_id:
            totals.setdefault((tenant_id, topic), Counter()).update(counters)
    return {key: (c["bytes_in"], c["records_in"], c["bytes_out"], c["records_out"]) for key, c in totals.items()}


def peak_storage(reader: UsageReader, partitions: dict[Key, int]) -> dict[Key, int]:
    """Per tenant and topic, the largest sum of its partitions' log sizes over the windows in
    which every one of its ``partitions[key]`` partitions was reported (the job's peak)."""
    by_window: dict[Key, dict[int, list[int]]] = {}
    for row in reader.partition_rows():
        if row.tenant_id:
            by_window.setdefault((row.tenant_id, row.topic), {}).setdefault(row.window_start_ms, []).append(row.log_size_bytes)
    return {key: max((sum(sizes) for sizes in windows.values() if len(sizes) == partitions[key]), default=0) for key, windows in by_window.items()}


def database_totals(granularity: str) -> dict[Key, tuple[int, int, int, int]]:
    totals: dict[Key, Counter[str]] = {}
    for row in UsageAggregate.objects.filter(granularity=granularity).select_related("tenant"):
        totals.setdefault((row.tenant.public_id, row.topic), Counter()).update(
            {"bytes_in": row.bytes_in, "records_in": row.records_in, "bytes_out": row.bytes_out, "records_out": row.records_out}
        )
    return {key: (c["bytes_in"], c["records_in"], c["bytes_out"], c["records_out"]) for key, c in totals.items()}


def test_usage_job_reports_exactly_what_two_tenants_produced_and_consumed(cluster: RealCluster, spark: SparkSession, tmp_path: Path) -> None:
    tenants: dict[str, TenantAccess] = {}
    for name in ("acme", "globex"):
        tenants[name] = cluster.create_tenant(name.capitalize())
        for (owner, topic), partitions in TOPICS.items():
            if owner == name:
                cluster.create_topic(topic, partitions, 2)
    ids = {name: access.tenant_id for name, access in tenants.items()}
    produced: Counter[Key] = Counter()
    consumed: Counter[Key] = Counter()

    for (name, topic), partitions in TOPICS.items():
        produced[(ids[name], topic)] += produce(cluster, tenants[name], topic, partitions, PHASE_1[(name, topic)], VALUE_BYTES[(name, topic)], "one")
    first_phase_ends: dict[Key, dict[int, int]] = {}
    for name, access in tenants.items():
        ends = {(topic, partition): PHASE_1[(owner, topic)] for (owner, topic), count in TOPICS.items() if owner == name for partition in range(count)}
        for topic, records in consume_and_commit(cluster, access, ends).items():
            consumed[(ids[name], topic)] = records
        for (topic, partition), end in ends.items():
            first_phase_ends.setdefault((ids[name], topic), {})[partition] = end
    for (name, topic), partitions in TOPICS.items():
        produced[(ids[name], topic)] += produce(cluster, tenants[name], topic, partitions, PHASE_2[(name, topic)], VALUE_BYTES[(name, topic)], "two")

    # What the brokers must have counted: records as the test counted them, bytes from the stored batches.
    expected: dict[Key, tuple[int, int, int, int]] = {}
    stored_bytes: dict[Key, int] = {}
    for (name, topic), partitions in TOPICS.items():
        key = (ids[name], topic)
        batches = [
            batch for partition in range(partitions) for batch in ((partition, *entry) for entry in stored_batches(cluster, ids[name], topic, partition))
        ]
        assert sum(records for _, _, _, records in batches) == produced[key], f"{key}: the leaders store what was acknowledged"
        read_batches = [(size, records) for partition, base, size, records in batches if base < first_phase_ends[key][partition]]
        assert sum(records for _, records in read_batches) == consumed[key], f"{key}: phase 1 ends on a batch boundary"
        stored_bytes[key] = sum(size for _, _, size, _ in batches)
        expected[key] = (stored_bytes[key], produced[key], sum(size for size, _ in read_batches), consumed[key])

    partitions_of = {(ids[name], topic): count for (name, topic), count in TOPICS.items()}
    reader = UsageReader(cluster.bootstrap_servers(), cluster.internal_token)
    try:
        reader.read_until(
            lambda r: usage_in_topic(r) == expected and peak_storage(r, partitions_of) == stored_bytes,
            USAGE_SECONDS,
            f"the traffic {expected} and storage {stored_bytes} in __usage",
        )
    finally:
        reader.close()

    settings = PipelineSettings(
        bootstrap_servers=cluster.bootstrap_servers(),
        internal_token=cluster.internal_token,
        tls_ca=None,
        data_dir=tmp_path / "data",
        output_dir=tmp_path / "pipelines",
        spark_master="local[2]",
    )
    result = usage_job.run(spark, settings)

    assert result["rejected"] == 0 and result["records_read"] >= reader.records_read > 0
    assert database_totals("hour") == expected
    assert database_totals("day") == expected
    for key, size in stored_bytes.items():
        rows = UsageAggregate.objects.filter(tenant__public_id=key[0], topic=key[1], granularity="hour")
        assert max(row.storage_bytes_peak for row in rows) == size, f"{key}: peak storage is the topic's stored bytes"
        assert sum(row.partition_hours for row in rows) > 0
    daily = pyarrow.dataset.dataset(str(tmp_path / "pipelines" / "usage" / "daily"), format="parquet", partitioning="hive").to_table().to_pylist()
    parquet_totals: dict[Key, tuple[int, int, int, int]] = {}
    for row in daily:
        if row["tenant_id"]:
            before = parquet_totals.get((row["tenant_id"], row["topic"]), (0, 0, 0, 0))
            parquet_totals[(row["tenant_id"], row["topic"])] = tuple(
                a + b for a, b in zip(before, (row["bytes_in"], row["records_in"], row["bytes_out"], row["records_out"]))
            )  # type: ignore[assignment]
    assert parquet_totals == expected
