"""Planning and reading against a managed broker, without Spark: which partitions and offsets a read covers,
who may see what, and the errors that name what was wrong. (Spark only wraps these; test_source.py
checks one of them surfaces through it.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from grpc_protos.weir.v1 import admin_pb2
from spark_pipelines.source import KAFKA_SCHEMA, kafka_schema
from spark_pipelines.source_errors import (
    AuthenticationFailedError,
    AuthorizationFailedError,
    BrokersUnavailableError,
    DataLossError,
    InvalidOptionError,
    ReadTimeoutError,
    UnknownTopicError,
)
from spark_pipelines.source_fetch import PartitionFetcher
from spark_pipelines.source_offsets import OffsetLookup, batch_ranges, resolve_offsets
from spark_pipelines.source_options import parse_options
from spark_pipelines.source_planning import OffsetRange
from spark_pipelines.source_reading import read_range
from tests.broker_nodes.security.managed_cluster import INTERNAL, tenant_token
from tests.spark_pipelines.source_cluster import (
    KEY_B,
    KEY_NO_ACL,
    SECRET_B,
    SECRET_NO_ACL,
    TENANT_A,
    SourceCluster,
    order_record,
    running_source_cluster,
)
from tests.support.processes import free_port
from weir import Producer
from weir.records import iter_batch_positions


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SourceCluster]:
    with running_source_cluster(tmp_path_factory.mktemp("weir-source") / "node-1") as running:
        yield running


def ranges(options: dict[str, str]) -> list[OffsetRange]:
    return batch_ranges(parse_options(options, streaming=False))


def test_a_tenant_key_sees_only_its_tenants_topics(cluster: SourceCluster) -> None:
    with pytest.raises(UnknownTopicError, match=r"topic 'private': does not exist"):
        resolve_offsets(cluster.tenant_options(subscribe="private"))
    with pytest.raises(UnknownTopicError, match=r"topic '__usage': does not exist"):
        resolve_offsets(cluster.tenant_options(subscribe="__usage"))
    # Tenant B's "private" matches the pattern too, but only tenant A's topics are listed to A.
    assert sorted(resolve_offsets(cluster.tenant_options(subscribePattern="o.*|p.*|e.*"))) == ["empty", "orders"]
    assert resolve_offsets(cluster.tenant_options(KEY_B, SECRET_B, subscribe="private")) == {"private": {0: 1}}


def test_the_internal_token_sees_every_tenant_qualified_and_the_internal_topics(cluster: SourceCluster) -> None:
    latest = resolve_offsets(cluster.internal_options(subscribePattern=f"{TENANT_A}~.*"))
    # The cluster is shared by the directory's tests: the sink test adds tenant A's "sink" topic when it runs first.
    assert {f"{TENANT_A}~empty", f"{TENANT_A}~orders", f"{TENANT_A}~stream"} <= set(latest)
    assert all(topic.startswith(f"{TENANT_A}~") for topic in latest)
    assert latest[f"{TENANT_A}~orders"] == {0: 10, 1: 10, 2: 10}
    assert resolve_offsets(cluster.internal_options(subscribe="__usage"), spec="earliest") == {"__usage": {0: 0}}
    # Patterns leave the internal topics out, as Kafka's subscriptions do.
    assert "__usage" not in resolve_offsets(cluster.internal_options(subscribePattern=".*"))


def test_credentials_that_are_wrong_or_not_granted_fail_naming_the_cause(cluster: SourceCluster) -> None:
    with pytest.raises(AuthenticationFailedError, match=r"the brokers refused the credentials: .*invalid API key or secret"):
        resolve_offsets(cluster.tenant_options(KEY_B, "wrong", subscribe="private"))
    with pytest.raises(AuthorizationFailedError, match=r"not authorized to read topic 'orders'"):
        resolve_offsets(cluster.tenant_options(KEY_NO_ACL, SECRET_NO_ACL, subscribe="orders"))
    with pytest.raises(AuthenticationFailedError, match=r"internal token is wrong"):
        resolve_offsets({**cluster.internal_options(subscribe="__usage"), "weir.internal.token": "not-the-token"})


def test_json_offsets_are_checked_against_what_the_partitions_hold(cluster: SourceCluster) -> None:
    with pytest.raises(UnknownTopicError, match=r"topic 'orders': has no partition 7 \(it has 3\)"):
        ranges(cluster.tenant_options(assign='{"orders": [7]}'))
    with pytest.raises(UnknownTopicError, match=r"startingOffsets names partition 5, which 'orders' does not have"):
        ranges(cluster.tenant_options(subscribe="orders", startingOffsets='{"orders": {"5": 0}}'))
    with pytest.raises(DataLossError, match=r"orders \[0\]: starting offset 50 is past the end offset 10 \(was the topic recreated\?\).*failOnDataLoss=false"):
        ranges(cluster.tenant_options(subscribe="orders", startingOffsets='{"orders": {"0": 50}}'))
    with pytest.raises(InvalidOptionError, match=r"orders \[1\]: starting offset 6 is after the ending offset 4"):
        ranges(cluster.tenant_options(subscribe="orders", startingOffsets='{"orders": {"1": 6}}', endingOffsets='{"orders": {"1": 4}}'))


def test_without_fail_on_data_loss_offsets_outside_the_log_are_clamped(cluster: SourceCluster) -> None:
    planned = ranges(cluster.tenant_options(assign='{"orders": [0, 1]}', startingOffsets='{"orders": {"0": 50}}', failOnDataLoss="false"))
    assert planned == [OffsetRange("orders", 0, 10, 10), OffsetRange("orders", 1, 0, 10)]


def test_a_partition_list_follows_assign_and_subscribe(cluster: SourceCluster) -> None:
    with OffsetLookup(parse_options(cluster.tenant_options(subscribe="orders"), streaming=False).client_config) as lookup:
        assert lookup.partition_ids("orders") == [0, 1, 2]
    assert ranges(cluster.tenant_options(assign='{"orders": [2, 0]}', endingOffsets='{"orders": {"2": 7}}')) == [
        OffsetRange("orders", 0, 0, 10),
        OffsetRange("orders", 2, 0, 7),
    ]


def test_reading_a_range_yields_arrow_batches_of_the_kafka_columns(cluster: SourceCluster) -> None:
    arrow_schema = to_arrow_schema(kafka_schema(True), timezone="UTC")
    [batch] = list(read_range(OffsetRange("orders", 1, 2, 5), cluster.tenant_options(), arrow_schema, fail_on_data_loss=True, poll_timeout_seconds=30))
    assert batch.schema.equals(arrow_schema)
    expected = [order_record(index) for index in (7, 10, 13)]
    assert batch.column("offset").to_pylist() == [2, 3, 4]
    assert batch.column("key").to_pylist() == [record.key for record in expected]
    assert batch.column("headers").to_pylist() == [[{"key": "h", "value": b"x7"}], None, [{"key": "h", "value": b"x13"}]]
    assert batch.column("timestampType").to_pylist() == [0, 0, 0]


def test_a_range_that_makes_no_progress_fails_with_its_position_after_the_poll_timeout(cluster: SourceCluster) -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0  # every consume() round counts one second
        return now[0]

    # Offsets 10..14 do not exist: the range can never finish.
    config = {**cluster.tenant_options(), "fetch.wait.max.ms": "50"}
    batches = read_range(
        OffsetRange("orders", 2, 8, 15), config, to_arrow_schema(KAFKA_SCHEMA, timezone="UTC"), fail_on_data_loss=True, poll_timeout_seconds=2, clock=clock
    )
    with pytest.raises(ReadTimeoutError, match=r"orders \[2\]: no record arrived for 2 s at offset 10 while reading up to offset 15"):
        list(batches)  # offsets 8 and 9 were read: the position is 10


def test_no_broker_at_the_bootstrap_address_fails_within_the_socket_timeout() -> None:
    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(BrokersUnavailableError, match=rf"no broker answered at {address}: .*Connection refused"):
        resolve_offsets({"bootstrap.servers": address, "subscribe": "orders", "kafka.socket.timeout.ms": "1000"})


def test_a_range_outside_the_log_is_data_loss_or_skipped_without_fail_on_data_loss(cluster: SourceCluster) -> None:
    # Planned when partition 0 held offsets up to 60; it now ends at 10 (a recreated topic).
    gone = OffsetRange("orders", 0, 50, 60)
    arrow_schema = to_arrow_schema(KAFKA_SCHEMA, timezone="UTC")
    with pytest.raises(DataLossError, match=r"orders \[0\]: offset 50 is no longer in the log .*failOnDataLoss=false"):
        list(read_range(gone, cluster.tenant_options(), arrow_schema, fail_on_data_loss=True, poll_timeout_seconds=30))
    assert list(read_range(gone, cluster.tenant_options(), arrow_schema, fail_on_data_loss=False, poll_timeout_seconds=30)) == []


def _traffic_out(cluster: SourceCluster, topic_name: str, partition: int) -> tuple[int, int]:
    """(bytes, records) the broker has metered out of tenant A's ``topic_name`` [partition] since it started."""
    state = cluster.broker.admin.DescribeState(admin_pb2.DescribeStateRequest(), metadata=INTERNAL)
    [hosted] = [entry for entry in state.partitions if entry.tenant_id == TENANT_A and entry.topic == topic_name and entry.partition == partition]
    return hosted.bytes_out_total, hosted.records_out_total


