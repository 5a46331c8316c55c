"""The gRPC transaction RPCs over a real broker: FindCoordinator TRANSACTION, InitProducerId with a
transactional id, AddPartitionsToTxn, a transactional Produce, EndTxn (epoch bumped at each end),
fencing, and offsets committed in a transaction."""

from __future__ import annotations

import time

from grpc_protos.weir.v1 import broker_pb2
from tests.broker_nodes.server.helpers import batch, create_topic
from weir.errors import ErrorCode

TRANSACTIONAL_ID = "orders-app"
TOPIC = "orders"
RETRIED = (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR)


def init(stub, transactional_id: str = TRANSACTIONAL_ID, timeout_ms: int = 60_000) -> broker_pb2.InitProducerIdResponse:  # type: ignore[no-untyped-def]
    """As a client does: FindCoordinator first (a standalone broker creates __transaction_state then), then InitProducerId until the coordinator has loaded (and aborted a fenced producer's transaction)."""
    stub.FindCoordinator(broker_pb2.FindCoordinatorRequest(group_ids=[transactional_id], key_type=broker_pb2.COORDINATOR_KEY_TYPE_TRANSACTION), timeout=30)
    request = broker_pb2.InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout_ms=timeout_ms, producer_id=-1, producer_epoch=-1)
    deadline = time.monotonic() + 20
    answer = stub.InitProducerId(request, timeout=30)
    while answer.error_code in RETRIED and time.monotonic() < deadline:
        time.sleep(0.05)
        answer = stub.InitProducerId(request, timeout=30)
    return answer


def add_partition(stub, producer: broker_pb2.InitProducerIdResponse | broker_pb2.EndTxnResponse) -> broker_pb2.PartitionResult:  # type: ignore[no-untyped-def]
    request = broker_pb2.AddPartitionsToTxnRequest(
        transactional_id=TRANSACTIONAL_ID,
        producer_id=producer.producer_id,
        producer_epoch=producer.producer_epoch,
        topics=[broker_pb2.TopicPartitions(topic=TOPIC, partitions=[0])],
    )
    answer = stub.AddPartitionsToTxn(request, timeout=30)
    assert [item.topic for item in answer.topics] == [TOPIC]
    return answer.topics[0].partitions[0]


def produce_transactional(stub, producer, values: list[bytes], sequence: int) -> broker_pb2.ProducePartitionResponse:  # type: ignore[no-untyped-def]
    records = batch(values, producer_id=producer.producer_id, producer_epoch=producer.producer_epoch, base_sequence=sequence, transactional=True)
    request = broker_pb2.ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        transactional_id=TRANSACTIONAL_ID,
        topics=[broker_pb2.ProduceTopicData(topic=TOPIC, partitions=[broker_pb2.ProducePartitionData(partition=0, records=records)])],
    )
    return stub.Produce(request, timeout=30).topics[0].partitions[0]


def end(stub, producer, *, commit: bool) -> broker_pb2.EndTxnResponse:  # type: ignore[no-untyped-def]
    request = broker_pb2.EndTxnRequest(
        transactional_id=TRANSACTIONAL_ID, producer_id=producer.producer_id, producer_epoch=producer.producer_epoch, committed=commit
    )
    return stub.EndTxn(request, timeout=30)


def last_stable_offset(stub) -> int:  # type: ignore[no-untyped-def]
    request = broker_pb2.FetchRequest(
        isolation_level=broker_pb2.READ_COMMITTED,
        topics=[broker_pb2.FetchTopic(topic=TOPIC, partitions=[broker_pb2.FetchPartition(partition=0, fetch_offset=0, current_leader_epoch=-1)])],
    )
    return stub.Fetch(request, timeout=30).topics[0].partitions[0].last_stable_offset


def wait_for_stable_offset(stub, wanted: int) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 20
    while last_stable_offset(stub) != wanted:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_find_coordinator_with_key_type_transaction_answers_this_standalone_broker(server) -> None:
    request = broker_pb2.FindCoordinatorRequest(group_ids=[TRANSACTIONAL_ID, ""], key_type=broker_pb2.COORDINATOR_KEY_TYPE_TRANSACTION)
    found, empty = server.stub.FindCoordinator(request, timeout=30).coordinators
    assert (found.group_id, found.error_code, found.node_id, found.port) == (TRANSACTIONAL_ID, ErrorCode.NO_ERROR, 1, server.port)
    assert (empty.error_code, empty.node_id) == (ErrorCode.INVALID_REQUEST, -1)


