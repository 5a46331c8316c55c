"""``weir.records.decompress`` produces at most ``max_size`` bytes in every codec, and a consumer
reading a decompression bomb already on disk gets a _BAD_MSG naming the bound, not an
out-of-memory kill."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import weir
from tests.support.bad_batches import append_to_stopped_log, batch_at
from tests.support.decompression_bombs import BOMBS, batch_with_section
from tests.support.processes import BrokerProcess
from tests.support.raw_client import RawBroker
from weir import records
from weir.errors import BadBatchError

CODECS = [records.COMPRESSION_GZIP, records.COMPRESSION_SNAPPY, records.COMPRESSION_LZ4, records.COMPRESSION_ZSTD]
PAYLOAD = os.urandom(50_000) + b"abc" * 300_000  # 950,000 bytes, partly compressible


@pytest.mark.parametrize("codec", CODECS, ids=[records.COMPRESSION_NAMES[codec] for codec in CODECS])
def test_data_of_exactly_the_bound_decompresses_and_one_byte_more_is_refused(codec):
    compressed = records.compress(codec, PAYLOAD)
    assert records.decompress(codec, compressed, len(PAYLOAD)) == PAYLOAD
    assert records.decompress(codec, memoryview(compressed)) == PAYLOAD
    with pytest.raises(records.DecompressedSizeError, match=f"decompresses to more than {len(PAYLOAD) - 1} bytes") as raised:
        records.decompress(codec, compressed, len(PAYLOAD) - 1)
    assert raised.value.limit == len(PAYLOAD) - 1 and not raised.value.corrupt


@pytest.mark.parametrize("codec", CODECS, ids=[records.COMPRESSION_NAMES[codec] for codec in CODECS])
def test_undecodable_data_is_still_a_format_error_not_a_size_error(codec):
    compressed = bytearray(records.compress(codec, PAYLOAD))
    compressed[len(compressed) // 2 :] = b"\xff" * (len(compressed) - len(compressed) // 2)
    with pytest.raises(records.RecordFormatError) as raised:
        records.decompress(codec, bytes(compressed))
    assert not isinstance(raised.value, records.DecompressedSizeError)


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_every_bomb_is_refused_at_the_default_bound_within_a_second_or_two(name):
    codec, make = BOMBS[name]
    data = make()
    started = time.monotonic()
    with pytest.raises(records.DecompressedSizeError, match=f"decompresses to more than {records.MAX_DECOMPRESSED_BATCH_BYTES} bytes"):
        records.decompress(codec, data)
    assert time.monotonic() - started < 5.0


def test_a_consumer_reading_a_bomb_on_disk_gets_bad_msg_and_can_seek_past_it(tmp_path: Path):
    broker = BrokerProcess(tmp_path / "data").start()
    client = RawBroker(broker.address)
    client.create_topic("events", 1)
    assert client.produce("events", 0, batch_at(0, [b"a"])).error_code == 0
    client.close()
    broker.stop()
    codec, make = BOMBS["zstd"]
    bomb = bytearray(batch_with_section(codec, make()))
    records.assign_offsets(bomb, 0, 1, 0)
    append_to_stopped_log(broker, "events", 0, bytes(bomb) + batch_at(2, [b"after"]))
    broker.start()
    consumer = weir.Consumer({"bootstrap.servers": broker.address, "group.id": "readers", "enable.auto.commit": False, "fetch.max.bytes": 1 << 20})
    try:
        consumer.assign([weir.TopicPartition("events", 0, 0)])
        messages: list[weir.Message] = []
        deadline = time.monotonic() + 20
        while len(messages) < 2 and time.monotonic() < deadline:
            messages += consumer.consume(2 - len(messages), timeout=1.0)
        assert messages[0].value() == b"a"
        error = messages[1].error()
        assert isinstance(error, BadBatchError) and (error.first_offset, error.next_offset) == (1, 2)
        assert f"decompresses to more than {records.MAX_DECOMPRESSED_BATCH_BYTES} bytes" in error.str()
        consumer.seek(weir.TopicPartition("events", 0, 2))
        after: list[weir.Message] = []
        deadline = time.monotonic() + 20
        while not after and time.monotonic() < deadline:
            after = consumer.consume(1, timeout=1.0)
        assert [(message.offset(), message.value()) for message in after] == [(2, b"after")]
    finally:
        consumer.close()
        broker.stop()
