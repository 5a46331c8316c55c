"""The producer pipelines up to ``max.in.flight.requests.per.connection`` batches of one partition,
keeping an idempotent producer's order and exactly-once delivery when batches overtake each other,
answers are lost, or a batch fails for good.

A scripted broker (tests/weir/scripted_broker.py) leads the one partition with the idempotence
rules of Kafka's (and Weir's) brokers: a batch is appended only when its base sequence follows the
last appended one, one of the last five appended is answered DUPLICATE_SEQUENCE_NUMBER, anything
else OUT_OF_ORDER_SEQUENCE_NUMBER. Each test holds or loses answers so that the fault lands on
exactly the batch it names, then checks what a user relies on: the partition holds every record
once, in produce() order, and every record got one delivery report. Every wait is bounded.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent import futures

import grpc
import pytest

from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc
from tests.weir.scripted_broker import ScriptedBroker, metadata
from weir import KafkaError, Producer
from weir.errors import ErrorCode
from weir.producer_idempotence import PartitionQueue, partition_in_flight_limit
from weir.records import BatchHeader, batch_records_bytes, decode_records, read_batch_header

TOPIC = "orders"
PRODUCER_ID = 7000
IN_FLIGHT = 5
WAIT_SECONDS = 10.0  # the longest a held call waits for the condition the test scripts

# Runs on the server's call thread before the batch is offered to the leader (it may wait there);
# an error code it returns is the answer instead, and nothing is appended.
Before = Callable[[BatchHeader, int], "int | None"]
# Runs after the leader's answer (error code); returns a gRPC status to fail the call with instead, or None.
After = Callable[[BatchHeader, int, int], "grpc.StatusCode | None"]


class IdempotentLeader:
    """One partition's leader, as far as idempotence goes; records what it appended and answered. Thread-safe."""

    def __init__(self, before: Before | None = None, after: After | None = None) -> None:
        self._before = before
        self._after = after
        self.lock = threading.Condition()
        self.values: list[bytes] = []
        self.answers: Counter[int] = Counter()
        self.in_flight = 0
        self.most_in_flight = 0
        self.arrivals = 0
        self._epoch = -1
        self._last_sequence = -1
        self._recent: deque[tuple[int, int, int]] = deque(maxlen=5)  # (epoch, base, last sequence) of the last appended batches

    def wait_until(self, condition: Callable[[], bool]) -> bool:
        with self.lock:
            return self.lock.wait_for(condition, WAIT_SECONDS)

    def __call__(self, request: broker_pb2.ProduceRequest) -> broker_pb2.ProduceResponse | grpc.StatusCode:
        [topic] = request.topics
        [partition] = topic.partitions
        header = read_batch_header(partition.records)
        with self.lock:
            self.arrivals += 1
            arrival = self.arrivals
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.lock.notify_all()
        try:
            refusal = None if self._before is None else self._before(header, arrival)
            if refusal is not None:
                code, base_offset = self._answered(refusal), -1
            else:
                code, base_offset = self._offer(partition.records, header)
            if self._after is not None:
                failure = self._after(header, arrival, code)
                if failure is not None:
                    return failure
            answer = broker_pb2.ProducePartitionResponse(partition=partition.partition, error_code=code, base_offset=base_offset, log_append_time_ms=-1)
            return broker_pb2.ProduceResponse(topics=[broker_pb2.ProduceTopicResponse(topic=TOPIC, partitions=[answer])])
        finally:
            with self.lock:
                self.in_flight -= 1
                self.lock.notify_all()

    def _offer(self, payload: bytes, header: BatchHeader) -> tuple[int, int]:
        with self.lock:
            if header.producer_id >= 0:
                last = header.base_sequence + header.records_count - 1
                if (header.producer_epoch, header.base_sequence, last) in self._recent:
                    return self._answered(ErrorCode.DUPLICATE_SEQUENCE_NUMBER), -1  # type: ignore[attr-defined]
                expected = 0 if header.producer_epoch > self._epoch else self._last_sequence + 1
                if header.producer_epoch < self._epoch or header.base_sequence != expected:
                    return self._answered(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER), -1  # type: ignore[attr-defined]
                self._epoch, self._last_sequence = header.producer_epoch, last
                self._recent.append((header.producer_epoch, header.base_sequence, last))
            base_offset = len(self.values)
            self.values += [record[3] or b"" for record in decode_records(batch_records_bytes(payload, 0, header), header)]
            self.lock.notify_all()
            return self._answered(0), base_offset

    def _answered(self, code: int) -> int:
        with self.lock:
            self.answers[code] += 1
            self.lock.notify_all()
        return code


