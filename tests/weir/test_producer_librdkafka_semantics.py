"""The producer's librdkafka behaviours against one scripted broker (in-process gRPC server, shared by the module).

delivery.report.only.error, queue.buffering.max.messages/kbytes, allow.auto.create.topics on
the Metadata request, stats_cb's statistics, throttle_cb's events and the debug log.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator

import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.weir.scripted_broker import ScriptedBroker, metadata
from weir import KafkaError, KafkaException, Producer
from weir.errors import ErrorCode
from weir.records import read_batch_header

TOPIC = "orders"


class _Broker(ScriptedBroker):
    throttle_ms = 0


def _produce_answer(broker: _Broker):  # type: ignore[no-untyped-def]
    def answer(request: broker_pb2.ProduceRequest) -> broker_pb2.ProduceResponse:
        topics = []
        for topic in request.topics:
            partitions = []
            for partition in topic.partitions:
                read_batch_header(partition.records)
                partitions.append(broker_pb2.ProducePartitionResponse(partition=partition.partition, base_offset=0))
            topics.append(broker_pb2.ProduceTopicResponse(topic=topic.topic, partitions=partitions))
        return broker_pb2.ProduceResponse(topics=topics, throttle_time_ms=broker.throttle_ms)

    return answer


def _metadata_answer(broker: _Broker):  # type: ignore[no-untyped-def]
    def answer(request: broker_pb2.MetadataRequest) -> broker_pb2.MetadataResponse:
        response = metadata([broker], {TOPIC: [(1, 0), (1, 0)]})
        for name in request.topics:
            if name != TOPIC:
                response.topics.append(broker_pb2.TopicMetadata(name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        return response

    return answer


@pytest.fixture(scope="module")
def broker() -> Iterator[_Broker]:
    started = _Broker(1).start()
    started.answers["Metadata"] = _metadata_answer(started)
    started.answers["Produce"] = _produce_answer(started)
    try:
        yield started
    finally:
        started.stop()


def _poll_until(producer: Producer, done, seconds: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "timed out"
        producer.poll(0.05)


def test_only_failed_records_get_a_report_with_delivery_report_only_error(broker: _Broker) -> None:
    reports: list[tuple[int | None, str]] = []
    producer = Producer({"bootstrap.servers": broker.address, "delivery.report.only.error": True, "allow.auto.create.topics": False})
    try:
        on_delivery = lambda error, message: reports.append((error and error.code(), message.topic()))  # noqa: E731
        producer.produce(TOPIC, b"ok", on_delivery=on_delivery)
        producer.produce("missing", b"fails", on_delivery=on_delivery)
        assert producer.flush(10) == 0
    finally:
        producer.close()
    assert reports == [(KafkaError._UNKNOWN_TOPIC, "missing")]


def test_queue_buffering_max_messages_raises_buffer_error_at_once(broker: _Broker) -> None:
    producer = Producer({"bootstrap.servers": broker.address, "queue.buffering.max.messages": 2, "linger.ms": 60000})
    try:
        producer.produce(TOPIC, b"1", partition=0)
        producer.produce(TOPIC, b"2", partition=0)
        started = time.monotonic()
        with pytest.raises(BufferError, match="queue.buffering.max.messages"):
            producer.produce(TOPIC, b"3", partition=0)
        assert time.monotonic() - started < 1.0
    finally:
        producer.close(0)


def test_queue_buffering_max_kbytes_bounds_the_bytes(broker: _Broker) -> None:
    producer = Producer({"bootstrap.servers": broker.address, "queue.buffering.max.kbytes": 1, "linger.ms": 60000})
    try:
        producer.produce(TOPIC, b"x" * 600, partition=0)
        with pytest.raises(BufferError, match="queue.buffering.max.kbytes"):
            producer.produce(TOPIC, b"y" * 600, partition=0)
    finally:
        producer.close(0)


def test_the_first_metadata_request_asks_for_auto_creation_unless_disabled(broker: _Broker) -> None:
    for config, expected in (({}, True), ({"allow.auto.create.topics": False}, False)):
        producer = Producer({"bootstrap.servers": broker.address, **config})
        try:
            producer.produce(f"new-topic-{expected}", b"v")
        finally:
            producer.close(0)
        asked = [request.allow_auto_topic_creation for request in broker.called("Metadata") if f"new-topic-{expected}" in request.topics]
        assert asked and all(flag is expected for flag in asked)


def test_stats_cb_gets_librdkafka_shaped_statistics_from_poll(broker: _Broker) -> None:
    emitted: list[dict] = []
    producer = Producer(
        {
            "bootstrap.servers": broker.address,
            "client.id": "stats-app",
            "stats_cb": lambda text: emitted.append(json.loads(text)),
            "statistics.interval.ms": 100,
        }
    )
    try:
        for index in range(5):
            producer.produce(TOPIC, b"v%d" % index, partition=index % 2)
        assert producer.flush(10) == 0
        seen = len(emitted)
        _poll_until(producer, lambda: len(emitted) > seen)
    finally:
        producer.close()
    last = emitted[-1]
    assert last["type"] == "producer" and last["client_id"] == "stats-app" and last["name"].startswith("stats-app#producer-")
    assert last["txmsgs"] == 5 and last["msg_cnt"] == 0 and last["tx"] >= 1
    assert {"ts", "time", "msg_size", "rx", "tx_bytes", "rx_bytes", "txmsg_bytes"} <= set(last)
    (broker_stats,) = [entry for entry in last["brokers"].values() if entry["nodeid"] == 1]
    assert broker_stats["name"] == f"{broker.address}/1" and broker_stats["rx"] >= 1 and {"min", "avg", "p99"} <= set(broker_stats["rtt"])
    partitions = last["topics"][TOPIC]["partitions"]
    assert partitions["0"]["txmsgs"] + partitions["1"]["txmsgs"] == 5 and partitions["0"]["leader"] == 1


def test_throttle_cb_gets_the_brokers_throttle_time(broker: _Broker) -> None:
    events = []
    broker.throttle_ms = 250
    producer = Producer({"bootstrap.servers": broker.address, "throttle_cb": events.append})
    try:
        producer.produce(TOPIC, b"v", partition=0)
        assert producer.flush(10) == 0
        _poll_until(producer, lambda: bool(events))
    finally:
        broker.throttle_ms = 0
        producer.close()
    assert (events[0].broker_name, events[0].broker_id, events[0].throttle_time) == (broker.address, 1, 0.25)


def test_debug_msg_routes_the_senders_log_to_the_logger(broker: _Broker) -> None:
    records: list[logging.LogRecord] = []
    logger = logging.getLogger("test.producer.debug")
    logger.setLevel(logging.DEBUG)
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    producer = Producer({"bootstrap.servers": broker.address, "logger": logger, "debug": "msg"})
    try:
        producer.produce(TOPIC, b"v", partition=0)
        assert producer.flush(10) == 0
    finally:
        producer.close()
        logger.removeHandler(handler)
    assert any("PRODUCE" in record.getMessage() and broker.address in record.getMessage() for record in records)


def test_a_partition_out_of_range_fails_the_first_record_through_its_report_then_raises(broker: _Broker) -> None:
    reports: list[int] = []
    producer = Producer({"bootstrap.servers": broker.address, "on_delivery": lambda error, message: reports.append(error.code())})
    try:
        producer.produce(TOPIC, b"v", partition=99)
        assert producer.flush(10) == 0
        with pytest.raises(KafkaException) as raised:
            producer.produce(TOPIC, b"v", partition=99)
    finally:
        producer.close()
    assert reports == [KafkaError._UNKNOWN_PARTITION]
    assert raised.value.args[0].code() == KafkaError._UNKNOWN_PARTITION


def test_a_topic_being_auto_created_holds_the_record_until_the_brokers_have_it(broker: _Broker) -> None:
    # The broker answers LEADER_NOT_AVAILABLE while the controller creates the topic; librdkafka
    # keeps the record queued meanwhile instead of failing it.
    asked: list[int] = []
    usual = broker.answers["Metadata"]

    def being_created(request: broker_pb2.MetadataRequest) -> broker_pb2.MetadataResponse:
        if "fresh" not in request.topics:
            return usual(request)
        asked.append(1)
        if len(asked) < 3:
            response = metadata([broker], {})
            response.topics.append(broker_pb2.TopicMetadata(name="fresh", error_code=ErrorCode.LEADER_NOT_AVAILABLE))
            return response
        return metadata([broker], {"fresh": [(1, 0)]})

    broker.answers["Metadata"] = being_created
    reports: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": broker.address, "retry.backoff.ms": 10})
    try:
        producer.produce("fresh", b"v", on_delivery=lambda error, message: reports.append(error))
        assert producer.flush(10) == 0
    finally:
        producer.close(0)
        broker.answers["Metadata"] = usual
    assert reports == [None] and len(asked) == 3
