import threading
import time

import grpc
import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.broker_nodes.server.helpers import batch, create_topic, fetch, list_offset, produce
from tests.support.waiting import wait_until
from weir.errors import ErrorCode
from weir.records import CRC_OFFSET, MAGIC_OFFSET, iter_batch_positions, iter_records


def stored_end(server, topic="orders", partition=0):
    return server.broker.log_manager.get_log(topic, partition).log_end_offset


def test_produce_then_fetch_returns_the_same_bytes_with_offsets_assigned(stub):
    create_topic(stub, "orders")
    first = batch([b"a", b"b", b"c"])
    second = batch([b"d"])
    assert produce(stub, "orders", first).base_offset == 0
    assert produce(stub, "orders", second).base_offset == 3
    reply = fetch(stub, "orders", 0)
    assert reply.error_code == 0
    assert (reply.high_watermark, reply.log_start_offset) == (4, 0)
    positions = list(iter_batch_positions(reply.records))
    assert [header.base_offset for _, header in positions] == [0, 3]
    # Everything after the base offset and leader epoch is the client's bytes, unchanged.
    assert reply.records[positions[0][0] + 16 : positions[1][0]] == first[16:]
    assert reply.records[positions[1][0] + 16 :] == second[16:]
    assert [(record.offset, record.value) for record in iter_records(reply.records)] == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]


def test_one_request_produces_to_many_partitions_and_topics(stub):
    create_topic(stub, "orders", partitions=2)
    create_topic(stub, "payments")
    request = broker_pb2.ProduceRequest(
        acks=-1,
        topics=[
            broker_pb2.ProduceTopicData(topic="orders", partitions=[broker_pb2.ProducePartitionData(partition=p, records=batch([b"o%d" % p])) for p in (0, 1)]),
            broker_pb2.ProduceTopicData(topic="payments", partitions=[broker_pb2.ProducePartitionData(partition=0, records=batch([b"p", b"q"]))]),
        ],
    )
    reply = stub.Produce(request)
    results = {(topic.topic, partition.partition): (partition.error_code, partition.base_offset) for topic in reply.topics for partition in topic.partitions}
    assert results == {("orders", 0): (0, 0), ("orders", 1): (0, 0), ("payments", 0): (0, 0)}
    assert [record.value for record in iter_records(fetch(stub, "orders", 0, partition=1).records)] == [b"o1"]
    assert [record.value for record in iter_records(fetch(stub, "payments", 0).records)] == [b"p", b"q"]


def test_produce_to_unknown_topic_or_partition_is_an_error(stub):
    create_topic(stub, "orders")
    assert produce(stub, "missing", batch([b"x"])).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    result = produce(stub, "orders", batch([b"x"]), partition=5)
    assert result.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert result.base_offset == -1


def test_clients_cannot_write_to_internal_topics(server, stub):
    result = produce(stub, "__consumer_offsets", batch([b"forged"]))
    assert result.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert stored_end(server, "__consumer_offsets") == 0


def test_invalid_acks_are_refused_per_partition(server, stub):
    create_topic(stub, "orders")
    result = produce(stub, "orders", batch([b"x"]), acks=2)
    assert result.error_code == ErrorCode.INVALID_REQUIRED_ACKS
    assert stored_end(server) == 0


def test_acks_zero_is_still_answered_and_appended(server, stub):
    create_topic(stub, "orders")
    assert produce(stub, "orders", batch([b"x"]), acks=0).error_code == 0
    assert stored_end(server) == 1


def corrupt_crc(data: bytes) -> bytes:
    damaged = bytearray(data)
    damaged[CRC_OFFSET] ^= 0xFF
    return bytes(damaged)


def wrong_magic(data: bytes) -> bytes:
    damaged = bytearray(data)
    damaged[MAGIC_OFFSET] = 1
    return bytes(damaged)


@pytest.mark.parametrize(
    "damage, expected",
    [
        (corrupt_crc, ErrorCode.CORRUPT_MESSAGE),
        (lambda data: data[:-5], ErrorCode.CORRUPT_MESSAGE),
        (lambda data: data[:30], ErrorCode.CORRUPT_MESSAGE),
        (wrong_magic, ErrorCode.INVALID_RECORD),
        (lambda data: batch([b"x" * 5000]), ErrorCode.MESSAGE_TOO_LARGE),
    ],
)
def test_bad_batches_are_refused_the_log_is_unchanged_and_the_broker_serves_on(server, stub, damage, expected):
    create_topic(stub, "orders", configs={"max.message.bytes": "4096"})
    produce(stub, "orders", batch([b"good"]))
    result = produce(stub, "orders", damage(batch([b"bad", b"batch"])))
    assert result.error_code == expected, result.error_message
    assert result.error_message
    assert stored_end(server) == 1
    assert produce(stub, "orders", batch([b"after"])).base_offset == 1


def test_partition_data_without_any_batch_is_refused(server, stub):
    create_topic(stub, "orders")
    result = produce(stub, "orders", b"")
    assert result.error_code == ErrorCode.INVALID_RECORD
    assert "no record batch" in result.error_message
    assert stored_end(server) == 0


def test_request_above_max_request_size_is_refused(broker_server_factory):
    server = broker_server_factory(**{"max.request.size": "2048"})
    create_topic(server.stub, "orders")
    result = produce(server.stub, "orders", batch([b"x" * 3000]))
    assert result.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert "max.request.size" in result.error_message
    assert stored_end(server) == 0


def test_fetch_out_of_range_reports_the_log_bounds(stub):
    create_topic(stub, "orders")
    produce(stub, "orders", batch([b"a", b"b"]))
    for offset in (3, -1):
        reply = fetch(stub, "orders", offset)
        assert reply.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert (reply.high_watermark, reply.log_start_offset) == (2, 0)
    assert fetch(stub, "orders", 2).records == b""


