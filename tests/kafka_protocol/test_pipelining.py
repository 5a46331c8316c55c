"""Pipelined requests on one Kafka connection: answered in order in bursts, within the request budget and the frame limit.

A client that sends faster than the broker answers (librdkafka with ``linger.ms=0`` sends one
Produce request per record) has many whole frames waiting in the socket; the listener answers
those that arrived together in one worker-thread call. These tests send such bursts in one
write over a raw socket against an in-process broker.
"""

from __future__ import annotations

import asyncio
import datetime
import struct
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.metadata.v12.response import MetadataResponse
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.produce.v9.response import ProduceResponse

import broker_nodes.kafka_protocol.handlers  # noqa: F401  (registers every handler; the listener imports them on its first connection)
from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.connection import MAX_FRAMES_PER_HANDOFF, ConnectionServices, KafkaConnection
from broker_nodes.kafka_protocol.framing import decode_response, encode_request
from broker_nodes.kafka_protocol.limits import ConnectionLimits
from broker_nodes.metrics.kafka import KafkaMetrics
from tests.kafka_protocol.wire import closed_by_peer, connect, read_frame
from tests.support.in_process_broker import InProcessBroker
from weir.records import build_batch

BASE_CONFIGS = {"offsets.topic.num.partitions": "1", "kafka.listen": "127.0.0.1:0"}
TOPIC = "burst"
BURST = 300  # more than one worker-thread call answers (connection.MAX_FRAMES_PER_HANDOFF)
SMALL_BUDGET_BYTES = 4096  # queued.max.request.bytes well below a burst's bytes
PRODUCE_TIMEOUT = datetime.timedelta(seconds=10)


@pytest.fixture
def start_broker(tmp_path: Path) -> Iterator[Callable[..., InProcessBroker]]:
    started: list[InProcessBroker] = []

    def start(**configs: str) -> InProcessBroker:
        merged = {**BASE_CONFIGS, **{key.replace("_", "."): value for key, value in configs.items()}}
        broker = InProcessBroker(tmp_path / f"data-{len(started)}", merged).start()
        broker.broker.topic_admin.create_topic(TOPIC, 1, 1, {})
        started.append(broker)
        return broker

    yield start
    for broker in started:
        broker.stop()


def kafka_port(broker: InProcessBroker) -> int:
    assert broker.running is not None
    return broker.running.kafka_port


def sample(broker: InProcessBroker, name: str, labels: dict[str, str] | None = None) -> float:
    assert broker.running is not None
    return broker.running.metrics.registry.get_sample_value(name, labels or {}) or 0.0


def produce_frame(correlation_id: int, value: bytes) -> bytes:
    """One acks=1 Produce v9 request of a one-record batch to partition 0 of TOPIC."""
    records = build_batch([(1_700_000_000_000, None, value, [])], 0)
    request = ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout=PRODUCE_TIMEOUT,
        topic_data=(TopicProduceData(name=TOPIC, partition_data=(PartitionProduceData(index=0, records=records),)),),
    )
    return encode_request(correlation_id, request)


def read_produce_answers(connection: Any, count: int) -> list[tuple[int, int, ErrorCode]]:
    """(correlation id, base offset, error code) of the next ``count`` Produce responses."""
    answers = []
    for _ in range(count):
        correlation_id, response = decode_response(read_frame(connection), ProduceResponse)
        partition = response.responses[0].partition_responses[0]
        answers.append((correlation_id, partition.base_offset, partition.error_code))
    return answers


def test_a_burst_of_pipelined_produce_requests_is_answered_in_order_with_consecutive_offsets(start_broker: Callable[..., InProcessBroker]) -> None:
    broker = start_broker()
    with connect(kafka_port(broker)) as connection:
        connection.sendall(b"".join(produce_frame(1000 + index, b"value-%d" % index) for index in range(BURST)))
        answers = read_produce_answers(connection, BURST)
    assert answers == [(1000 + index, index, ErrorCode.none) for index in range(BURST)]
    assert sample(broker, "weir_broker_kafka_requests_total", {"api": "produce", "outcome": "ok"}) == BURST


def test_pipelined_requests_beyond_the_request_budget_are_all_answered_and_give_it_back(start_broker: Callable[..., InProcessBroker]) -> None:
    broker = start_broker(queued_max_request_bytes=str(SMALL_BUDGET_BYTES))
    budget_before = sample(broker, "weir_broker_request_budget_bytes")
    frames = [produce_frame(index, b"x" * 100) for index in range(BURST)]
    assert sum(len(frame) for frame in frames) > 10 * SMALL_BUDGET_BYTES
    with connect(kafka_port(broker)) as connection:
        connection.sendall(b"".join(frames))
        answers = read_produce_answers(connection, BURST)
    assert answers == [(index, index, ErrorCode.none) for index in range(BURST)]
    assert sample(broker, "weir_broker_request_budget_bytes") == budget_before


