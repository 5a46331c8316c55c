"""The usage job against a real broker's ``__usage`` and the test database: incremental,
idempotent when run again over the same records, and right after a run that died half-way.

The broker runs in the test process with metering off, so ``__usage`` holds exactly the
records the test writes (with the brokers' codec, keyed and partitioned by node as brokers do).
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc
from log_formats.usage_records import PartitionRow, TrafficRow, UsageRow, encode
from spark_pipelines.jobs import usage as usage_job
from spark_pipelines.jobs.entrypoint import RESULT_PREFIX, run_job
from spark_pipelines.jobs.usage import InvalidUsageStateError, UsagePaths, cursor_offsets
from spark_pipelines.read_range import nothing_to_read, pending_range
from spark_pipelines.settings import PipelineSettings
from tests.broker_nodes.security.managed_cluster import FAST_CONFIGS, INTERNAL, INTERNAL_TOKEN, brokers, topic
from tests.support.in_process_broker import InProcessBroker
from webapp.accounts.models import Tenant
from webapp.metering import writer
from webapp.metering.models import UsageAggregate
from weir import Producer

pytestmark = [pytest.mark.django_db]

TENANT_A = "tn-usagejoba"
TENANT_B = "tn-usagejobb"
USAGE_PARTITIONS = 2  # node n's rows go to partition n - 1
INTERVAL_MS = 60_000
DAY = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
DAY_MS = int(DAY.timestamp() * 1000)
HOUR = dt.timedelta(hours=1)


def traffic(node: int, window: int, tenant: str, topic_name: str, partition: int, **counters: int) -> TrafficRow:
    start = DAY_MS + window * INTERVAL_MS
    return TrafficRow(node, f"inc{node}", window, start, start + INTERVAL_MS, tenant, topic_name, partition, **counters)


def stored(node: int, window: int, tenant: str, topic_name: str, partition: int, size: int) -> PartitionRow:
    start = DAY_MS + window * INTERVAL_MS
    return PartitionRow(node, f"inc{node}", window, start, start + INTERVAL_MS, tenant, topic_name, partition, size, 0, 1, 1, 0)


# Window 58, 59: 00:58-01:00 (hour 0); 60, 61: hour 1; 1440: the next day.
FIRST_BATCH: list[UsageRow | bytes] = [
    traffic(1, 58, TENANT_A, "orders", 0, bytes_in=100, records_in=10, produce_requests=1),
    traffic(1, 59, TENANT_A, "orders", 0, bytes_in=100, records_in=10, produce_requests=1),
    traffic(1, 59, TENANT_A, "orders", 0, bytes_in=100, records_in=10, produce_requests=1),  # re-sent
    stored(1, 58, TENANT_A, "orders", 0, 1000),
    stored(1, 59, TENANT_A, "orders", 0, 1100),
    traffic(2, 59, TENANT_A, "orders", 1, bytes_out=500, records_out=5, fetch_requests=2),
    traffic(2, 60, TENANT_B, "orders", 0, bytes_in=7, records_in=1, produce_requests=1),
    stored(2, 60, TENANT_B, "orders", 0, 70),
    stored(2, 60, "", "__consumer_offsets", 0, 5),  # internal: in Parquet, not in the database
    b"{not json",
]
SECOND_BATCH: list[UsageRow | bytes] = [
    traffic(1, 61, TENANT_A, "orders", 0, bytes_in=1000, records_in=100, produce_requests=1),
    traffic(2, 61, TENANT_B, "orders", 0, bytes_in=3, records_in=1, produce_requests=1),  # hour 1 of B spans both runs
    traffic(1, 1440, TENANT_A, "payments", 0, bytes_in=1, records_in=1, produce_requests=1),
]


class UsageBroker:
    """An in-process managed broker with ``__usage`` and nothing metering into it."""

    def __init__(self, data_dir: Path) -> None:
        self.broker = InProcessBroker(
            data_dir, {**FAST_CONFIGS, "security.required": "true", "metering.enabled": "false"}, environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN}
        ).start()
        self.bootstrap = f"127.0.0.1:{self.broker.port}"
        request = admin_pb2.ApplyPartitionsRequest(
            version=1, cluster_id="usage-job-test", brokers=brokers((1, self.broker.port)), topics=[topic("", "__usage", partitions=USAGE_PARTITIONS)]
        )
        admin_pb2_grpc.AdminStub(self.broker.channel).ApplyPartitions(request, metadata=INTERNAL)

    def append(self, rows: list[UsageRow | bytes]) -> None:
        """Append rows as brokers do: key = node id, partition = node - 1 (garbage to partition 0)."""
        producer = Producer({"bootstrap.servers": self.bootstrap, "weir.internal.token": INTERNAL_TOKEN, "linger.ms": 0})
        failures: list[object] = []
        for row in rows:
            node = 1 if isinstance(row, bytes) else row.node_id
            producer.produce(
                "__usage",
                value=row if isinstance(row, bytes) else encode(row),
                key=str(node).encode(),
                partition=node - 1,
                on_delivery=lambda error, _message: failures.append(error) if error else None,
            )
        assert producer.flush(15) == 0 and not failures, f"appending to __usage failed: {failures}"

    def stop(self) -> None:
        self.broker.stop()


@pytest.fixture
def usage_broker(tmp_path: Path) -> Iterator[UsageBroker]:
    broker = UsageBroker(tmp_path / "broker")
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def settings(usage_broker: UsageBroker, tmp_path: Path) -> PipelineSettings:
    Tenant.objects.create(name="A", slug="usage-job-a", public_id=TENANT_A)
    Tenant.objects.create(name="B", slug="usage-job-b", public_id=TENANT_B)
    return PipelineSettings(
        bootstrap_servers=usage_broker.bootstrap,
        internal_token=INTERNAL_TOKEN,
        tls_ca=None,
        data_dir=tmp_path,
        output_dir=tmp_path / "pipelines",
        spark_master="local[2]",
    )


def database_rows() -> dict[tuple[str, str, str, dt.datetime], tuple[int, ...]]:
    """(tenant, topic, granularity, bucket_start) -> (bytes_in, records_in, bytes_out, records_out,
    produce_requests, fetch_requests, storage_bytes_avg, storage_bytes_peak, partition_hours * 3600)."""
    return {
        (row.tenant.public_id, row.topic, row.granularity, row.bucket_start): (
            row.bytes_in,
            row.records_in,
            row.bytes_out,
            row.records_out,
            row.produce_requests,
            row.fetch_requests,
            row.storage_bytes_avg,
            row.storage_bytes_peak,
            round(row.partition_hours * 3600),
        )
        for row in UsageAggregate.objects.select_related("tenant")
    }


def parquet_rows(spark: SparkSession, path: Path) -> list[tuple[object, ...]]:
    return sorted((tuple(row) for row in spark.read.parquet(str(path)).collect()), key=repr)


def parquet_snapshot(spark: SparkSession, paths: UsagePaths) -> dict[str, list[tuple[object, ...]]]:
    return {name: parquet_rows(spark, getattr(paths, name)) for name in ("raw", "hourly", "daily", "rejected")}


AFTER_FIRST = {
    (TENANT_A, "orders", "hour", DAY): (200, 20, 500, 5, 2, 2, 1050, 1100, 120),
    (TENANT_A, "orders", "day", DAY): (200, 20, 500, 5, 2, 2, 1050, 1100, 120),
    (TENANT_B, "orders", "hour", DAY + HOUR): (7, 1, 0, 0, 1, 0, 70, 70, 60),
    (TENANT_B, "orders", "day", DAY): (7, 1, 0, 0, 1, 0, 70, 70, 60),
}
AFTER_SECOND = {
    **AFTER_FIRST,
    (TENANT_A, "orders", "hour", DAY + HOUR): (1000, 100, 0, 0, 1, 0, 0, 0, 0),
    (TENANT_A, "orders", "day", DAY): (1200, 120, 500, 5, 3, 2, 1050, 1100, 120),
    (TENANT_B, "orders", "hour", DAY + HOUR): (10, 2, 0, 0, 2, 0, 70, 70, 60),
    (TENANT_B, "orders", "day", DAY): (10, 2, 0, 0, 2, 0, 70, 70, 60),
    (TENANT_A, "payments", "hour", DAY + 24 * HOUR): (1, 1, 0, 0, 1, 0, 0, 0, 0),
    (TENANT_A, "payments", "day", DAY + 24 * HOUR): (1, 1, 0, 0, 1, 0, 0, 0, 0),
}


# Under load this test (with the Spark session's start, which the first Spark test pays) passed the
# default 300 s, and a timeout that cuts a py4j call breaks the session for every later Spark test.
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_runs_complete_a_run_that_died_half_way_change_nothing_when_repeated_and_read_only_new_records(
    spark: SparkSession, usage_broker: UsageBroker, settings: PipelineSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One test, four runs of the job: each run costs seconds of Spark.
    paths = UsagePaths.under(settings.output_dir)
    usage_broker.append(FIRST_BATCH)

    def database_down(granularity: str, rows: object) -> int:
        raise ConnectionError("the control-plane database went away")

    with monkeypatch.context() as patch:
        patch.setattr(writer, "write_usage", database_down)
        with pytest.raises(ConnectionError):
            usage_job.run(spark, settings)
    assert writer.load_state("usage") == {} and database_rows() == {}
    assert len(parquet_rows(spark, paths.raw)) == 8, "the died run stored the deduplicated raw rows"

    recovered = usage_job.run(spark, settings)
    assert (recovered["records_read"], recovered["rejected"], recovered["raw_rows_added"], recovered["rows"]) == (10, 1, 0, 4)
    assert recovered["rejected_examples"] == [{"partition": 0, "offset": 5, "problem": "neither a binary row nor a JSON object of schema weir.usage/1"}]
    assert database_rows() == AFTER_FIRST
    snapshot = parquet_snapshot(spark, paths)
    assert len(snapshot["rejected"]) == 1
    assert any("__consumer_offsets" in row for row in snapshot["hourly"]), "internal topics' storage stays in Parquet"

    writer.save_state("usage", {})  # as if the run had died just before saving its cursor
    again = usage_job.run(spark, settings)
    assert (again["records_read"], again["raw_rows_added"], again["rows"]) == (10, 0, 4)
    assert database_rows() == AFTER_FIRST
    assert parquet_snapshot(spark, paths) == snapshot

    usage_broker.append(SECOND_BATCH)
    second = usage_job.run(spark, settings)
    assert (second["records_read"], second["raw_rows_added"], second["rejected"], second["rows"]) == (3, 3, 0, 6)
    assert second["dates"] == ["2026-03-01", "2026-03-02"]
    assert second["offsets"] == {"__usage": {"0": 8, "1": 5}}
    assert database_rows() == AFTER_SECOND
    assert {row[-1] for row in parquet_rows(spark, paths.hourly)} == {dt.date(2026, 3, 1), dt.date(2026, 3, 2)}

    idle = usage_job.run(spark, settings)
    assert (idle["records_read"], idle["rows"]) == (0, 0)


def test_cursor_and_pending_range() -> None:
    assert cursor_offsets({}) == {}
    cursor = cursor_offsets({"version": 1, "offsets": {"__usage": {"0": 5, "7": 1}}})
    starting, ending = pending_range(cursor, {"__usage": {0: 5, 1: 3}})
    assert starting == {"__usage": {"0": 5}} and ending == {"__usage": {"0": 5, "1": 3}}  # partition 7 is gone, 1 is new
    assert not nothing_to_read(starting, ending)
    assert nothing_to_read({"__usage": {"0": 5, "1": 3}}, ending)
    with pytest.raises(InvalidUsageStateError, match="version 1"):
        cursor_offsets({"offsets": {"__usage": {"0": 5}}})
    with pytest.raises(InvalidUsageStateError, match="partition numbers"):
        cursor_offsets({"version": 1, "offsets": {"__usage": {"zero": 5}}})


class FakeSession:
    def __init__(self) -> None:
        self.sparkContext = self
        self.stopped = False

    def setLogLevel(self, level: str) -> None:
        pass

    def stop(self) -> None:
        self.stopped = True


def test_main_prints_one_result_line_or_fails_with_the_error_on_stderr() -> None:
    session = FakeSession()
    out, err = io.StringIO(), io.StringIO()
    assert (
        run_job("usage", lambda spark, settings: {"rows": 3, "dates": [dt.date(2026, 3, 1)]}, session_factory=lambda name: session, stdout=out, stderr=err) == 0
    )  # type: ignore[arg-type,return-value]
    assert out.getvalue() == RESULT_PREFIX + '{"dates": ["2026-03-01"], "rows": 3}\n' and session.stopped

    def broken(spark: object, settings: object) -> dict[str, int]:
        raise RuntimeError("brokers unreachable")

    out, err = io.StringIO(), io.StringIO()
    assert run_job("usage", broken, session_factory=lambda name: FakeSession(), stdout=out, stderr=err) == 1  # type: ignore[arg-type]
    assert out.getvalue() == "" and err.getvalue().splitlines()[-1] == "usage job failed: RuntimeError: brokers unreachable"