def test_a_bounded_read_fetches_and_is_billed_for_the_range_not_what_follows_it(cluster: SourceCluster) -> None:
    # 2,000 records of 100 bytes in partition 1 of "stream" (not read by this module's other tests), in batches of at most 4 KB.
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "weir.tenant.token": tenant_token(TENANT_A), "batch.size": 4096, "linger.ms": 5})
    for index in range(2000):
        producer.produce("stream", value=b"%099d" % index, partition=1)
    assert producer.flush(15) == 0
    with PartitionFetcher(cluster.tenant_options(), "stream", 1) as fetcher:
        whole = fetcher.fetch(0, 64 * 1024 * 1024).records
    stored = [(header.base_offset, header.last_offset, header.size) for _, header in iter_batch_positions(whole)]
    assert len(stored) >= 20
    # The bytes of the stored batches holding offsets 500..1499: what the read cannot avoid fetching.
    needed = sum(size for first, last, size in stored if last >= 500 and first < 1500)
    needed_records = sum(last - first + 1 for first, last, _ in stored if last >= 500 and first < 1500)
    before = _traffic_out(cluster, "stream", 1)
    arrow_schema = to_arrow_schema(KAFKA_SCHEMA, timezone="UTC")
    batches = list(read_range(OffsetRange("stream", 1, 500, 1500), cluster.tenant_options(), arrow_schema, fail_on_data_loss=True, poll_timeout_seconds=30))
    after = _traffic_out(cluster, "stream", 1)
    offsets = [offset for batch in batches for offset in batch.column("offset").to_pylist()]
    assert offsets == list(range(500, 1500))
    billed_bytes, billed_records = after[0] - before[0], after[1] - before[1]
    assert needed <= billed_bytes <= needed * 1.05, (billed_bytes, needed)
    assert needed_records <= billed_records <= needed_records * 1.05, (billed_records, needed_records)