def test_a_committed_transaction_moves_the_stable_offset_and_each_end_bumps_the_epoch(server) -> None:
    stub = server.stub
    assert create_topic(stub, TOPIC).error_code == ErrorCode.NO_ERROR
    producer = init(stub)
    assert producer.error_code == ErrorCode.NO_ERROR, producer.error_message
    assert add_partition(stub, producer).error_code == ErrorCode.NO_ERROR
    produced = produce_transactional(stub, producer, [b"a", b"b"], sequence=0)
    assert produced.error_code == ErrorCode.NO_ERROR, produced.error_message
    assert last_stable_offset(stub) == 0  # the open transaction holds read_committed back

    committed = end(stub, producer, commit=True)
    assert committed.error_code == ErrorCode.NO_ERROR, committed.error_message
    assert (committed.producer_id, committed.producer_epoch) == (producer.producer_id, producer.producer_epoch + 1)
    assert wait_for_stable_offset(stub, 3)  # two records and the COMMIT marker (markers are written after EndTxn answers)

    # The next transaction runs at the bumped epoch; its abort bumps it again.
    assert add_partition(stub, committed).error_code == ErrorCode.NO_ERROR
    assert produce_transactional(stub, committed, [b"c"], sequence=0).error_code == ErrorCode.NO_ERROR
    aborted = end(stub, committed, commit=False)
    assert (aborted.error_code, aborted.producer_epoch) == (ErrorCode.NO_ERROR, committed.producer_epoch + 1)
    assert wait_for_stable_offset(stub, 5)


def test_a_second_producer_of_the_id_fences_the_first(server) -> None:
    stub = server.stub
    create_topic(stub, TOPIC)
    first = init(stub)
    assert add_partition(stub, first).error_code == ErrorCode.NO_ERROR
    second = init(stub)
    assert second.error_code == ErrorCode.NO_ERROR, second.error_message
    assert second.producer_id == first.producer_id and second.producer_epoch > first.producer_epoch
    assert end(stub, first, commit=True).error_code == ErrorCode.PRODUCER_FENCED


def txn_offset_commit(stub, producer, offset: int) -> broker_pb2.PartitionResult:  # type: ignore[no-untyped-def]
    request = broker_pb2.TxnOffsetCommitRequest(
        transactional_id=TRANSACTIONAL_ID,
        group_id="readers",
        producer_id=producer.producer_id,
        producer_epoch=producer.producer_epoch,
        generation_id=-1,
        topics=[broker_pb2.TxnOffsetCommitTopic(topic=TOPIC, partitions=[broker_pb2.TxnOffsetCommitPartition(partition=0, committed_offset=offset)])],
    )
    (result,) = stub.TxnOffsetCommit(request, timeout=30).topics[0].partitions
    return result


def committed_offset(stub) -> int:  # type: ignore[no-untyped-def]
    request = broker_pb2.OffsetFetchRequest(group_id="readers", topics=[broker_pb2.OffsetFetchTopic(topic=TOPIC, partitions=[0])])
    return stub.OffsetFetch(request, timeout=30).topics[0].partitions[0].committed_offset


def test_offsets_committed_in_a_transaction_become_the_groups_when_it_commits(server) -> None:
    stub = server.stub
    create_topic(stub, TOPIC)
    producer = init(stub)
    stale = broker_pb2.AddOffsetsToTxnRequest(
        transactional_id=TRANSACTIONAL_ID, producer_id=producer.producer_id, producer_epoch=producer.producer_epoch + 5, group_id="readers"
    )
    assert stub.AddOffsetsToTxn(stale, timeout=30).error_code == ErrorCode.PRODUCER_FENCED
    # Without AddOffsetsToTxn the group's offsets partition is not in the transaction.
    assert txn_offset_commit(stub, producer, 7).error_code != ErrorCode.NO_ERROR

    add = broker_pb2.AddOffsetsToTxnRequest(
        transactional_id=TRANSACTIONAL_ID, producer_id=producer.producer_id, producer_epoch=producer.producer_epoch, group_id="readers"
    )
    assert stub.AddOffsetsToTxn(add, timeout=30).error_code == ErrorCode.NO_ERROR
    result = txn_offset_commit(stub, producer, 7)
    assert result.error_code == ErrorCode.NO_ERROR, result.error_message
    assert committed_offset(stub) == -1  # pending until the transaction commits
    assert end(stub, producer, commit=True).error_code == ErrorCode.NO_ERROR
    deadline = time.monotonic() + 20
    while committed_offset(stub) != 7 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert committed_offset(stub) == 7
