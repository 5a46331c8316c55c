"""``format("weir")`` over a log holding a batch that cannot be decoded (written into a stopped
broker's segment with a correct CRC): a clear DataLossError naming topic, partition and offsets
by default, the batch skipped with failOnDataLoss=false; and timestamps beyond Spark's range
read as null instead of failing the task."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from tests.support.bad_batches import append_to_stopped_log, batch_at, undecodable_batch_at
from tests.support.processes import BrokerProcess
from tests.support.raw_client import RawBroker

ANCIENT_MS = -(2**62)  # milliseconds Kafka allows, microseconds Spark cannot hold


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """Topic ``events``: offsets 0-2 good, 3-5 undecodable, 6-7 good with an ancient timestamp."""
    process = BrokerProcess(tmp_path_factory.mktemp("spark-bad-batch") / "data").start()
    client = RawBroker(process.address)
    client.create_topic("events", 1)
    assert client.produce("events", 0, batch_at(0, [b"a", b"b", b"c"], timestamp=1_700_000_000_000)).error_code == 0
    client.close()
    process.stop()
    append_to_stopped_log(process, "events", 0, undecodable_batch_at(3, 3) + batch_at(6, [b"x", b"y"], timestamp=ANCIENT_MS))
    process.start()
    yield process
    process.stop()


def options(broker: BrokerProcess, **extra: str) -> dict[str, str]:
    return {"bootstrap.servers": broker.address, "subscribe": "events", "kafkaConsumer.pollTimeoutMs": "20000", **extra}


def test_a_bad_batch_fails_the_read_naming_topic_partition_and_offsets(spark: SparkSession, broker: BrokerProcess) -> None:
    with pytest.raises(
        Exception, match=r"DataLossError: weir source: events \[0\]: offset 3 is in a stored batch \(offsets 3\.\.5\) whose records cannot be decoded"
    ) as raised:
        spark.read.format("weir").options(**options(broker)).load().collect()
    # The task's error is its one line inside Spark's job failure, without a Python traceback.
    assert "Traceback" not in str(raised.value)


def test_fail_on_data_loss_false_skips_the_bad_batch_and_reads_the_rest(spark: SparkSession, broker: BrokerProcess) -> None:
    frame = spark.read.format("weir").options(**options(broker, failOnDataLoss="false")).load()
    rows = sorted((row.offset, row.value, row.timestamp is None) for row in frame.select("offset", "value", "timestamp").collect())
    assert rows == [(0, b"a", False), (1, b"b", False), (2, b"c", False), (6, b"x", True), (7, b"y", True)]
