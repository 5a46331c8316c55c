"""A partition's produce data is exactly one record batch at both front doors, as Kafka's Produce v3+ requires
(issue 15): the coordinator verifies (KIP-890) a partition by its batch, so a transactional batch behind a plain
one would otherwise be appended unverified and could open a hanging transaction. Such a partition is answered
INVALID_RECORD naming what was wrong and appends nothing; the request's other partitions go on."""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator

import pytest

from broker_nodes.requests.produce_batches import MultipleBatchesError, single_batch_refusal
from grpc_protos.weir.v1 import broker_pb2
from tests.kafka_protocol.admin_calls import call_handler, request_module
from tests.kafka_protocol.test_data_handlers import ANONYMOUS
from tests.support.in_process_broker import InProcessBroker
from weir.errors import ErrorCode
from weir.records import build_batch

TOPIC = "orders"
TRANSACTIONAL_ID = "app"
PRODUCE = 0
RECORD = (1_700_000_000_000, b"key", b"value", None)
NOT_LOADED_YET = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR, ErrorCode.CONCURRENT_TRANSACTIONS)


@pytest.fixture
def server(tmp_path) -> Iterator[InProcessBroker]:  # type: ignore[no-untyped-def]
    server = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}).start()
    server.broker.topic_admin.create_topic(TOPIC, 2, 1, {})
    yield server
    server.stop()


def plain() -> bytes:
    return build_batch([RECORD])


def transactional(producer_id: int, producer_epoch: int, base_sequence: int) -> bytes:
    return build_batch([RECORD], producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence, transactional=True)


def refusal(partition: int, extra_bytes: int) -> str:
    return (
        f"invalid record batch: the produce data for topic 'orders' partition {partition} holds {extra_bytes} bytes after its first record batch, "
        "and a Produce carries exactly one record batch per partition (Kafka's rule from Produce v3 on); nothing of it was appended"
    )


def begin_transaction(server: InProcessBroker, partition: int) -> tuple[int, int]:
    """FindCoordinator and InitProducerId for the transactional id, then AddPartitionsToTxn of ``partition`` alone; the producer id and epoch."""
    # As in Kafka, the first FindCoordinator of a transactional id creates __transaction_state.
    find = broker_pb2.FindCoordinatorRequest(group_ids=[TRANSACTIONAL_ID], key_type=broker_pb2.COORDINATOR_KEY_TYPE_TRANSACTION)
    assert server.stub.FindCoordinator(find, timeout=30).coordinators[0].node_id == server.node_id
    init = broker_pb2.InitProducerIdRequest(transactional_id=TRANSACTIONAL_ID, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1)
    deadline = time.monotonic() + 30
    answer = server.stub.InitProducerId(init, timeout=30)
    while answer.error_code in NOT_LOADED_YET and time.monotonic() < deadline:  # the coordinator loads its partition at startup
        time.sleep(0.05)
        answer = server.stub.InitProducerId(init, timeout=30)
    assert answer.error_code == ErrorCode.NO_ERROR, answer
    add = broker_pb2.AddPartitionsToTxnRequest(
        transactional_id=TRANSACTIONAL_ID,
        producer_id=answer.producer_id,
        producer_epoch=answer.producer_epoch,
        topics=[broker_pb2.TopicPartitions(topic=TOPIC, partitions=[partition])],
    )
    added = server.stub.AddPartitionsToTxn(add, timeout=30)
    assert added.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR, added
    return answer.producer_id, answer.producer_epoch


def grpc_produce(server: InProcessBroker, records_by_partition: dict[int, bytes]) -> list[tuple[int, str, int]]:
    partitions = [broker_pb2.ProducePartitionData(partition=partition, records=records) for partition, records in records_by_partition.items()]
    request = broker_pb2.ProduceRequest(
        acks=-1, timeout_ms=5000, transactional_id=TRANSACTIONAL_ID, topics=[broker_pb2.ProduceTopicData(topic=TOPIC, partitions=partitions)]
    )
    answers = server.stub.Produce(request, timeout=30).topics[0].partitions
    return [(answer.error_code, answer.error_message, answer.base_offset) for answer in answers]


def kafka_produce(server: InProcessBroker, records_by_partition: dict[int, bytes]) -> list[tuple[int, str, int]]:
    schema = request_module(PRODUCE, 9)
    partitions = tuple(schema.PartitionProduceData(index=partition, records=records) for partition, records in records_by_partition.items())
    request = schema.ProduceRequest(
        transactional_id=TRANSACTIONAL_ID,
        acks=-1,
        timeout=datetime.timedelta(seconds=5),
        topic_data=(schema.TopicProduceData(name=TOPIC, partition_data=partitions),),
    )
    answers = call_handler(server.broker, ANONYMOUS, PRODUCE, 9, request).responses[0].partition_responses
    return [(int(answer.error_code), answer.error_message or "", int(answer.base_offset)) for answer in answers]


def test_both_doors_refuse_a_transactional_batch_behind_a_plain_one_and_append_the_well_formed_partition(server: InProcessBroker) -> None:
    # Partition 0 is not in the transaction: its transactional batch, appended unverified, would hang there.
    producer_id, producer_epoch = begin_transaction(server, partition=1)
    manager = server.broker.replica_manager
    for sequence, door in enumerate((grpc_produce, kafka_produce)):
        mixed = plain() + transactional(producer_id, producer_epoch, base_sequence=0)
        answers = door(server, {0: mixed, 1: transactional(producer_id, producer_epoch, base_sequence=sequence)})
        assert answers == [(ErrorCode.INVALID_RECORD, refusal(0, len(mixed) - len(plain())), -1), (ErrorCode.NO_ERROR, "", sequence)], door.__name__
    assert [manager.partition_log(TOPIC, partition).log_end_offset for partition in (0, 1)] == [0, 2]
    # Partition 1's batches are in the producer's open transaction, which holds its last stable offset back.
    assert manager.partition_log(TOPIC, 1).last_stable_offset == 0


def test_only_bytes_after_a_well_formed_first_batch_count_as_a_second_batch() -> None:
    one = plain()
    assert single_batch_refusal(TOPIC, 0, one) is None
    refused = single_batch_refusal(TOPIC, 3, one + b"\x00" * 5)  # a torn second batch is still more than one
    assert isinstance(refused, MultipleBatchesError) and str(refused) == refusal(3, 5)
    # Malformed first headers are the append's to refuse (CORRUPT_MESSAGE / INVALID_RECORD with the precise reason).
    assert single_batch_refusal(TOPIC, 0, b"") is None
    assert single_batch_refusal(TOPIC, 0, one[:8] + b"\xff\xff\xff\xff" + one[12:] + one) is None  # a negative length
    assert single_batch_refusal(TOPIC, 0, one[:30]) is None  # a length past the end