def test_fetch_of_unknown_partition_is_an_error(stub):
    assert fetch(stub, "missing", 0).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_fetch_respects_partition_max_bytes_but_returns_at_least_one_batch(stub):
    create_topic(stub, "orders")
    for index in range(5):
        produce(stub, "orders", batch([bytes([index]) * 200]))
    one_batch = len(batch([b"x" * 200]))
    limited = fetch(stub, "orders", 0, partition_max_bytes=one_batch * 2 + 10)
    assert len(list(iter_batch_positions(limited.records))) == 2
    tiny = fetch(stub, "orders", 0, partition_max_bytes=10)
    assert len(list(iter_batch_positions(tiny.records))) == 1


def test_fetch_total_max_bytes_limits_the_whole_response(stub):
    create_topic(stub, "orders", partitions=2)
    for partition in (0, 1):
        for _ in range(3):
            produce(stub, "orders", batch([b"y" * 200]), partition=partition)
    one_batch = len(batch([b"y" * 200]))
    request = broker_pb2.FetchRequest(
        max_bytes=one_batch * 2,
        topics=[
            broker_pb2.FetchTopic(topic="orders", partitions=[broker_pb2.FetchPartition(partition=p, fetch_offset=0, current_leader_epoch=-1) for p in (0, 1)])
        ],
    )
    partitions = stub.Fetch(request).topics[0].partitions
    assert sum(len(partition.records) for partition in partitions) <= one_batch * 2
    assert [partition.high_watermark for partition in partitions] == [3, 3]


def test_long_poll_returns_when_data_arrives_before_the_deadline(server, stub):
    create_topic(stub, "orders")
    max_wait_ms = 8000
    replies = []

    def poll():
        replies.append(fetch(stub, "orders", 0, max_wait_ms=max_wait_ms, min_bytes=1, timeout=30))

    started = time.monotonic()
    poller = threading.Thread(target=poll)
    poller.start()
    wait_until(lambda: server.broker.purgatory.parked == 1, "the fetch parked in the purgatory")  # what makes the test meaningful
    produce(stub, "orders", batch([b"wake up"]))
    poller.join(30)
    elapsed = time.monotonic() - started
    assert [record.value for record in iter_records(replies[0].records)] == [b"wake up"]
    assert elapsed < max_wait_ms / 1000


def test_long_poll_without_data_waits_for_max_wait(stub):
    create_topic(stub, "orders")
    started = time.monotonic()
    reply = fetch(stub, "orders", 0, max_wait_ms=300, min_bytes=1)
    assert reply.records == b""
    assert time.monotonic() - started >= 0.29


def test_list_offsets_by_timestamp(stub):
    create_topic(stub, "orders")
    produce(stub, "orders", batch([b"a", b"b"], timestamp=1000))  # offsets 0-1 at 1000, 1001
    produce(stub, "orders", batch([b"c"], timestamp=5000))  # offset 2 at 5000
    assert (list_offset(stub, "orders", -2).offset, list_offset(stub, "orders", -1).offset) == (0, 3)
    at_or_after = list_offset(stub, "orders", 2000)
    assert (at_or_after.offset, at_or_after.timestamp) == (2, 5000)
    latest_timestamp = list_offset(stub, "orders", -3)
    assert (latest_timestamp.offset, latest_timestamp.timestamp) == (2, 5000)
    assert list_offset(stub, "orders", 9000).offset == -1
    assert list_offset(stub, "orders", -7).error_code == ErrorCode.INVALID_REQUEST
    assert list_offset(stub, "missing", -1).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_idempotent_retry_gets_the_same_offset_and_is_stored_once(server, stub):
    create_topic(stub, "orders")
    producer = stub.InitProducerId(broker_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1))
    assert producer.error_code == 0
    options = {"producer_id": producer.producer_id, "producer_epoch": producer.producer_epoch}
    first = batch([b"a", b"b"], base_sequence=0, **options)
    assert produce(stub, "orders", first).base_offset == 0
    assert produce(stub, "orders", first).base_offset == 0
    assert stored_end(server) == 2
    assert produce(stub, "orders", batch([b"c"], base_sequence=2, **options)).base_offset == 2
    gap = produce(stub, "orders", batch([b"e"], base_sequence=9, **options))
    assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert stored_end(server) == 3


def test_init_producer_id_hands_out_distinct_ids(stub):
    ids = {stub.InitProducerId(broker_pb2.InitProducerIdRequest(producer_id=-1)).producer_id for _ in range(5)}
    assert len(ids) == 5


@pytest.mark.parametrize(
    "call, request_message",
    [
        ("Produce", broker_pb2.ProduceRequest(acks=1)),
        (
            "Produce",
            broker_pb2.ProduceRequest(
                acks=1, topics=[broker_pb2.ProduceTopicData(topic="orders", partitions=[broker_pb2.ProducePartitionData(partition=0, records=b"")] * 2)]
            ),
        ),
        ("Fetch", broker_pb2.FetchRequest()),
        ("Fetch", broker_pb2.FetchRequest(max_wait_ms=-1, topics=[broker_pb2.FetchTopic(topic="orders", partitions=[broker_pb2.FetchPartition()])])),
        ("Fetch", broker_pb2.FetchRequest(topics=[broker_pb2.FetchTopic(topic="orders", partitions=[broker_pb2.FetchPartition()] * 2)])),
        ("ListOffsets", broker_pb2.ListOffsetsRequest()),
    ],
)
def test_malformed_data_requests_are_invalid_argument(stub, call, request_message):
    create_topic(stub, "orders")
    with pytest.raises(grpc.RpcError) as raised:
        getattr(stub, call)(request_message)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
