"""acks=all Produce requests pipelined on one Kafka connection wait for the followers together (issue 19 goal 3).

A producer keeps up to five Produce requests in flight per connection (librdkafka's and Kafka's
``max.in.flight`` default); an acks=all one waits until the in-sync replicas have its batch. The
listener goes on reading and appending the connection's later Produce requests while earlier
ones wait, so their waits overlap, and still answers in request order. Against three
in-process brokers whose followers do not fetch until the test lets them, so that every
acks=all produce stays parked as long as the test needs.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker_nodes.kafka_protocol.connection import MAX_IN_FLIGHT_REQUESTS
from broker_nodes.kafka_protocol.framing import encode_request
from tests.broker_nodes.replication.cluster import QUALIFIED, ReplicatedCluster
from tests.broker_nodes.server.helpers import batch
from tests.kafka_protocol.admin_calls import request_module
from tests.kafka_protocol.test_parked_requests import (
    LONG_WAIT_MS,
    METADATA,
    PRODUCE,
    kafka_port,
    metadata_request,
    poll_until,
    read_response,
)
from tests.kafka_protocol.wire import call, closed_by_peer, connect
from weir.errors import ErrorCode

INIT_PRODUCER_ID = 22
RECORDS_PER_REQUEST = 2
ACKS_ALL = -1
LONG_WAIT_TIMEOUT = datetime.timedelta(milliseconds=LONG_WAIT_MS)  # produces wait for the followers, not for their timeout


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    started = ReplicatedCluster(
        tmp_path,
        broker_configs={
            "kafka.listen": "127.0.0.1:0",
            "replica.lag.time.max.ms": "60000",  # the ISR keeps the silent followers: acks=all produces wait for them
        },
    )
    try:
        started.apply(leader=1, epoch=1, to=[1])  # the followers do not know yet: nothing replicates
        yield started
    finally:
        started.stop()


def let_followers_fetch(cluster: ReplicatedCluster) -> None:
    cluster.apply(leader=1, epoch=1, to=[2, 3])


def produce_frame(correlation_id: int, *, acks: int = ACKS_ALL, producer: tuple[int, int, int] | None = None) -> bytes:
    """A Produce v9 request of RECORDS_PER_REQUEST records to the replicated partition; ``producer``: (id, epoch, base sequence)."""
    values = [b"request %d record %d" % (correlation_id, index) for index in range(RECORDS_PER_REQUEST)]
    options: dict[str, int] = {}
    if producer is not None:
        options = {"producer_id": producer[0], "producer_epoch": producer[1], "base_sequence": producer[2]}
    schema = request_module(PRODUCE, 9)
    partition = schema.PartitionProduceData(index=0, records=batch(values, **options))
    request = schema.ProduceRequest(
        acks=acks,
        timeout=LONG_WAIT_TIMEOUT,
        topic_data=(schema.TopicProduceData(name=QUALIFIED, partition_data=(partition,)),),
    )
    return encode_request(correlation_id, request)


def produce_answers(client: Any, count: int) -> list[tuple[int, int, int]]:
    """The next ``count`` Produce answers on ``client``: (correlation id, error, base offset) each."""
    answers = []
    for _ in range(count):
        correlation_id, response = read_response(client, PRODUCE, 9)
        partition = response.responses[0].partition_responses[0]
        answers.append((correlation_id, int(partition.error_code), int(partition.base_offset)))
    return answers


def budget_in_use(cluster: ReplicatedCluster) -> float:
    running = cluster.nodes[1].running
    assert running is not None
    return running.metrics.registry.get_sample_value("weir_broker_request_budget_bytes") or 0.0


def test_pipelined_acks_all_produces_all_wait_at_once_and_are_answered_in_order(cluster: ReplicatedCluster) -> None:
    acks = cluster.nodes[1].broker.replication.acks
    with connect(kafka_port(cluster.nodes[1])) as client:
        client.sendall(b"".join(produce_frame(index) for index in range(MAX_IN_FLIGHT_REQUESTS)))
        poll_until(lambda: acks.parked == MAX_IN_FLIGHT_REQUESTS, "every pipelined acks=all produce waiting at once")
        assert cluster.log(1).log_end_offset == MAX_IN_FLIGHT_REQUESTS * RECORDS_PER_REQUEST
        let_followers_fetch(cluster)
        answers = produce_answers(client, MAX_IN_FLIGHT_REQUESTS)
        assert answers == [(index, ErrorCode.NO_ERROR, index * RECORDS_PER_REQUEST) for index in range(MAX_IN_FLIGHT_REQUESTS)]
        poll_until(lambda: acks.parked == 0, "every acks=all waiter released")
        assert call(client, metadata_request(), correlation_id=100).throttle_time is not None  # the connection goes on


def test_an_idempotent_producers_pipelined_batches_are_appended_in_sequence_order(cluster: ReplicatedCluster) -> None:
    with connect(kafka_port(cluster.nodes[1])) as client:
        schema = request_module(INIT_PRODUCER_ID, 4)
        allocated = call(client, schema.InitProducerIdRequest(transactional_id=None, transaction_timeout=LONG_WAIT_TIMEOUT), correlation_id=1)
        assert allocated.error_code == ErrorCode.NO_ERROR
        frames = [
            produce_frame(10 + index, producer=(allocated.producer_id, allocated.producer_epoch, index * RECORDS_PER_REQUEST))
            for index in range(MAX_IN_FLIGHT_REQUESTS)
        ]
        client.sendall(b"".join(frames))
        poll_until(lambda: cluster.nodes[1].broker.replication.acks.parked == MAX_IN_FLIGHT_REQUESTS, "every idempotent batch waiting")
        let_followers_fetch(cluster)
        answers = produce_answers(client, MAX_IN_FLIGHT_REQUESTS)
    assert answers == [(10 + index, ErrorCode.NO_ERROR, index * RECORDS_PER_REQUEST) for index in range(MAX_IN_FLIGHT_REQUESTS)]


def test_requests_behind_a_waiting_produce_are_read_and_appended_but_answered_after_it(cluster: ReplicatedCluster) -> None:
    acks = cluster.nodes[1].broker.replication.acks
    with connect(kafka_port(cluster.nodes[1])) as client:
        client.sendall(produce_frame(1) + produce_frame(2, acks=1) + encode_request(3, metadata_request()) + produce_frame(4, acks=1))
        # The acks=1 produce behind the waiting one is appended meanwhile: the connection did not stop reading.
        poll_until(lambda: acks.parked == 1 and cluster.log(1).log_end_offset == 2 * RECORDS_PER_REQUEST, "the acks=1 produce appended behind the waiting one")
        let_followers_fetch(cluster)
        assert produce_answers(client, 2) == [(1, ErrorCode.NO_ERROR, 0), (2, ErrorCode.NO_ERROR, RECORDS_PER_REQUEST)]
        correlation_id, metadata = read_response(client, METADATA, 12)
        assert correlation_id == 3 and metadata.throttle_time is not None
        # A request other than Produce is answered only after every earlier one; the produce after it, after it.
        assert produce_answers(client, 1) == [(4, ErrorCode.NO_ERROR, 2 * RECORDS_PER_REQUEST)]


def test_a_client_that_leaves_with_produces_waiting_releases_every_waiter(cluster: ReplicatedCluster) -> None:
    leader = cluster.nodes[1]
    acks = leader.broker.replication.acks
    assert leader.running is not None and leader.running.kafka is not None
    listener = leader.running.kafka
    budget_before = budget_in_use(cluster)
    client = connect(kafka_port(leader))
    try:
        client.sendall(b"".join(produce_frame(index) for index in range(MAX_IN_FLIGHT_REQUESTS + 2)))  # two more queued behind the bound
        poll_until(lambda: acks.parked == MAX_IN_FLIGHT_REQUESTS, "the pipelined produces waiting")
    finally:
        client.close()
    poll_until(lambda: acks.parked == 0 and listener.connection_count == 0, "the waiters released and the connection gone", timeout_seconds=10.0)
    assert budget_in_use(cluster) == budget_before  # the queued requests gave their bytes back
    let_followers_fetch(cluster)  # nothing is left to answer: the appended batches simply replicate
    with connect(kafka_port(leader)) as other:
        assert call(other, metadata_request(), correlation_id=1).throttle_time is not None


def test_a_connection_answers_at_most_max_in_flight_requests_ahead_of_its_responses(cluster: ReplicatedCluster) -> None:
    acks = cluster.nodes[1].broker.replication.acks
    beyond = 3
    frames = [produce_frame(index) for index in range(MAX_IN_FLIGHT_REQUESTS + beyond)]
    queued_bytes = sum(len(frame) - 4 for frame in frames[MAX_IN_FLIGHT_REQUESTS:])  # what the requests beyond the bound hold of the budget
    budget_before = budget_in_use(cluster)
    with connect(kafka_port(cluster.nodes[1])) as client:
        client.sendall(b"".join(frames))
        # A stable state: the first ones wait for followers that do not fetch, and the others were read and wait for them.
        poll_until(
            lambda: acks.parked == MAX_IN_FLIGHT_REQUESTS and budget_in_use(cluster) == budget_before + queued_bytes,
            "the bound's worth waiting, the rest read and queued",
        )
        assert cluster.log(1).log_end_offset == MAX_IN_FLIGHT_REQUESTS * RECORDS_PER_REQUEST  # the queued ones are not appended
        let_followers_fetch(cluster)
        answers = produce_answers(client, len(frames))
    assert answers == [(index, ErrorCode.NO_ERROR, index * RECORDS_PER_REQUEST) for index in range(len(frames))]
    poll_until(lambda: budget_in_use(cluster) == budget_before, "the request budget given back")


def test_stopping_the_listener_with_pipelined_produces_waiting_ends_the_connection_and_releases_them(cluster: ReplicatedCluster) -> None:
    leader = cluster.nodes[1]
    acks = leader.broker.replication.acks
    assert leader.running is not None and leader.running.kafka is not None
    listener = leader.running.kafka
    with connect(kafka_port(leader)) as client:
        client.sendall(b"".join(produce_frame(index) for index in range(MAX_IN_FLIGHT_REQUESTS)))
        poll_until(lambda: acks.parked == MAX_IN_FLIGHT_REQUESTS, "the pipelined produces waiting")
        listener.stop(grace_seconds=5.0)  # the waits are woken, are still not replicated, and end the connection
        assert closed_by_peer(client)
    assert acks.parked == 0


def test_waits_parked_on_the_loop_take_no_request_thread_slot(tmp_path: Path) -> None:
    """With one request thread the broker has 4 acks=all wait slots for its gRPC calls; the Kafka listener's waits hold no
    thread, so two connections' 10 pipelined acks=all produces all wait (none refused REQUEST_TIMED_OUT) and all succeed."""
    cluster = ReplicatedCluster(
        tmp_path,
        broker_configs={"kafka.listen": "127.0.0.1:0", "replica.lag.time.max.ms": "60000", "num.io.threads": "1"},
    )
    try:
        cluster.apply(leader=1, epoch=1, to=[1])
        replication = cluster.nodes[1].broker.replication
        assert replication.max_waiters < 2 * MAX_IN_FLIGHT_REQUESTS
        with connect(kafka_port(cluster.nodes[1])) as first, connect(kafka_port(cluster.nodes[1])) as second:
            first.sendall(b"".join(produce_frame(index) for index in range(MAX_IN_FLIGHT_REQUESTS)))
            second.sendall(b"".join(produce_frame(100 + index) for index in range(MAX_IN_FLIGHT_REQUESTS)))
            poll_until(lambda: replication.acks.parked == 2 * MAX_IN_FLIGHT_REQUESTS, "both connections' produces waiting at once")
            let_followers_fetch(cluster)
            answers = produce_answers(first, MAX_IN_FLIGHT_REQUESTS) + produce_answers(second, MAX_IN_FLIGHT_REQUESTS)
        assert [error for _, error, _ in answers] == [ErrorCode.NO_ERROR] * (2 * MAX_IN_FLIGHT_REQUESTS)
        assert cluster.log(1).log_end_offset == 2 * MAX_IN_FLIGHT_REQUESTS * RECORDS_PER_REQUEST
        # A gRPC acks=all produce still takes (and gives back) a slot: the thread-bound cap is intact.
        assert cluster.produce(1, [b"over grpc"], timeout_ms=20000).error_code == ErrorCode.NO_ERROR
    finally:
        cluster.stop()
