"""The idempotent producer's retries against a scripted broker: same bytes on every retry, and epoch bumps after sequence gaps.

The scripted broker (tests/weir/scripted_broker.py) answers each Produce as the test says, so
that a failure lands on exactly the batch the test names. What the real brokers do with the
retried bytes (recognise duplicates) is covered by the failover tests.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import grpc
import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.weir.scripted_broker import ScriptedBroker, metadata
from weir import KafkaError, Producer
from weir.errors import ErrorCode
from weir.records import read_batch_header

PRODUCER_ID = 7000
TOPIC = "orders"

# One Produce partition as the broker saw it: (partition, producer id, epoch, base sequence, record bytes).
Sent = tuple[int, int, int, int, bytes]
# Decides one partition's answer from what was sent and how many Produce calls came before:
# an error code (0: appended) or a gRPC status failing the whole call.
Script = Callable[[Sent, int], "int | grpc.StatusCode"]


class ProduceScript:
    """Answers Produce per partition as ``script`` says and records every batch received."""

    def __init__(self, script: Script) -> None:
        self._script = script
        self._lock = threading.Lock()
        self.sent: list[list[Sent]] = []
        self._next_offset = 0

    def __call__(self, request: broker_pb2.ProduceRequest) -> broker_pb2.ProduceResponse | grpc.StatusCode:
        with self._lock:
            call_index = len(self.sent)
            batches = []
            for topic in request.topics:
                for partition in topic.partitions:
                    header = read_batch_header(partition.records)
                    batches.append((partition.partition, header.producer_id, header.producer_epoch, header.base_sequence, partition.records))
            self.sent.append(batches)
            answers = []
            for sent in batches:
                outcome = self._script(sent, call_index)
                if isinstance(outcome, grpc.StatusCode):
                    return outcome
                base_offset = -1
                if outcome == 0:
                    base_offset = self._next_offset
                    self._next_offset += read_batch_header(sent[4]).records_count
                answers.append(broker_pb2.ProducePartitionResponse(partition=sent[0], error_code=outcome, base_offset=base_offset, log_append_time_ms=-1))
            return broker_pb2.ProduceResponse(topics=[broker_pb2.ProduceTopicResponse(topic=TOPIC, partitions=answers)])


def _init_producer_id(request: broker_pb2.InitProducerIdRequest) -> broker_pb2.InitProducerIdResponse:
    if request.producer_id == PRODUCER_ID:
        return broker_pb2.InitProducerIdResponse(producer_id=PRODUCER_ID, producer_epoch=request.producer_epoch + 1)
    return broker_pb2.InitProducerIdResponse(producer_id=PRODUCER_ID, producer_epoch=0)


@pytest.fixture
def broker() -> Iterator[ScriptedBroker]:
    started = ScriptedBroker(1).start()
    started.answers["Metadata"] = lambda request: metadata([started], {TOPIC: [(1, 3), (1, 3)]})
    started.answers["InitProducerId"] = _init_producer_id
    try:
        yield started
    finally:
        started.stop()


class Reports:
    """Delivery reports as (error code or None, value, offset)."""

    def __init__(self) -> None:
        self.items: list[tuple[int | None, bytes, int]] = []

    def __call__(self, error: KafkaError | None, message) -> None:  # type: ignore[no-untyped-def]
        self.items.append((None if error is None else error.code(), message.value(), message.offset()))


def _producer(broker: ScriptedBroker, reports: Reports) -> Producer:
    return Producer(
        {
            "bootstrap.servers": broker.address,
            "linger.ms": 0,
            "retry.backoff.ms": 10,
            "retry.backoff.max.ms": 50,
            "delivery.timeout.ms": 20000,
            "enable.idempotence": True,
            "on_delivery": reports,
        }
    )


def _produce_one(producer: Producer, value: bytes, partition: int = 0) -> None:
    producer.produce(TOPIC, value, partition=partition)
    assert producer.flush(20) == 0


def test_a_batch_is_resent_with_the_same_bytes_after_a_transport_failure_and_a_leader_error(broker: ScriptedBroker) -> None:
    outcomes = [grpc.StatusCode.UNAVAILABLE, ErrorCode.NOT_LEADER_OR_FOLLOWER, 0]  # type: ignore[attr-defined]
    script = ProduceScript(lambda sent, call_index: outcomes[call_index])
    broker.answers["Produce"] = script
    reports = Reports()
    producer = _producer(broker, reports)
    _produce_one(producer, b"once")
    producer.close()

    assert reports.items == [(None, b"once", 0)]
    [[first], [second], [third]] = script.sent
    assert first[4] == second[4] == third[4]  # producer id, epoch, sequence and CRC unchanged
    assert first[1:4] == (PRODUCER_ID, 0, 0)
    assert len(broker.called("Metadata")) >= 2  # NOT_LEADER_OR_FOLLOWER made it look for the leader again


def test_duplicate_sequence_counts_as_delivered_with_an_unknown_offset(broker: ScriptedBroker) -> None:
    broker.answers["Produce"] = ProduceScript(lambda sent, call_index: ErrorCode.DUPLICATE_SEQUENCE_NUMBER)  # type: ignore[attr-defined]
    reports = Reports()
    producer = _producer(broker, reports)
    _produce_one(producer, b"seen-before")
    producer.close()
    assert reports.items == [(None, b"seen-before", -1)]


def test_unknown_producer_id_bumps_the_epoch_and_resends_from_sequence_zero(broker: ScriptedBroker) -> None:
    script = ProduceScript(lambda sent, call_index: ErrorCode.UNKNOWN_PRODUCER_ID if call_index == 1 else 0)  # type: ignore[attr-defined]
    broker.answers["Produce"] = script
    reports = Reports()
    producer = _producer(broker, reports)
    _produce_one(producer, b"first")
    _produce_one(producer, b"second")
    producer.close()

    assert [error for error, _, _ in reports.items] == [None, None]
    assert [batch[1:4] for [batch] in script.sent] == [(PRODUCER_ID, 0, 0), (PRODUCER_ID, 0, 1), (PRODUCER_ID, 1, 0)]
    bump = broker.called("InitProducerId")[-1]
    assert (bump.producer_id, bump.producer_epoch) == (PRODUCER_ID, 0)


def test_out_of_order_sequence_for_the_oldest_batch_fails_it_and_later_batches_go_on_under_a_new_epoch(broker: ScriptedBroker) -> None:
    script = ProduceScript(lambda sent, call_index: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER if call_index == 0 else 0)  # type: ignore[attr-defined]
    broker.answers["Produce"] = script
    reports = Reports()
    producer = _producer(broker, reports)
    _produce_one(producer, b"lost")
    _produce_one(producer, b"next")
    producer.close()

    assert [(error, value) for error, value, _ in reports.items] == [(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, b"lost"), (None, b"next")]  # type: ignore[attr-defined]
    assert [batch[1:4] for [batch] in script.sent] == [(PRODUCER_ID, 0, 0), (PRODUCER_ID, 1, 0)]


def test_epoch_bump_waits_until_a_batch_that_may_have_been_appended_is_resent_under_the_old_epoch(broker: ScriptedBroker) -> None:
    def answer(sent: Sent, call_index: int) -> int:
        partition = sent[0]
        if call_index == 0:
            # Partition 0 timed out at the broker (appended or not: unknown); partition 1 is refused for good.
            return ErrorCode.REQUEST_TIMED_OUT if partition == 0 else ErrorCode.INVALID_RECORD  # type: ignore[attr-defined]
        return 0

    script = ProduceScript(answer)
    broker.answers["Produce"] = script
    reports = Reports()
    producer = _producer(broker, reports)
    producer.produce(TOPIC, b"maybe-appended", partition=0)
    producer.produce(TOPIC, b"refused", partition=1)
    assert producer.flush(20) == 0
    _produce_one(producer, b"after", partition=1)
    producer.close()

    assert sorted((value, error) for error, value, _ in reports.items) == [
        (b"after", None),
        (b"maybe-appended", None),
        (b"refused", ErrorCode.INVALID_RECORD),  # type: ignore[attr-defined]
    ]
    sent = [batch for request in script.sent for batch in request]
    first_try = next(batch for batch in sent if batch[0] == 0)
    resent = [batch for batch in sent if batch[0] == 0][1]
    assert resent[4] == first_try[4]  # the same bytes, under the old epoch
    assert resent[1:4] == (PRODUCER_ID, 0, 0)
    assert sent[-1][1:4] == (PRODUCER_ID, 1, 0)  # after the bump partition 1 starts again at 0
    assert len(broker.called("InitProducerId")) == 2


def test_a_partition_without_a_leader_keeps_its_records_until_metadata_names_one(broker: ScriptedBroker) -> None:
    answers = iter([metadata([broker], {TOPIC: [(-1, 3), (-1, 3)]})] * 3)
    broker.answers["Metadata"] = lambda request: next(answers, metadata([broker], {TOPIC: [(1, 4), (1, 4)]}))
    broker.answers["Produce"] = ProduceScript(lambda sent, call_index: 0)
    reports = Reports()
    producer = _producer(broker, reports)
    _produce_one(producer, b"patient")
    producer.close()

    assert reports.items == [(None, b"patient", 0)]
    assert len(broker.called("Metadata")) >= 4


def test_a_batch_refused_by_its_old_leader_goes_to_the_new_leader_without_waiting_out_its_backoff() -> None:
    old, new = ScriptedBroker(1).start(), ScriptedBroker(2).start()
    moved = threading.Event()
    try:
        for broker in (old, new):
            broker.answers["Metadata"] = lambda request: metadata([old, new], {TOPIC: [(2 if moved.is_set() else 1, 3)]})
            broker.answers["InitProducerId"] = _init_producer_id

        def refuse(request: broker_pb2.ProduceRequest) -> broker_pb2.ProduceResponse:
            moved.set()  # the election happened meanwhile: metadata names broker 2 from now on
            partition = request.topics[0].partitions[0].partition
            answer = broker_pb2.ProducePartitionResponse(partition=partition, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, base_offset=-1)  # type: ignore[attr-defined]
            return broker_pb2.ProduceResponse(topics=[broker_pb2.ProduceTopicResponse(topic=TOPIC, partitions=[answer])])

        old.answers["Produce"] = refuse
        new.answers["Produce"] = ProduceScript(lambda sent, call_index: 0)
        reports = Reports()
        # A backoff far longer than the flush below: only skipping it can deliver in time.
        producer = Producer(
            {
                "bootstrap.servers": old.address,
                "linger.ms": 0,
                "retry.backoff.ms": 30000,
                "retry.backoff.max.ms": 30000,
                "delivery.timeout.ms": 60000,
                "on_delivery": reports,
            }
        )
        producer.produce(TOPIC, b"moved", partition=0)
        assert producer.flush(10) == 0
        producer.close()
        assert reports.items == [(None, b"moved", 0)]
        assert len(old.called("Produce")) == 1 and len(new.called("Produce")) == 1
    finally:
        old.stop()
        new.stop()


def test_batches_for_one_broker_go_in_requests_of_at_most_message_max_bytes(broker: ScriptedBroker) -> None:
    broker.answers["Metadata"] = lambda request: metadata([broker], {TOPIC: [(1, 3)] * 4})
    script = ProduceScript(lambda sent, call_index: 0)
    broker.answers["Produce"] = script
    reports = Reports()
    # A long linger makes the four batches ready in the same round of the sender.
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 200, "message.max.bytes": 2000, "on_delivery": reports})
    for partition in range(4):
        producer.produce(TOPIC, bytes([partition]) * 900, partition=partition)
    assert producer.flush(20) == 0
    producer.close()

    assert sorted(value[0] for _, value, _ in reports.items) == [0, 1, 2, 3]
    assert all(error is None for error, _, _ in reports.items)
    assert len(script.sent) >= 2
    assert all(sum(len(batch[4]) for batch in request) <= 2000 for request in script.sent)
    assert any(len(request) == 2 for request in script.sent)  # still several batches per request when they fit
