"""``format("weir")`` end to end: Spark reads a managed broker with a tenant's API key or the internal token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_pipelines.source import KAFKA_SCHEMA, kafka_schema, resolve_offsets
from tests.spark_pipelines.source_cluster import (
    BASE_TIMESTAMP_MS,
    ORDERS_PARTITIONS,
    ORDERS_RECORDS,
    TENANT_A,
    USAGE_RECORDS,
    SourceCluster,
    order_record,
    running_source_cluster,
)

# Longest a streaming run may take before the test gives up on it.
STREAM_RUN_SECONDS = 90
CONNECT_BACK_ATTEMPTS = 3  # Spark's fixed connect-back wait of a streaming Python source, on a loaded machine


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SourceCluster]:
    with running_source_cluster(tmp_path_factory.mktemp("weir-source") / "node-1") as running:
        yield running


def read(spark: SparkSession, options: dict[str, str]) -> DataFrame:
    return spark.read.format("weir").options(**options).load()


def rows_of(frame: DataFrame) -> list[tuple]:
    """Every column, the timestamp as epoch milliseconds (independent of the driver's time zone), sorted."""
    columns = [F.col(name) if name != "timestamp" else F.unix_millis("timestamp").alias("timestamp") for name in frame.columns]
    selected = frame.select(*columns)
    rows = [tuple(row) for row in selected.collect()]
    return sorted(rows, key=lambda row: (row[2], row[3], row[4]))


def expected_orders(indexes: range | list[int]) -> list[tuple]:
    rows = []
    for index in indexes:
        record = order_record(index)
        rows.append((record.key, record.value, "orders", record.partition, record.offset, record.timestamp_ms, 0))
    return sorted(rows, key=lambda row: (row[2], row[3], row[4]))


def test_batch_read_has_the_kafka_columns_and_every_record_exactly(spark: SparkSession, cluster: SourceCluster) -> None:
    frame = read(spark, cluster.tenant_options(subscribe="orders"))
    assert frame.schema == KAFKA_SCHEMA
    assert [field.name for field in frame.schema.fields] == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    assert rows_of(frame) == expected_orders(range(ORDERS_RECORDS))
    assert frame.rdd.getNumPartitions() == ORDERS_PARTITIONS  # one input partition per topic-partition


def test_json_offsets_bound_each_partition_and_default_the_others(spark: SparkSession, cluster: SourceCluster) -> None:
    options = cluster.tenant_options(
        subscribe="orders",
        startingOffsets=json.dumps({"orders": {"0": 2, "1": -2}}),
        endingOffsets=json.dumps({"orders": {"0": 5, "2": 3}}),
    )
    # Partition 0: offsets 2..4; partition 1: earliest..latest (all 10); partition 2: earliest..3.
    wanted = [index for index in range(ORDERS_RECORDS) if (index % 3 == 0 and 2 <= index // 3 < 5) or index % 3 == 1 or (index % 3 == 2 and index // 3 < 3)]
    assert rows_of(read(spark, options)) == expected_orders(wanted)


def test_resolve_offsets_pins_the_end_of_every_partition(spark: SparkSession, cluster: SourceCluster) -> None:
    latest = resolve_offsets(cluster.tenant_options(subscribe="orders"))
    assert latest == {"orders": {0: 10, 1: 10, 2: 10}}
    assert resolve_offsets(cluster.tenant_options(assign='{"orders": [1]}'), spec="earliest") == {"orders": {1: 0}}
    pinned = {topic: {str(partition): offset - 4 for partition, offset in offsets.items()} for topic, offsets in latest.items()}
    frame = read(
        spark, cluster.tenant_options(subscribe="orders", startingOffsets=json.dumps(pinned), endingOffsets=json.dumps({"orders": {"0": 10, "1": 10, "2": 10}}))
    )
    assert frame.count() == 3 * 4


def test_large_ranges_are_split_into_several_input_partitions(spark: SparkSession, cluster: SourceCluster) -> None:
    by_max = read(spark, cluster.tenant_options(subscribe="orders", maxRecordsPerPartition="4"))
    assert by_max.rdd.getNumPartitions() == 3 * 3  # each range of 10 offsets in pieces of 3, 3 and 4
    assert rows_of(by_max) == expected_orders(range(ORDERS_RECORDS))
    by_min = read(spark, cluster.tenant_options(assign='{"orders": [0]}', minPartitions="4"))
    assert by_min.rdd.getNumPartitions() == 4
    assert rows_of(by_min) == expected_orders(range(0, ORDERS_RECORDS, 3))


def test_include_headers_adds_the_headers_column_null_without_headers(spark: SparkSession, cluster: SourceCluster) -> None:
    frame = read(spark, cluster.tenant_options(assign='{"orders": [1]}', includeHeaders="true"))
    assert frame.schema == kafka_schema(True)
    headers = {row.offset: row.headers for row in frame.select("offset", "headers").collect()}
    for index in range(1, ORDERS_RECORDS, 3):
        record = order_record(index)
        got = headers[record.offset]
        assert (None if got is None else [(header.key, header.value) for header in got]) == record.headers


def test_a_wrong_secret_is_refused_clearly(spark: SparkSession, cluster: SourceCluster) -> None:
    options = cluster.tenant_options(subscribe="orders")
    options["sasl.password"] = "not-the-secret"
    with pytest.raises(Exception, match=r"AuthenticationFailedError: weir source: the brokers refused the credentials: .*invalid API key or secret") as raised:
        read(spark, options).collect()
    # Spark's wrapping and the source's one line, without the Python traceback Spark would put in between.
    assert "Traceback" not in str(raised.value)
    assert len(str(raised.value).strip().splitlines()) <= 2, str(raised.value)


def test_the_internal_token_reads_qualified_tenant_topics_and_internal_topics(spark: SparkSession, cluster: SourceCluster) -> None:
    frame = read(spark, cluster.internal_options(subscribe=f"{TENANT_A}~orders,__usage"))
    values = {(row.topic, row.value) for row in frame.select("topic", "value").collect()}
    assert {value for topic, value in values if topic == f"{TENANT_A}~orders"} == {f"v{index}".encode() for index in range(ORDERS_RECORDS)}
    # The broker's own metering appends usage records to __usage as well.
    assert {f"usage-{index}".encode() for index in range(USAGE_RECORDS)} <= {value for topic, value in values if topic == "__usage"}
    assert {topic for topic, _ in values} == {f"{TENANT_A}~orders", "__usage"}


def test_streaming_available_now_reads_everything_once_then_only_new_records(spark: SparkSession, cluster: SourceCluster, tmp_path: Path) -> None:
    cluster.produce("stream", [(index % 2, None, f"first-{index}".encode(), BASE_TIMESTAMP_MS, None) for index in range(4)])
    checkpoint = str(tmp_path / "checkpoint")

    def run() -> list[list[bytes]]:
        """One availableNow run over the same checkpoint: the values of each micro-batch that had rows.

        Spark waits a fixed 10 s for the Python process that runs a streaming Python source to connect
        back; on a machine loaded far beyond its cores that start can take longer, and the query ends
        in INITIALIZING, before any offset is committed. Such a run is started again (at most twice);
        any other failure is the test's.
        """
        for attempt in range(CONNECT_BACK_ATTEMPTS):
            try:
                return run_once()
            except StreamingQueryException as error:
                if "failed to connect back" not in str(error) or attempt == CONNECT_BACK_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def run_once() -> list[list[bytes]]:
        batches: list[list[bytes]] = []
        stream = (
            spark.readStream.format("weir").options(**cluster.tenant_options(subscribe="stream", startingOffsets="earliest", maxOffsetsPerTrigger="3")).load()
        )
        query = (
            stream.writeStream.foreachBatch(lambda frame, _batch_id: batches.append(sorted(row.value for row in frame.collect())))
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        try:
            assert query.awaitTermination(STREAM_RUN_SECONDS), f"the streaming run did not finish within {STREAM_RUN_SECONDS} s"
        finally:
            query.stop()
        return [batch for batch in batches if batch]

    first = run()
    assert sorted(value for batch in first for value in batch) == sorted(f"first-{index}".encode() for index in range(4))
    assert len(first) == 2 and all(len(batch) <= 3 for batch in first)  # maxOffsetsPerTrigger held
    cluster.produce("stream", [(index % 2, None, f"second-{index}".encode(), BASE_TIMESTAMP_MS, None) for index in range(3)])
    second = run()
    assert sorted(value for batch in second for value in batch) == sorted(f"second-{index}".encode() for index in range(3))


def test_sink_writes_what_the_source_reads_back_and_names_what_is_wrong(spark: SparkSession, cluster: SourceCluster) -> None:
    # In this module to share its broker: writing is a tenant's key with WRITE on "sink" only.
    from pyspark.errors import PySparkException

    headers = "array(named_struct('key', 'h', 'value', CAST(CONCAT('v', id) AS BINARY)))"
    frame = spark.range(6).selectExpr(
        "CAST(id AS STRING) AS key", "CAST(CONCAT('value-', id) AS BINARY) AS value", "CAST(id % 2 AS INT) AS partition", f"{headers} AS headers"
    )
    frame.write.format("weir").options(**cluster.tenant_options(topic="sink")).mode("append").save()
    back = read(spark, cluster.tenant_options(subscribe="sink", includeHeaders="true"))
    got = sorted((bytes(row.key), bytes(row.value), row.partition, [(h.key, bytes(h.value)) for h in row.headers]) for row in back.collect())
    assert got == [(str(i).encode(), f"value-{i}".encode(), i % 2, [("h", f"v{i}".encode())]) for i in range(6)]
    with pytest.raises(PySparkException, match="writing to topic 'orders' failed"):  # READ on orders, no WRITE
        frame.select("value").write.format("weir").options(**cluster.tenant_options(topic="orders")).mode("append").save()
    with pytest.raises(PySparkException, match="give the 'topic' option or a 'topic' column"):
        frame.select("value").write.format("weir").options(**cluster.tenant_options()).mode("append").save()