def _poll_until(condition: Callable[[], bool]) -> bool:
    """Wait (at most WAIT_SECONDS) for a condition nothing notifies about."""
    pause = threading.Event()
    for _ in range(int(WAIT_SECONDS / 0.01)):
        if condition():
            return True
        pause.wait(0.01)
    return condition()


class Reports:
    """Delivery reports as (error code or None, value, offset), in the order served."""

    def __init__(self) -> None:
        self.items: list[tuple[int | None, bytes, int]] = []
        self.first_served = threading.Event()

    def __call__(self, error: KafkaError | None, message) -> None:  # type: ignore[no-untyped-def]
        self.items.append((None if error is None else error.code(), message.value(), message.offset()))
        self.first_served.set()


def _init_producer_id(request: broker_pb2.InitProducerIdRequest) -> broker_pb2.InitProducerIdResponse:
    if request.producer_id == PRODUCER_ID:
        return broker_pb2.InitProducerIdResponse(producer_id=PRODUCER_ID, producer_epoch=request.producer_epoch + 1)
    return broker_pb2.InitProducerIdResponse(producer_id=PRODUCER_ID, producer_epoch=0)


class PipelineBroker(ScriptedBroker):
    """A scripted broker with threads enough to hold every call the producer may have in flight."""

    def start(self) -> PipelineBroker:
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4 * IN_FLIGHT))
        broker_pb2_grpc.add_BrokerServicer_to_server(self, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()
        return self


@pytest.fixture
def broker() -> Iterator[ScriptedBroker]:
    started = PipelineBroker(1).start()
    started.answers["Metadata"] = lambda request: metadata([started], {TOPIC: [(1, 3)]})
    started.answers["InitProducerId"] = _init_producer_id
    try:
        yield started
    finally:
        started.stop()


def _producer(broker: ScriptedBroker, reports: Reports, **settings: object) -> Producer:
    return Producer(
        {
            "bootstrap.servers": broker.address,
            "linger.ms": 0,
            "batch.num.messages": 1,  # one record per batch: each produce() is one batch
            "retry.backoff.ms": 10,
            "retry.backoff.max.ms": 50,
            "delivery.timeout.ms": 30000,
            "enable.idempotence": True,
            "on_delivery": reports,
            **settings,
        }
    )


def _produce_and_flush(producer: Producer, values: list[bytes]) -> None:
    for value in values:
        producer.produce(TOPIC, value, partition=0)
    assert producer.flush(30) == 0
    producer.close()


VALUES = [b"record-%d" % index for index in range(IN_FLIGHT + 3)]


def test_five_batches_in_flight_lose_their_answers_and_those_the_leader_had_appended_are_counted_once_as_duplicates(broker: ScriptedBroker) -> None:
    leader: IdempotentLeader
    appended_before_the_loss = 3

    def before(header: BatchHeader, arrival: int) -> int | None:
        if arrival <= IN_FLIGHT:  # first sends: held until all five are in flight, then taken in sequence order
            leader.wait_until(lambda: leader.arrivals >= IN_FLIGHT)
            leader.wait_until(lambda: len(leader.values) >= min(header.base_sequence, appended_before_the_loss))
        return None

    def after(header: BatchHeader, arrival: int, code: int) -> grpc.StatusCode | None:
        # The connection breaks with five in flight: the leader appended the first three, no answer arrives.
        return grpc.StatusCode.UNAVAILABLE if arrival <= IN_FLIGHT else None

    def offer_first_three(header: BatchHeader, arrival: int) -> int | None:
        before(header, arrival)
        if arrival <= IN_FLIGHT and header.base_sequence >= appended_before_the_loss:
            return ErrorCode.REQUEST_TIMED_OUT  # type: ignore[attr-defined, no-any-return]  # not appended (its answer is lost anyway)
        return None

    leader = IdempotentLeader(offer_first_three, after)
    broker.answers["Produce"] = leader
    reports = Reports()
    _produce_and_flush(_producer(broker, reports), VALUES)

    assert leader.most_in_flight == IN_FLIGHT
    assert leader.values == VALUES  # once each, in order
    assert leader.answers[ErrorCode.DUPLICATE_SEQUENCE_NUMBER] == appended_before_the_loss  # type: ignore[attr-defined]
    assert sorted(value for error, value, _ in reports.items if error is None) == sorted(VALUES)
    assert len(reports.items) == len(VALUES)  # one report per record: each duplicate counted once
    assert len(broker.called("InitProducerId")) == 1  # no sequence gap, no epoch bump


def test_a_batch_whose_answer_was_lost_is_delivered_once_when_a_later_batch_was_acknowledged(broker: ScriptedBroker) -> None:
    leader: IdempotentLeader

    def before(header: BatchHeader, arrival: int) -> int | None:
        if header.base_sequence == 0:  # any of the racing call threads may arrive first
            leader.wait_until(lambda: leader.arrivals >= IN_FLIGHT)
        else:
            leader.wait_until(lambda: len(leader.values) > 0)
        return None

    def after(header: BatchHeader, arrival: int, code: int) -> grpc.StatusCode | None:
        return grpc.StatusCode.UNAVAILABLE if header.base_sequence == 0 and code == 0 else None  # appended, but the answer is lost

    leader = IdempotentLeader(before, after)
    broker.answers["Produce"] = leader
    reports = Reports()
    _produce_and_flush(_producer(broker, reports), VALUES)

    assert leader.most_in_flight == IN_FLIGHT
    assert leader.values == VALUES  # once each, in order
    assert [error for error, _, _ in reports.items] == [None] * len(VALUES)  # one report per record, none failed
    assert len(broker.called("InitProducerId")) == 1


def test_batches_that_overtake_an_earlier_one_are_resent_behind_it_even_after_it_is_acknowledged(broker: ScriptedBroker) -> None:
    leader: IdempotentLeader
    reports = Reports()

    def before(header: BatchHeader, arrival: int) -> int | None:
        if header.base_sequence == 0:
            # Batch 0 reaches the leader last: every later batch in flight was refused first.
            leader.wait_until(lambda: leader.answers[ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER] >= IN_FLIGHT - 1)  # type: ignore[attr-defined]
        return None

    def after(header: BatchHeader, arrival: int, code: int) -> grpc.StatusCode | None:
        if code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and not reports.first_served.is_set():  # type: ignore[attr-defined]
            # Their refusals reach the producer only after batch 0's acknowledgement was
            # served: nothing earlier is unacknowledged by then, yet they are not at fault.
            reports.first_served.wait(WAIT_SECONDS)
        return None

    leader = IdempotentLeader(before, after)
    broker.answers["Produce"] = leader
    producer = _producer(broker, reports)
    for value in VALUES:
        producer.produce(TOPIC, value, partition=0)
    assert leader.wait_until(lambda: len(leader.values) > 0)
    for _ in range(int(WAIT_SECONDS / 0.05)):  # serve batch 0's report while the refusals are held
        if producer.poll(0.05) or reports.first_served.is_set():
            break
    _produce_and_flush(producer, [])

    assert leader.most_in_flight == IN_FLIGHT
    assert leader.answers[ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER] >= IN_FLIGHT - 1  # type: ignore[attr-defined]
    assert leader.values == VALUES
    assert [error for error, _, _ in reports.items] == [None] * len(VALUES)
    assert len(broker.called("InitProducerId")) == 1  # refused for overtaking, not a gap: no epoch bump


def test_batches_in_flight_behind_one_that_fails_for_good_are_renumbered_under_a_new_epoch(broker: ScriptedBroker) -> None:
    leader: IdempotentLeader

    def before(header: BatchHeader, arrival: int) -> int | None:
        if header.producer_epoch == 0 and header.base_sequence == 0:
            # The first batch is refused for good (nothing appended) once all five are in flight;
            # the four behind it then meet a sequence gap.
            leader.wait_until(lambda: leader.arrivals >= IN_FLIGHT)
            return ErrorCode.INVALID_RECORD  # type: ignore[attr-defined, no-any-return]
        leader.wait_until(lambda: leader.answers[ErrorCode.INVALID_RECORD] > 0)  # type: ignore[attr-defined]
        return None

    leader = IdempotentLeader(before)
    broker.answers["Produce"] = leader
    reports = Reports()
    _produce_and_flush(_producer(broker, reports), VALUES)

    assert leader.most_in_flight == IN_FLIGHT
    assert leader.values == VALUES[1:]  # in order, once each, under epoch 1 from sequence 0
    assert [(error, value) for error, value, _ in reports.items if error is not None] == [(ErrorCode.INVALID_RECORD, VALUES[0])]  # type: ignore[attr-defined]
    assert sorted(value for error, value, _ in reports.items if error is None) == sorted(VALUES[1:])
    bump = broker.called("InitProducerId")[-1]
    assert (bump.producer_id, bump.producer_epoch) == (PRODUCER_ID, 0)


def test_without_idempotence_one_batch_of_a_partition_is_in_flight_unless_the_application_sets_max_in_flight(broker: ScriptedBroker) -> None:
    producer: Producer

    def second_batch_queued() -> bool:
        queue = producer._sender._queues.get((TOPIC, 0))
        return queue is not None and bool(queue.waiting)

    def before(header: BatchHeader, arrival: int) -> int | None:
        if arrival == 1:  # held until the second batch waits at the sender, which sends it only after this answer
            _poll_until(second_batch_queued)
        return None

    leader = IdempotentLeader(before)
    broker.answers["Produce"] = leader
    # The default keeps the order of a producer without sequence numbers: one batch at a time.
    producer = _producer(broker, Reports(), **{"enable.idempotence": False, "acks": "1"})
    _produce_and_flush(producer, VALUES[:2])
    assert leader.most_in_flight == 1
    assert leader.values == VALUES[:2]

    def hold_five(header: BatchHeader, arrival: int) -> int | None:
        if arrival <= IN_FLIGHT:
            pipelined.wait_until(lambda: pipelined.arrivals >= IN_FLIGHT)  # a latch: in_flight drops as they leave
        return None

    pipelined = IdempotentLeader(hold_five)
    broker.answers["Produce"] = pipelined
    explicit = {"enable.idempotence": False, "acks": "1", "max.in.flight.requests.per.connection": IN_FLIGHT}
    _produce_and_flush(_producer(broker, Reports(), **explicit), VALUES)
    assert pipelined.most_in_flight == IN_FLIGHT
    assert sorted(pipelined.values) == sorted(VALUES)  # all there; the order is not promised


def test_batches_that_only_reached_linger_ms_wait_and_grow_behind_the_one_in_flight(broker: ScriptedBroker) -> None:
    """Guards what pipelining keeps from one batch in flight: only full batches are pipelined."""
    leader: IdempotentLeader
    producer: Producer

    def before(header: BatchHeader, arrival: int) -> int | None:
        if arrival == 1:  # held until the other records were produced (each one past linger.ms 0 at once)
            _poll_until(lambda: len(producer) == len(VALUES))
        return None

    leader = IdempotentLeader(before)
    broker.answers["Produce"] = leader
    producer = _producer(broker, Reports(), **{"batch.num.messages": 1000})
    producer.produce(TOPIC, VALUES[0], partition=0)
    assert leader.wait_until(lambda: leader.arrivals == 1)
    for value in VALUES[1:]:
        producer.produce(TOPIC, value, partition=0)
    assert leader.wait_until(lambda: leader.arrivals >= 2)  # (a flush before would send everything at once)
    _produce_and_flush(producer, [])

    assert leader.values == VALUES
    assert leader.arrivals == 2  # the first record alone, then every other one in one batch
    assert leader.most_in_flight == 1


def test_in_flight_limit_per_partition() -> None:
    assert partition_in_flight_limit(5, idempotent=True, explicit=False) == 5
    assert partition_in_flight_limit(5, idempotent=False, explicit=False) == 1
    assert partition_in_flight_limit(3, idempotent=False, explicit=True) == 3
    with pytest.raises(ValueError, match="max.in.flight.requests.per.connection must be at least 1, got 0"):
        partition_in_flight_limit(0, idempotent=True, explicit=True)


def test_a_queue_sends_in_order_up_to_its_limit_and_resends_in_order_once_nothing_sent_later_is_in_flight() -> None:
    from tests.weir.test_producer_idempotence import batch

    queue = PartitionQueue(max_in_flight=3)
    batches = [batch(1) for _ in range(6)]
    for item in batches:
        queue.add(item, assign_sequence=True)
    sent = []
    while (item := queue.next_sendable(0.0)) is not None:
        queue.mark_sent(item)
        sent.append(item)
    assert sent == batches[:3] and queue.full
    assert [item.sent_behind for item in sent] == [False, True, True]
    queue.answered(batches[0])
    queue.retry(batches[0], at=0.0)  # the first failed: nothing goes until what was sent after it is answered
    assert queue.next_sendable(0.0) is None and queue.retry_due_at() is None
    for item in batches[1:3]:  # refused behind it
        queue.answered(item)
        queue.retry(item, at=0.0)
    assert queue.retry_due_at() == 0.0
    for item in batches[:3]:  # resent in sequence order, pipelined, before anything newer
        assert queue.next_sendable(0.0) is item
        queue.mark_sent(item)
    assert [item.sent_behind for item in batches[:3]] == [False, True, True]
    assert queue.next_sendable(0.0) is None  # three in flight
    queue.answered(batches[1])
    assert queue.acknowledge(batches[1]) == []  # before the first's answer came: the first was appended (in flight: its answer decides)
    assert queue.acknowledged_after(batches[0]) and not queue.acknowledged_after(batches[2])
    # Batch 4 would be the third after the oldest unacknowledged (batch 0): within a window of 3 it waits.
    assert queue.next_sendable(0.0) is None
    queue.answered(batches[0])
    queue.finish(batches[0])
    assert queue.next_sendable(0.0) is batches[3]


def test_acknowledging_a_batch_delivers_the_earlier_ones_waiting_for_a_retry() -> None:
    from tests.weir.test_producer_idempotence import batch

    queue = PartitionQueue(max_in_flight=5)
    first, second, third = batch(1), batch(1), batch(1)
    for item in (first, second, third):
        queue.add(item, assign_sequence=True)
        queue.mark_sent(item)
    queue.answered(first)
    queue.retry(first, at=5.0)  # its answer was lost
    queue.answered(second)
    assert queue.acknowledge(second) == [first]  # the leader appended second, so first before it
    assert queue.retries == [] and list(queue.unacknowledged.values()) == [third]