def test_a_frame_over_the_limit_behind_pipelined_requests_closes_the_connection_after_answering_them(start_broker: Callable[..., InProcessBroker]) -> None:
    broker = start_broker(socket_request_max_bytes="1048576")
    request = ApiVersionsRequest(client_software_name="x", client_software_version="1")
    with connect(kafka_port(broker)) as connection:
        connection.sendall(b"".join(encode_request(correlation_id, request) for correlation_id in (1, 2, 3)) + struct.pack(">i", 2**31 - 1))
        answered = [decode_response(read_frame(connection), ApiVersionsResponse)[0] for _ in range(3)]
        assert answered == [1, 2, 3]
        assert closed_by_peer(connection)
    assert sample(broker, "weir_broker_kafka_connections_closed_total", {"reason": "too_large"}) == 1


def test_requests_of_both_pools_pipelined_together_are_answered_in_order(start_broker: Callable[..., InProcessBroker]) -> None:
    broker = start_broker()
    # ApiVersions answers on the quick pool, Metadata on the pool of requests that may wait.
    quick = ApiVersionsRequest(client_software_name="x", client_software_version="1")
    waiting = MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    kinds = [index % 3 == 0 for index in range(60)]  # True: Metadata
    with connect(kafka_port(broker)) as connection:
        connection.sendall(b"".join(encode_request(index, waiting if is_metadata else quick) for index, is_metadata in enumerate(kinds)))
        answered = []
        for is_metadata in kinds:
            correlation_id, response = decode_response(read_frame(connection), MetadataResponse if is_metadata else ApiVersionsResponse)
            assert (TOPIC in {topic.name for topic in response.topics}) if is_metadata else response.error_code == ErrorCode.none
            answered.append(correlation_id)
    assert answered == list(range(len(kinds)))


class RecordingWriter:
    """A StreamWriter stand-in that appends (connection name, response frames in the write) to a shared log."""

    def __init__(self, name: str, log: list[tuple[str, int]], closes_after_writes: int | None = None) -> None:
        self.name = name
        self.log = log
        self.transport = self
        self.closes_after_writes = closes_after_writes  # the client leaves after this many writes (None: never)

    def write(self, data: bytes) -> None:
        frames, position = 0, 0
        while position < len(data):
            (size,) = struct.unpack_from(">i", data, position)
            position += 4 + size
            frames += 1
        self.log.append((self.name, frames))

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return self.closes_after_writes is not None and len(self.log) >= self.closes_after_writes

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None


def serve_on_one_loop(tmp_path: Path, connections: list[tuple[str, bytes, int | None]]) -> list[tuple[str, int]]:
    """Serve fake connections (name, bytes the client sent, writes until it leaves) on one event loop; the writes, in order."""
    broker = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1"}).start()
    broker.broker.topic_admin.create_topic(TOPIC, 1, 1, {})
    executor, waiting = ThreadPoolExecutor(2), ThreadPoolExecutor(2)
    log: list[tuple[str, int]] = []
    try:
        listener = api.KafkaListener(node_id=1, host="127.0.0.1", port=9092)
        services = ConnectionServices(broker.broker, listener, executor, waiting, None, KafkaMetrics())
        limits = ConnectionLimits(max_frame_bytes=1 << 20, idle_timeout=30.0, read_timeout=30.0)

        async def serve_all() -> None:
            served = []
            for name, sent, closes_after_writes in connections:
                reader = asyncio.StreamReader()
                reader.feed_data(sent)
                reader.feed_eof()
                writer = RecordingWriter(name, log, closes_after_writes)
                served.append(KafkaConnection(reader, writer, services, limits, name, "127.0.0.1"))  # type: ignore[arg-type]
            await asyncio.gather(*(connection.serve() for connection in served))

        asyncio.run(serve_all())
    finally:
        executor.shutdown()
        waiting.shutdown()
        broker.stop()
    return log


def test_a_connection_with_a_backlog_gives_other_connections_their_turn_between_bursts(tmp_path: Path) -> None:
    """Produce is answered on the loop and buffered frames are read without suspending: the connection must still yield."""
    burst = b"".join(produce_frame(index, b"busy") for index in range(BURST))
    log = serve_on_one_loop(tmp_path, [("busy", burst, None), ("other", produce_frame(1, b"other"), None)])
    busy_before_other = sum(frames for name, frames in log[: [name for name, _ in log].index("other")] if name == "busy")
    assert sum(frames for name, frames in log if name == "busy") == BURST
    assert busy_before_other <= 2 * MAX_FRAMES_PER_HANDOFF  # not the whole burst first


def test_a_client_that_left_gets_no_answers_to_the_requests_it_left_queued(tmp_path: Path) -> None:
    burst = b"".join(produce_frame(index, b"gone") for index in range(BURST))
    log = serve_on_one_loop(tmp_path, [("gone", burst, 1)])
    assert log == [("gone", MAX_FRAMES_PER_HANDOFF)]  # the first burst's answers, then the connection ended
