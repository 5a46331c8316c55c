"""Metering in a real (in-process) managed broker: the servicer's counting, the SDK producer
writing ``__usage`` with the internal token, and the clean-shutdown flush."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc, broker_pb2
from tests.broker_nodes.security.managed_cluster import INTERNAL, INTERNAL_TOKEN, allow, as_key, as_tenant, brokers, credential, topic
from tests.broker_nodes.server.helpers import batch
from tests.support.in_process_broker import InProcessBroker
from tests.support.usage_topic import UsageReader
from weir.errors import ErrorCode

TENANT_A = "tn-aaaaaaaaaa"
TENANT_B = "tn-bbbbbbbbbb"
ALICE_KEY = as_key("KEYALICE", "alice-secret")
BOB_KEY = as_key("KEYBOB", "bob-secret")
INTERVAL_MS = 200
READ_SECONDS = 15.0


def start_node(data_dir: Path, delays: list[float], interval_ms: int = INTERVAL_MS) -> InProcessBroker:
    return InProcessBroker(
        data_dir,
        {"offsets.topic.num.partitions": "1", "security.required": "true", "metering.interval.ms": str(interval_ms)},
        environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN},
        sleep=delays.append,
    ).start()


def apply_map_and_security(node: InProcessBroker, *, produce_quota: int = 0, version: int = 1) -> None:
    """The cluster map (this broker at its current port) and the tenants' keys, ACLs and quotas."""
    admin = admin_pb2_grpc.AdminStub(node.channel)
    admin.ApplyPartitions(
        admin_pb2.ApplyPartitionsRequest(
            version=version,
            cluster_id="weir-test",
            brokers=brokers((1, node.port), (2, 1)),
            topics=[
                topic(TENANT_A, "orders", partitions=2, leaders=[1, 2], topic_id="id-a-orders"),  # partition 1 is led elsewhere
                topic(TENANT_B, "orders", topic_id="id-b-orders"),
                topic("", "__consumer_offsets", topic_id="id-offsets"),
                topic("", "__usage", topic_id="id-usage"),
            ],
        ),
        metadata=INTERNAL,
    )
    quotas = [admin_pb2.TenantQuota(tenant_id=TENANT_A, produce_bytes_per_second=produce_quota)] if produce_quota else []
    admin.ApplySecurity(
        admin_pb2.ApplySecurityRequest(
            version=version,
            credentials=[credential("KEYALICE", "alice-secret", TENANT_A, "User:sa-alice"), credential("KEYBOB", "bob-secret", TENANT_B, "User:sa-bob")],
            acls=[allow(TENANT_A, "User:sa-alice", admin_pb2.ACL_OPERATION_ALL), allow(TENANT_B, "User:sa-bob", admin_pb2.ACL_OPERATION_ALL)],
            quotas=quotas,
        ),
        metadata=INTERNAL,
    )


def produce_request(node: InProcessBroker, metadata, name: str, records: bytes, partition: int = 0) -> broker_pb2.ProduceResponse:
    request = broker_pb2.ProduceRequest(
        acks=-1,
        timeout_ms=2000,
        topics=[broker_pb2.ProduceTopicData(topic=name, partitions=[broker_pb2.ProducePartitionData(partition=partition, records=records)])],
    )
    return node.stub.Produce(request, metadata=metadata)


def produce(node: InProcessBroker, metadata, name: str, records: bytes, partition: int = 0) -> broker_pb2.ProducePartitionResponse:
    return produce_request(node, metadata, name, records, partition).topics[0].partitions[0]


def fetch(node: InProcessBroker, metadata, name: str, partition: int = 0) -> broker_pb2.FetchPartitionResponse:
    request = broker_pb2.FetchRequest(
        topics=[broker_pb2.FetchTopic(topic=name, partitions=[broker_pb2.FetchPartition(partition=partition, fetch_offset=0, current_leader_epoch=-1)])]
    )
    return node.stub.Fetch(request, metadata=metadata).topics[0].partitions[0]


@pytest.fixture
def node(tmp_path: Path):
    delays: list[float] = []
    started = start_node(tmp_path / "node-1", delays)
    started.throttle_delays = delays  # type: ignore[attr-defined]
    yield started
    started.stop()


def reader_for(node: InProcessBroker) -> UsageReader:
    return UsageReader(f"127.0.0.1:{node.port}", INTERNAL_TOKEN)


