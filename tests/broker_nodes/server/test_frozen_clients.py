"""A client that freezes (SIGSTOP) or vanishes gives its broker request thread back.

An SDK producer keeps a ProduceStream open to its broker, and the stream holds one of the
broker's request threads (of the few it lets streams take). A real producer process sends a
record, is frozen with SIGSTOP, and the broker's keepalive pings (connections.keepalive.*, short
here) find it unresponsive and close its connection: the stream ends. Resumed, the producer
delivers again on a new connection. A client that keeps a stream open without using it has it
ended after connections.max.idle.ms. Every wait is bounded.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from grpc_protos.weir.v1 import broker_pb2
from server_runtime.lifeline import spawn
from tests.support.in_process_broker import InProcessBroker
from weir.admin import AdminClient, NewTopic
from weir.records import RecordBatchBuilder

WAIT_SECONDS = 30.0
TOPIC = "frozen"
# The producer: one record, then another each time a line arrives on standard input; reports each delivery.
PRODUCER = """
import sys
from weir import Producer
producer = Producer({"bootstrap.servers": sys.argv[1], "linger.ms": 0})
for line in iter(sys.stdin.readline, ""):
    producer.produce(sys.argv[2], line.strip().encode())
    left = producer.flush(30)
    print("delivered" if left == 0 else "undelivered", flush=True)
"""


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    configs = {"connections.keepalive.time.ms": "1000", "connections.keepalive.timeout.ms": "1000", "connections.max.idle.ms": "2000"}
    running = InProcessBroker(tmp_path, configs).start()
    yield running
    running.stop()


def _wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {WAIT_SECONDS} s: {what}")


def test_a_frozen_producers_stream_ends_and_the_producer_delivers_again_when_resumed(broker: InProcessBroker) -> None:
    address = f"127.0.0.1:{broker.port}"
    AdminClient({"bootstrap.servers": address}).create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(WAIT_SECONDS)
    producer = spawn([sys.executable, "-c", PRODUCER, address, TOPIC], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert producer.stdin is not None and producer.stdout is not None
        producer.stdin.write("one\n")
        producer.stdin.flush()
        assert producer.stdout.readline().strip() == "delivered"
        _wait_for(lambda: broker.broker.streams.idle_count == 1, "the producer's stream waits for its next request")

        os.kill(producer.pid, signal.SIGSTOP)
        _wait_for(lambda: broker.broker.streams.idle_count == 0, "the frozen producer's stream ended")

        os.kill(producer.pid, signal.SIGCONT)
        producer.stdin.write("two\n")
        producer.stdin.flush()
        assert producer.stdout.readline().strip() == "delivered"
    finally:
        producer.kill()
        producer.wait(WAIT_SECONDS)
        for pipe in (producer.stdin, producer.stdout):
            if pipe is not None:
                pipe.close()


def test_a_stream_left_open_without_requests_is_ended_after_connections_max_idle_ms(broker: InProcessBroker) -> None:
    address = f"127.0.0.1:{broker.port}"
    AdminClient({"bootstrap.servers": address}).create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(WAIT_SECONDS)
    builder = RecordBatchBuilder()
    builder.append(int(time.time() * 1000), None, b"only")
    request = broker_pb2.ProduceRequest(
        acks=1,
        timeout_ms=5000,
        topics=[broker_pb2.ProduceTopicData(topic=TOPIC, partitions=[broker_pb2.ProducePartitionData(partition=0, records=builder.build())])],
    )
    outgoing: queue.SimpleQueue[broker_pb2.ProduceRequest | None] = queue.SimpleQueue()

    def requests() -> Iterator[broker_pb2.ProduceRequest]:
        while (item := outgoing.get(timeout=WAIT_SECONDS)) is not None:
            yield item

    outgoing.put(request)
    answers = broker.stub.ProduceStream(requests(), timeout=WAIT_SECONDS * 2)
    try:
        [partition] = next(answers).topics[0].partitions
        assert partition.error_code == 0 and partition.base_offset == 0
        # Nothing more is sent: the broker ends the stream (the SDK would have closed it after 10 s itself).
        with pytest.raises(grpc.RpcError) as ended:
            next(answers)
        assert ended.value.code() == grpc.StatusCode.CANCELLED
        assert broker.broker.streams.idle_count == 0
    finally:
        outgoing.put(None)
        answers.cancel()
