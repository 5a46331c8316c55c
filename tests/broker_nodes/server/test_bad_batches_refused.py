"""A real broker process refuses every kind of bad batch a client can send, stores nothing of it,
and still stores the good batch sent to another partition in the same request."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.support.processes import BrokerProcess
from tests.support.raw_client import RawBroker
from weir import records
from weir.errors import ErrorCode

TOPIC = "checked"
COMPACTED = "keyed"


def now_ms() -> int:
    return int(time.time() * 1000)


def good_batch(values=(b"a", b"b", b"c"), *, codec=records.COMPRESSION_NONE, key=None, timestamp=None, **options) -> bytes:
    stamp = now_ms() if timestamp is None else timestamp
    return records.build_batch(((stamp, key, value, None) for value in values), codec, **options)


def re_crc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, records.CRC_OFFSET, records.crc32c(bytes(batch[records.ATTRIBUTES_OFFSET :])))
    return bytes(batch)


def with_section(batch: bytes, section: bytes, *, records_count: int | None = None) -> bytes:
    """``batch`` with another (raw) records section, its length, count and lastOffsetDelta fixed and a correct CRC."""
    out = bytearray(batch[: records.HEADER_SIZE] + section)
    struct.pack_into(">i", out, records.BATCH_LENGTH_OFFSET, len(out) - records.LOG_OVERHEAD)
    if records_count is not None:
        struct.pack_into(">i", out, 57, records_count)
        struct.pack_into(">i", out, 23, records_count - 1)
    return re_crc(out)


def invalid_snappy() -> bytes:
    batch = good_batch(codec=records.COMPRESSION_SNAPPY)
    return with_section(batch, b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, 4) + b"\xff\xff\xff\xff")


def invalid_lz4() -> bytes:
    batch = good_batch(codec=records.COMPRESSION_LZ4)
    section = bytearray(batch[records.HEADER_SIZE :])
    section[-6:] = b"\xde\xad\xbe\xef\x00\x00"
    return with_section(batch, bytes(section))


def more_records_announced_than_held() -> bytes:
    batch = good_batch()
    return with_section(batch, batch[records.HEADER_SIZE :], records_count=5)


def trailing_bytes() -> bytes:
    batch = good_batch()
    return with_section(batch, batch[records.HEADER_SIZE :] + b"\x00\x00")


def offset_deltas_out_of_order() -> bytes:
    builder = records.RecordBatchBuilder()
    stamp = now_ms()
    for delta in (0, 2, 3):
        builder.append(stamp, None, b"x", offset_delta=delta)
    return builder.build(last_offset_delta=2)


def far_future_timestamp() -> bytes:
    return good_batch(timestamp=2**62)


def inconsistent_max_timestamp() -> bytes:
    batch = bytearray(good_batch())
    struct.pack_into(">q", batch, records.MAX_TIMESTAMP_OFFSET, now_ms() - 60_000)
    return re_crc(batch)


def control_batch() -> bytes:
    return good_batch(control=True, producer_id=7, producer_epoch=0, base_sequence=0)


def transactional_batch_without_producer_id() -> bytes:
    return good_batch(transactional=True)


CASES = [
    (TOPIC, invalid_snappy, ErrorCode.CORRUPT_MESSAGE, "snappy records section cannot be decompressed"),
    (TOPIC, invalid_lz4, ErrorCode.CORRUPT_MESSAGE, "lz4 records section cannot be decompressed"),
    (TOPIC, more_records_announced_than_held, ErrorCode.INVALID_RECORD, "header says 5 records but the records section holds 3"),
    (TOPIC, trailing_bytes, ErrorCode.INVALID_RECORD, "2 bytes follow the last of the 3 records"),
    (TOPIC, offset_deltas_out_of_order, ErrorCode.INVALID_RECORD, "record 1): offset delta 2 where 1 was expected"),
    (TOPIC, far_future_timestamp, ErrorCode.INVALID_TIMESTAMP, "record 0): timestamp 4611686018427387904 is more than message.timestamp.after.max.ms=3600000"),
    (TOPIC, inconsistent_max_timestamp, ErrorCode.INVALID_TIMESTAMP, "is the batch's maxTimestamp but its largest record timestamp is"),
    (TOPIC, control_batch, ErrorCode.INVALID_RECORD, "control batches may only be written by the broker"),
    # Refused before the append looks at it: the request names no transactional id (Kafka's rule, the request layer's).
    (
        TOPIC,
        transactional_batch_without_producer_id,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        "a transactional batch needs its producer's transactional id",
    ),
    (COMPACTED, lambda: good_batch(key=None), ErrorCode.INVALID_RECORD, "record 0): a compacted topic cannot accept a record without a key"),
]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("bad-batches") / "data"
    process = BrokerProcess(data).start()
    client = RawBroker(process.address)
    client.create_topic(TOPIC, 2)
    client.create_topic(COMPACTED, 1, {"cleanup.policy": "compact"})
    for topic in (TOPIC, COMPACTED):
        assert client.produce(topic, 0, good_batch(key=b"k")).error_code == 0
    yield process, client, data
    client.close()
    process.stop()


def log_bytes(data: Path, topic: str, partition: int) -> bytes:
    return b"".join(path.read_bytes() for path in sorted((data / f"{topic}-{partition}").glob("*.log")))


def end_offset(client: RawBroker, topic: str, partition: int) -> int:
    return client.list_offset(topic, partition, -1)


@pytest.mark.parametrize(
    ("topic", "make", "code", "message"), CASES, ids=[case[1].__name__ if case[1].__name__ != "<lambda>" else "compacted_without_key" for case in CASES]
)
def test_bad_batch_is_refused_with_its_code_and_nothing_is_stored(broker, topic, make, code, message):
    _, client, data = broker
    before_end, before_bytes = end_offset(client, topic, 0), log_bytes(data, topic, 0)
    result = client.produce(topic, 0, make())
    assert result.error_code == code, result.error_message
    assert message in result.error_message
    assert "partition 0, batch 0" in result.error_message
    assert result.base_offset == -1
    assert end_offset(client, topic, 0) == before_end
    assert log_bytes(data, topic, 0) == before_bytes


def test_a_second_batch_behind_a_good_one_refuses_the_whole_partition(broker):
    """A partition's data is exactly one batch (Kafka's Produce v3+ rule), whatever the second one holds."""
    _, client, data = broker
    before_end, before_bytes = end_offset(client, TOPIC, 0), log_bytes(data, TOPIC, 0)
    second = invalid_lz4()
    result = client.produce(TOPIC, 0, good_batch() + second)
    assert result.error_code == ErrorCode.INVALID_RECORD
    assert f"topic 'checked' partition 0 holds {len(second)} bytes after its first record batch" in result.error_message
    assert (end_offset(client, TOPIC, 0), log_bytes(data, TOPIC, 0)) == (before_end, before_bytes)


def test_a_good_batch_to_another_partition_in_the_same_request_is_stored(broker):
    _, client, data = broker
    before_end, before_bytes = end_offset(client, TOPIC, 0), log_bytes(data, TOPIC, 0)
    other_end = end_offset(client, TOPIC, 1)
    request = broker_pb2.ProduceRequest(
        acks=-1,
        timeout_ms=10_000,
        topics=[
            broker_pb2.ProduceTopicData(
                topic=TOPIC,
                partitions=[
                    broker_pb2.ProducePartitionData(partition=0, records=invalid_snappy()),
                    broker_pb2.ProducePartitionData(partition=1, records=good_batch((b"kept",), codec=records.COMPRESSION_LZ4)),
                ],
            )
        ],
    )
    answers = {answer.partition: answer for answer in client.stub.Produce(request, timeout=15).topics[0].partitions}
    assert answers[0].error_code == ErrorCode.CORRUPT_MESSAGE
    assert answers[1].error_code == 0 and answers[1].base_offset == other_end
    assert (end_offset(client, TOPIC, 0), log_bytes(data, TOPIC, 0)) == (before_end, before_bytes)
    assert client.read_all(TOPIC, 1, start=other_end) == [(other_end, b"kept")]


def test_valid_batches_of_every_codec_are_still_stored(broker):
    _, client, _ = broker
    for codec in (records.COMPRESSION_NONE, records.COMPRESSION_GZIP, records.COMPRESSION_SNAPPY, records.COMPRESSION_LZ4, records.COMPRESSION_ZSTD):
        start = end_offset(client, COMPACTED, 0)
        result = client.produce(COMPACTED, 0, good_batch((b"v1", b"v2"), codec=codec, key=b"key"))
        assert result.error_code == 0, result.error_message
        assert [value for _, value in client.read_all(COMPACTED, 0, start=start)] == [b"v1", b"v2"]
