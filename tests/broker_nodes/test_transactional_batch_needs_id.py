"""A Produce carrying a transactional batch but naming no transactional id is refused whole at both front
doors, as Kafka's KafkaApis refuses it: TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition, with a
message naming the batch, and nothing appended, not even the plain batches beside it."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.kafka_protocol.admin_calls import call_handler, request_module
from tests.kafka_protocol.test_data_handlers import ANONYMOUS
from tests.support.in_process_broker import InProcessBroker
from weir.errors import ErrorCode
from weir.records import build_batch

TOPIC = "orders"
PRODUCE = 0
RECORD = (1_700_000_000_000, b"key", b"value", None)
REFUSAL = (
    "a transactional batch needs its producer's transactional id on the Produce request, and this request names none "
    "(topic 'orders' partition 1, batch 1); nothing of the request was appended"
)


@pytest.fixture
def server(tmp_path) -> Iterator[InProcessBroker]:  # type: ignore[no-untyped-def]
    server = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}).start()
    server.broker.topic_admin.create_topic(TOPIC, 2, 1, {})
    yield server
    server.stop()


def plain() -> bytes:
    return build_batch([RECORD])


def plain_then_transactional() -> bytes:
    return plain() + build_batch([RECORD], producer_id=4242, producer_epoch=0, base_sequence=0, transactional=True)


def grpc_produce(server: InProcessBroker, records_by_partition: dict[int, bytes]) -> list[tuple[int, str, int]]:
    partitions = [broker_pb2.ProducePartitionData(partition=partition, records=records) for partition, records in records_by_partition.items()]
    request = broker_pb2.ProduceRequest(acks=-1, timeout_ms=5000, topics=[broker_pb2.ProduceTopicData(topic=TOPIC, partitions=partitions)])
    answers = server.stub.Produce(request, timeout=30).topics[0].partitions
    return [(answer.error_code, answer.error_message, answer.base_offset) for answer in answers]


def kafka_produce(server: InProcessBroker, records_by_partition: dict[int, bytes]) -> list[tuple[int, str, int]]:
    schema = request_module(PRODUCE, 9)
    partitions = tuple(schema.PartitionProduceData(index=partition, records=records) for partition, records in records_by_partition.items())
    request = schema.ProduceRequest(
        transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=5), topic_data=(schema.TopicProduceData(name=TOPIC, partition_data=partitions),)
    )
    answers = call_handler(server.broker, ANONYMOUS, PRODUCE, 9, request).responses[0].partition_responses
    return [(int(answer.error_code), answer.error_message or "", int(answer.base_offset)) for answer in answers]


def test_both_doors_refuse_a_transactional_batch_without_a_transactional_id_and_append_nothing(server: InProcessBroker) -> None:
    manager = server.broker.replica_manager
    for door in (grpc_produce, kafka_produce):
        answers = door(server, {0: plain(), 1: plain_then_transactional()})
        assert answers == [(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, REFUSAL, -1)] * 2, door.__name__
        assert [manager.partition_log(TOPIC, partition).log_end_offset for partition in (0, 1)] == [0, 0], door.__name__
    # The same doors append a plain batch: the refusal above is the transactional batch's alone.
    assert [answer[::2] for answer in grpc_produce(server, {0: plain()}) + kafka_produce(server, {0: plain()})] == [(0, 0), (0, 1)]
