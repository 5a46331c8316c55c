"""Transactions set up over gRPC with any SDK configuration (a tenant's, too): an open transaction its
coordinator holds, and a hanging one no coordinator knows.

Brokers refuse a transactional batch the coordinator did not verify (KIP-890) and one sent without
a transactional id (Kafka's rule), so a hanging transaction comes about here as it still can in
production: its coordinator loses its log. The producer's transaction is real (InitProducerId,
AddPartitionsToTxn, a verified Produce); then the broker is stopped, its ``__transaction_state``
partitions are deleted, as a lost disk would lose them, and it is started again with an empty
coordinator while the partition's log keeps the open transaction. The batch's timestamp (the
producer's clock, which the finder reads as Kafka's does) is long past, so the transaction is
open past transaction.max.timeout.ms at once."""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from typing import Any

from grpc_protos.weir.v1 import broker_pb2
from tests.support.processes import BrokerProcess
from weir.cluster import Cluster
from weir.config import ADMIN, ClientConfig
from weir.errors import ErrorCode
from weir.records import RecordBatchBuilder

RETRIED = (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR)
OLD_TIMESTAMP_MS = 1_700_000_000_000  # long before now: older than transaction.max.timeout.ms


def open_transaction(config: Mapping[str, Any], transactional_id: str, topic: str, partition: int, timeout: float = 30.0) -> tuple[int, int]:
    """Begin a transaction of ``transactional_id`` with ``topic``'s ``partition`` in it; returns the producer id and epoch."""
    cluster = Cluster(ClientConfig(dict(config), ADMIN))
    try:
        find = broker_pb2.FindCoordinatorRequest(group_ids=[transactional_id], key_type=broker_pb2.COORDINATOR_KEY_TYPE_TRANSACTION)
        init = broker_pb2.InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1)
        deadline = time.monotonic() + timeout
        while True:
            (found,) = cluster.call_any("FindCoordinator", find, timeout=timeout).coordinators
            address = f"{found.host}:{found.port}"
            answer = cluster.call("InitProducerId", init, address=address, timeout=timeout) if not found.error_code else None
            if answer is not None and answer.error_code == ErrorCode.NO_ERROR:
                break
            assert time.monotonic() < deadline, (found, answer)
            time.sleep(0.05)
        add = broker_pb2.AddPartitionsToTxnRequest(
            transactional_id=transactional_id,
            producer_id=answer.producer_id,
            producer_epoch=answer.producer_epoch,
            topics=[broker_pb2.TopicPartitions(topic=topic, partitions=[partition])],
        )
        added = cluster.call("AddPartitionsToTxn", add, address=address, timeout=timeout)
        assert added.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR, added
        return answer.producer_id, answer.producer_epoch
    finally:
        cluster.close()


def hang_transaction(
    config: Mapping[str, Any], broker: BrokerProcess, topic: str, partition: int, transactional_id: str = "lost-app", timeout: float = 30.0
) -> tuple[int, int]:
    """Leave ``transactional_id``'s transaction open in ``topic``'s ``partition``, unknown to every coordinator; returns its producer id and epoch.

    ``broker`` is the only broker (it leads ``topic`` and ``__transaction_state``); it is restarted
    on its port and data directory. Every transaction's coordinator state is lost with it: open
    the transactions a test keeps after this call.
    """
    producer_id, producer_epoch = open_transaction(config, transactional_id, topic, partition, timeout)
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=0, transactional=True)
    builder.append(OLD_TIMESTAMP_MS, None, b"late")
    request = broker_pb2.ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        transactional_id=transactional_id,
        topics=[broker_pb2.ProduceTopicData(topic=topic, partitions=[broker_pb2.ProducePartitionData(partition=partition, records=builder.build())])],
    )
    cluster = Cluster(ClientConfig(dict(config), ADMIN))
    try:
        cluster.topic(topic, timeout=timeout)
        answer = cluster.call("Produce", request, address=cluster.leader_address(topic, partition), timeout=timeout)
        assert answer.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR, answer
    finally:
        cluster.close()
    broker.stop()
    lost = sorted(broker.data_dir.glob("__transaction_state-*"))
    assert lost, f"no __transaction_state partition in {broker.data_dir}"
    for directory in lost:
        shutil.rmtree(directory)
    broker.start(timeout)
    return producer_id, producer_epoch
