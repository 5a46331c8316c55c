"""Jepsen's delayed-EndTxn scenario (from its Bufstream analysis) on 3 brokers, over the raw Kafka protocol.

A producer commits transaction N (EndTxn v5 commit at epoch e: answered with epoch e+1, KIP-890),
begins transaction N+1 at epoch e+1 and writes to the same partition; then the EndTxn of N
arrives again, late (a network delay, a client retry racing its own answer). Without KIP-890's
epoch bump the late commit would find N+1 open at the same epoch and commit it: records the
producer never meant to commit. Here it must be PRODUCER_FENCED (or INVALID_PRODUCER_EPOCH),
transaction N+1 must stay invisible at read_committed (the last stable offset stays at its first
record), and after the producer aborts N+1 none of its records is ever read. The partition's
leader is another broker than the coordinator whenever the map allows, so the produce path's
verification (Replication.VerifyTxnPartitions) takes part.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kio.schema.end_txn.v5.request import EndTxnRequest
from kio.schema.errors import ErrorCode
from kio.schema.produce.v9 import request as produce_v9
from kio.static.primitive import i16, i32, i32Timedelta, i64

from tests.cluster.test_transaction_coordinator_failover import TIMINGS, TOPIC, TRANSACTIONAL_ID, TransactionalClient
from tests.support.real_cluster import RealCluster
from weir.records import build_batch

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(240)]

PARTITION = 0
READ_SECONDS = 30.0


def add_partition(client: TransactionalClient, coordinator: int, producer_id: int, epoch: int) -> int:
    answer = client.request(
        coordinator,
        AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=TRANSACTIONAL_ID,
            v3_and_below_producer_id=i64(producer_id),
            v3_and_below_producer_epoch=i16(epoch),
            v3_and_below_topics=(AddPartitionsToTxnTopic(name=TOPIC, partitions=(i32(PARTITION),)),),
        ),
    )
    return int(answer.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)


def produce(client: TransactionalClient, cluster: RealCluster, producer_id: int, epoch: int, values: list[bytes]) -> Any:
    """One transactional batch of ``values`` (sequence 0: a new epoch starts its sequences again) to the partition's leader."""
    batch = build_batch(
        [(1_700_000_000_000 + index, None, value, None) for index, value in enumerate(values)],
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=0,
        transactional=True,
    )
    request = produce_v9.ProduceRequest(
        transactional_id=TRANSACTIONAL_ID,
        acks=i16(-1),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        topic_data=(produce_v9.TopicProduceData(name=TOPIC, partition_data=(produce_v9.PartitionProduceData(index=i32(PARTITION), records=batch),)),),
    )
    return client.request(cluster.leader_of(TOPIC, PARTITION), request).responses[0].partition_responses[0]


def read_committed(cluster: RealCluster) -> tuple[list[bytes], int]:
    """Every record of the partition visible at read_committed, and the offset its EOF was reported at (the LSO)."""
    consumer = Consumer(
        cluster.kafka_client_config(**{"group.id": "auditor", "isolation.level": "read_committed", "enable.auto.commit": False, "enable.partition.eof": True})
    )
    consumer.assign([TopicPartition(TOPIC, PARTITION, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + READ_SECONDS
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                return values, message.offset()
            assert error is None, error
            values.append(message.value())
    finally:
        consumer.close()
    raise AssertionError(f"no end of partition within {READ_SECONDS:.0f} s; read {values}")


def test_a_late_end_txn_of_the_previous_transaction_never_commits_the_next_one(start_cluster) -> None:  # type: ignore[no-untyped-def]
    cluster = start_cluster(broker_count=3, timings=TIMINGS)
    cluster.create_tenant("Ledger")
    cluster.create_topic(TOPIC, 2, 3, {"min.insync.replicas": "2"})
    cluster.wait_for_full_isr(TOPIC)
    client = TransactionalClient(cluster)
    producer_id, epoch = client.init_producer(TRANSACTIONAL_ID)
    coordinator = client.coordinator()

    # Transaction N: committed; the answer carries the bumped epoch.
    first = [b"txn-N-0", b"txn-N-1"]
    assert add_partition(client, coordinator, producer_id, epoch) == ErrorCode.none
    assert produce(client, cluster, producer_id, epoch, first).error_code == ErrorCode.none
    commit_n = EndTxnRequest(transactional_id=TRANSACTIONAL_ID, producer_id=i64(producer_id), producer_epoch=i16(epoch), committed=True)
    committed = client.request(coordinator, commit_n)
    assert (committed.error_code, int(committed.producer_epoch)) == (ErrorCode.none, epoch + 1)

    # Transaction N+1 at the new epoch, its records written.
    second = [b"txn-N+1-0", b"txn-N+1-1", b"txn-N+1-2"]
    assert add_partition(client, coordinator, producer_id, epoch + 1) == ErrorCode.none
    written = produce(client, cluster, producer_id, epoch + 1, second)
    assert written.error_code == ErrorCode.none
    next_first_offset = int(written.base_offset)

    # The late EndTxn(commit) of transaction N.
    late = client.request(coordinator, commit_n)
    assert late.error_code in (ErrorCode.producer_fenced, ErrorCode.invalid_producer_epoch), late
    values, stable = read_committed(cluster)
    assert values == first, f"the late EndTxn committed transaction N+1: read {values}"
    assert stable == next_first_offset, f"the last stable offset {stable} is not transaction N+1's first offset {next_first_offset}"

    # The producer aborts N+1: none of its records is ever visible, and the partition is stable to its end.
    aborted = client.request(
        coordinator, EndTxnRequest(transactional_id=TRANSACTIONAL_ID, producer_id=i64(producer_id), producer_epoch=i16(epoch + 1), committed=False)
    )
    assert (aborted.error_code, int(aborted.producer_epoch)) == (ErrorCode.none, epoch + 2)
    end = next_first_offset + len(second) + 1  # N+1's records and its ABORT marker
    values, stable = cluster.wait_until(
        lambda: (found := read_committed(cluster))[1] == end and found, "the ABORT marker of transaction N+1 written and stable", 30.0
    )
    assert values == first
