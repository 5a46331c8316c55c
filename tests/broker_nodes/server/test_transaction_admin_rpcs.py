"""The operators' transaction RPCs over a real broker: ListTransactions / DescribeTransactions of an open
transaction, AbortTransaction by id (the producer fenced) and of a hanging partition found with
FindHangingTransactions (the last stable offset moves past it)."""

from __future__ import annotations

import time

import grpc
import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.broker_nodes.server.helpers import batch, create_topic
from tests.broker_nodes.server.test_transaction_rpcs import TOPIC, TRANSACTIONAL_ID, add_partition, end, init, produce_transactional
from weir.errors import ErrorCode


def describe(stub) -> broker_pb2.TransactionDescription:  # type: ignore[no-untyped-def]
    (described,) = stub.DescribeTransactions(broker_pb2.DescribeTransactionsRequest(transactional_ids=[TRANSACTIONAL_ID]), timeout=30).transactions
    return described


def test_an_open_transaction_is_listed_described_and_aborted_by_id(server) -> None:
    stub = server.stub
    assert create_topic(stub, TOPIC).error_code == ErrorCode.NO_ERROR
    producer = init(stub)
    assert add_partition(stub, producer).error_code == ErrorCode.NO_ERROR
    assert produce_transactional(stub, producer, [b"a"], 0).error_code == ErrorCode.NO_ERROR
    listed = stub.ListTransactions(broker_pb2.ListTransactionsRequest(state_filters=["Ongoing", "Bogus"]), timeout=30)
    assert [(item.transactional_id, item.state, item.producer_id) for item in listed.transactions] == [(TRANSACTIONAL_ID, "Ongoing", producer.producer_id)]
    assert list(listed.unknown_state_filters) == ["Bogus"]
    assert stub.ListTransactions(broker_pb2.ListTransactionsRequest(duration_filter_ms=3_600_000), timeout=30).transactions == []
    described = describe(stub)
    assert (described.state, described.transaction_timeout_ms, [(t.topic, list(t.partitions)) for t in described.topics]) == ("Ongoing", 60_000, [(TOPIC, [0])])
    assert described.transaction_start_time_ms > 0
    aborted = stub.AbortTransaction(broker_pb2.AbortTransactionRequest(transactional_id=TRANSACTIONAL_ID), timeout=30)
    assert aborted.error_code == ErrorCode.NO_ERROR, aborted.error_message
    deadline = time.monotonic() + 10
    while describe(stub).state != "CompleteAbort":
        assert time.monotonic() < deadline, describe(stub).state
        time.sleep(0.02)
    assert describe(stub).producer_epoch == producer.producer_epoch + 1
    assert end(stub, producer, commit=True).error_code == ErrorCode.PRODUCER_FENCED
    again = stub.AbortTransaction(broker_pb2.AbortTransactionRequest(transactional_id=TRANSACTIONAL_ID), timeout=30)
    assert again.error_code == ErrorCode.INVALID_TXN_STATE


def test_a_hanging_transaction_is_found_and_aborted_at_its_partition(server) -> None:
    stub = server.stub
    assert create_topic(stub, TOPIC, partitions=2).error_code == ErrorCode.NO_ERROR
    # A late transactional batch its coordinator never knew (KAFKA-9144's hanging transaction), straight into the log.
    log = server.broker.replica_manager.partition_log(TOPIC, 1)
    log.append_as_leader(batch([b"late"], producer_id=4242, producer_epoch=5, base_sequence=0, transactional=True), 0)
    log.update_high_watermark(log.log_end_offset)
    found = stub.FindHangingTransactions(broker_pb2.FindHangingTransactionsRequest(topic=TOPIC), timeout=30)
    assert [(item.partition, item.error_code, len(item.transactions)) for item in found.partitions] == [(0, 0, 0), (1, 0, 1)]
    (hanging,) = found.partitions[1].transactions
    assert (hanging.target.topic, hanging.target.producer_id, hanging.target.producer_epoch, hanging.start_offset) == (TOPIC, 4242, 5, 0)
    assert hanging.open_for_ms > 900_000
    assert stub.AbortTransaction(broker_pb2.AbortTransactionRequest(hanging=hanging.target), timeout=30).error_code == ErrorCode.NO_ERROR
    assert log.last_stable_offset == log.log_end_offset == 2
    missing = stub.FindHangingTransactions(broker_pb2.FindHangingTransactionsRequest(topic="missing"), timeout=30)
    assert [(item.partition, item.error_code) for item in missing.partitions] == [(-1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    with pytest.raises(grpc.RpcError) as refused:
        stub.AbortTransaction(broker_pb2.AbortTransactionRequest(), timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
