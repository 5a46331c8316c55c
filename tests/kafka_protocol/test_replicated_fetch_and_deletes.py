"""Fetch's diverging epoch (KIP-320) and DeleteRecords' wait for the in-sync replicas, on three in-process brokers.

The Kafka handlers are called in process (requests and answers round-tripped through kio's
codecs) on brokers that replicate one RF=3 partition over gRPC, with leadership moved by pushed
cluster maps; the gRPC Fetch answers from the same logic.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker_nodes.security.access import CallContext, CallerKind
from broker_nodes.security.authorizer import AclEntry, Operation, PatternType, Permission, ResourceType
from grpc_protos.weir.v1 import broker_pb2
from tests.broker_nodes.replication.cluster import TENANT, TOPIC, ReplicatedCluster, wait_until
from tests.broker_nodes.security.managed_cluster import as_tenant
from tests.kafka_protocol.admin_calls import call_handler, request_module
from weir.records import iter_records

FETCH, DELETE_RECORDS = 1, 21
LONG_POLL_MS = 20_000  # a fetch that diverges must not wait for it
# Long enough that a stopped broker stays in the ISR while a deletion times out, short enough to wait for it to leave.
SLOW_ISR_SHRINK = {"replica.lag.time.max.ms": "4000"}
CALLER = CallContext(
    TENANT,
    "User:sa-1",
    "127.0.0.1",
    CallerKind.CLIENT,
    tuple(
        AclEntry("User:sa-1", ResourceType.TOPIC, TOPIC, PatternType.LITERAL, operation, Permission.ALLOW) for operation in (Operation.READ, Operation.DELETE)
    ),
)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    running = ReplicatedCluster(tmp_path, topic_configs={"min.insync.replicas": "2"})
    try:
        yield running
    finally:
        running.stop()


def kafka_fetch(cluster: ReplicatedCluster, node_id: int, offset: int, *, leader_epoch: int, last_fetched_epoch: int, version: int = 12) -> Any:
    schema = request_module(FETCH, version)
    fields = {"last_fetched_epoch": last_fetched_epoch} if version >= 12 else {}
    partition = schema.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20, current_leader_epoch=leader_epoch, **fields)
    request = schema.FetchRequest(
        max_wait=datetime.timedelta(milliseconds=LONG_POLL_MS),
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        topics=(schema.FetchTopic(topic=TOPIC, partitions=(partition,)),),
        forgotten_topics_data=(),
    )
    return call_handler(cluster.nodes[node_id].broker, CALLER, FETCH, version, request).responses[0].partitions[0]


def delete_records(cluster: ReplicatedCluster, node_id: int, offset: int, *, timeout_ms: int = 5000) -> Any:
    schema = request_module(DELETE_RECORDS, 2)
    request = schema.DeleteRecordsRequest(
        topics=(schema.DeleteRecordsTopic(name=TOPIC, partitions=(schema.DeleteRecordsPartition(partition_index=0, offset=offset),)),),
        timeout=datetime.timedelta(milliseconds=timeout_ms),
    )
    return call_handler(cluster.nodes[node_id].broker, CALLER, DELETE_RECORDS, 2, request).topics[0].partitions[0]


def produce_values(cluster: ReplicatedCluster, node_id: int, count: int) -> None:
    for number in range(count):
        response = cluster.produce(node_id, [b"a%d" % number, b"b%d" % number])
        assert response.error_code == 0, response.error_message


def first_offset(records: bytes) -> int:
    return next(iter(iter_records(records))).offset


@pytest.fixture
def failed_over(cluster: ReplicatedCluster) -> ReplicatedCluster:
    """Broker 1 wrote offsets [0, 6) in epoch 1; broker 2 then leads with epoch 2 and wrote [6, 10)."""
    cluster.apply(leader=1, epoch=1)
    produce_values(cluster, 1, 3)
    wait_until(lambda: all(cluster.log(node).log_end_offset == 6 for node in (2, 3)), what="followers to have epoch 1's records")
    cluster.apply(leader=2, epoch=2)
    wait_until(lambda: cluster.isr(2) == (1, 2, 3), what="broker 2 leading with every replica in sync")
    produce_values(cluster, 2, 2)
    return cluster


def test_a_fetch_past_where_its_last_epoch_ended_on_the_leader_gets_the_diverging_epoch_at_once(failed_over: ReplicatedCluster) -> None:
    # A fetcher that read up to offset 8 under epoch 1 (an old leader's tail) diverged at 6.
    started = time.monotonic()
    diverged = kafka_fetch(failed_over, 2, 8, leader_epoch=2, last_fetched_epoch=1)
    assert time.monotonic() - started < LONG_POLL_MS / 2000  # answered, not parked in the long poll
    assert diverged.error_code == ErrorCode.none
    assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (1, 6)
    assert not diverged.records
    assert diverged.high_watermark == 10


@pytest.mark.parametrize(("offset", "last_fetched_epoch"), [(6, 1), (3, 1), (8, 2), (8, -1)])
def test_a_fetch_that_agrees_with_the_leaders_epochs_reads_records(failed_over: ReplicatedCluster, offset: int, last_fetched_epoch: int) -> None:
    answer = kafka_fetch(failed_over, 2, offset, leader_epoch=2, last_fetched_epoch=last_fetched_epoch)
    assert answer.error_code == ErrorCode.none
    assert (answer.diverging_epoch.epoch, answer.diverging_epoch.end_offset) == (-1, -1)
    assert first_offset(answer.records) <= offset


def test_an_epoch_below_every_epoch_of_the_leader_is_out_of_range_and_fetch_v11_checks_nothing(failed_over: ReplicatedCluster) -> None:
    assert kafka_fetch(failed_over, 2, 4, leader_epoch=2, last_fetched_epoch=0).error_code == ErrorCode.offset_out_of_range
    assert kafka_fetch(failed_over, 2, 8, leader_epoch=2, last_fetched_epoch=1, version=11).records


def test_the_grpc_fetch_answers_the_same_diverging_epoch(failed_over: ReplicatedCluster) -> None:
    def grpc_fetch(**fields: int) -> broker_pb2.FetchPartitionResponse:
        partition = broker_pb2.FetchPartition(partition=0, fetch_offset=8, current_leader_epoch=2, **fields)
        request = broker_pb2.FetchRequest(max_wait_ms=LONG_POLL_MS, min_bytes=1, topics=[broker_pb2.FetchTopic(topic=TOPIC, partitions=[partition])])
        return failed_over.nodes[2].stub.Fetch(request, metadata=as_tenant(TENANT), timeout=LONG_POLL_MS / 1000).topics[0].partitions[0]

    diverged = grpc_fetch(last_fetched_epoch=1)
    assert diverged.HasField("diverging_epoch") and (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (1, 6)
    assert not diverged.records
    unchecked = grpc_fetch()
    assert not unchecked.HasField("diverging_epoch") and unchecked.records


def test_delete_records_answers_once_every_in_sync_replica_deleted(cluster: ReplicatedCluster) -> None:
    cluster.apply(leader=1, epoch=1)
    produce_values(cluster, 1, 5)
    wait_until(lambda: all(cluster.log(node).log_end_offset == 10 for node in (1, 2, 3)), what="every replica to have the records")

    deleted = delete_records(cluster, 1, 4)
    assert (deleted.error_code, deleted.low_watermark) == (ErrorCode.none, 4)
    # No waiting here: the answer came only once the followers had raised their log start.
    assert [cluster.log(node).log_start_offset for node in (1, 2, 3)] == [4, 4, 4]


@pytest.fixture
def slow_shrink_cluster(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    running = ReplicatedCluster(tmp_path, topic_configs={"min.insync.replicas": "2"}, broker_configs=SLOW_ISR_SHRINK)
    try:
        yield running
    finally:
        running.stop()


def test_delete_records_times_out_while_an_in_sync_replica_lags_and_succeeds_once_it_left_the_isr(slow_shrink_cluster: ReplicatedCluster) -> None:
    cluster = slow_shrink_cluster
    cluster.apply(leader=1, epoch=1)
    produce_values(cluster, 1, 5)
    wait_until(lambda: all(cluster.log(node).log_end_offset == 10 for node in (1, 2, 3)), what="every replica to have the records")
    cluster.nodes[3].stop()

    # Broker 3 is still in the ISR (replica.lag.time.max.ms has not passed) but deletes nothing.
    timed_out = delete_records(cluster, 1, 6, timeout_ms=200)
    assert timed_out.error_code == ErrorCode.request_timed_out
    assert cluster.log(1).log_start_offset == 6  # the leader deleted; the answer says the ISR did not
    assert cluster.isr(1) == (1, 2, 3)

    wait_until(lambda: cluster.isr(1) == (1, 2), timeout_seconds=20, what="broker 3 to leave the ISR")
    deleted = delete_records(cluster, 1, 8)
    assert (deleted.error_code, deleted.low_watermark) == (ErrorCode.none, 8)
    assert cluster.log(2).log_start_offset == 8