def test_client_traffic_reaches_usage_per_tenant_topic_and_partition_and_internal_calls_are_not_counted(node) -> None:
    apply_map_and_security(node, produce_quota=100)
    alice_batch, bob_batches = batch([b"a" * 60, b"a" * 60, b"a" * 60]), [batch([b"b1"]), batch([b"b2", b"b3"])]
    throttled = produce_request(node, ALICE_KEY, "orders", alice_batch)  # above the 100 bytes a second of tenant A
    assert throttled.topics[0].partitions[0].error_code == 0 and throttled.throttle_time_ms > 0
    for records in bob_batches:
        assert produce(node, BOB_KEY, "orders", records).error_code == 0
    fetched = fetch(node, ALICE_KEY, "orders")
    assert fetched.error_code == 0 and len(fetched.records) == len(alice_batch)
    # Partition 1 is led by broker 2: refused here, so not counted.
    assert produce(node, ALICE_KEY, "orders", batch([b"x"]), partition=1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    # The control plane acting as tenant A: not metered.
    assert produce(node, as_tenant(TENANT_A), "orders", batch([b"dashboard"])).error_code == 0
    assert fetch(node, as_tenant(TENANT_A), "orders").error_code == 0
    throttle_ms = throttled.throttle_time_ms

    reader = reader_for(node)
    try:
        expected_a = Counter(
            {
                "bytes_in": len(alice_batch),
                "records_in": 3,
                "bytes_out": len(alice_batch),
                "records_out": 3,
                "produce_requests": 1,
                "fetch_requests": 1,
                "throttle_time_ms": throttle_ms,
            }
        )
        expected_b = Counter({"bytes_in": sum(map(len, bob_batches)), "records_in": 3, "produce_requests": 2})
        reader.read_until(
            lambda r: r.traffic()[(TENANT_A, "orders", 0)] == expected_a and r.traffic()[(TENANT_B, "orders", 0)] == expected_b,
            READ_SECONDS,
            "both tenants' traffic in __usage",
        )
        assert set(reader.traffic()) == {(TENANT_A, "orders", 0), (TENANT_B, "orders", 0)}
        led = {(row.tenant_id, row.topic, row.partition) for row in reader.partition_rows()}
        assert led == {(TENANT_A, "orders", 0), (TENANT_B, "orders", 0)}  # internal topics and partitions led elsewhere are left out
        latest_a = max((row for row in reader.partition_rows() if row.tenant_id == TENANT_A), key=lambda row: row.sequence)
        assert (latest_a.log_end_offset, latest_a.high_watermark, latest_a.leader_epoch) == (4, 4, 3)  # 3 records of Alice, 1 of the dashboard
        assert reader.conflicts == []
        windows = sorted({(row.sequence, row.window_start_ms, row.window_end_ms) for row in reader.rows.values()})
        assert all(end - start == INTERVAL_MS and start % INTERVAL_MS == 0 for _, start, end in windows[1:])
    finally:
        reader.close()


def test_only_internal_callers_may_produce_to_usage_and_nobody_to_the_offsets_topic(tmp_path: Path) -> None:
    node = InProcessBroker(tmp_path / "standalone", {"offsets.topic.num.partitions": "1"}, environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN}).start()
    try:
        node.broker.topic_admin.create_topic("__usage", 1, 1, {}, internal=True)
        anonymous = ()
        assert produce(node, anonymous, "__usage", batch([b"forged"])).error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert produce(node, INTERNAL, "__usage", batch([b"row"])).error_code == 0
        assert produce(node, INTERNAL, "__consumer_offsets", batch([b"forged"])).error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    finally:
        node.stop()


def test_a_clean_stop_emits_the_open_window_and_nothing_is_counted_twice(tmp_path: Path) -> None:
    node = start_node(tmp_path / "node-1", [], interval_ms=3_600_000)  # no window would close by itself
    try:
        apply_map_and_security(node)
        records = batch([b"last", b"words"])
        assert produce(node, BOB_KEY, "orders", records).error_code == 0
        node.stop()  # at once: the window is still open
        node.start()  # on another port: the map must say so
        apply_map_and_security(node, version=2)
        reader = reader_for(node)
        try:
            reader.read_until(lambda r: r.traffic().get((TENANT_B, "orders", 0), {}).get("records_in") == 2, READ_SECONDS, "the flushed window")
            [row] = [row for row in reader.rows.values() if row.kind == "traffic"]
            assert (row.bytes_in, row.produce_requests, row.sequence) == (len(records), 1, 0)
            assert row.window_end_ms - row.window_start_ms < 3_600_000  # ended early, at the stop
        finally:
            reader.close()
        node.stop()  # the second run's window: partition rows only, nothing counted again
        node.start()
        apply_map_and_security(node, version=3)
        reader = reader_for(node)
        try:
            reader.read_until(lambda r: len({row.incarnation for row in r.rows.values()}) == 2, READ_SECONDS, "the second run's window")
            assert reader.traffic()[(TENANT_B, "orders", 0)]["records_in"] == 2
            assert reader.conflicts == []
        finally:
            reader.close()
    finally:
        node.stop()
    assert not any((tmp_path / "node-1" / "metering").glob("*.usage"))
