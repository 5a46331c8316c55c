"""A real broker refuses decompression bombs in every codec quickly, without holding their output.

Each bomb is a batch of at most a few MiB (within the topic's max.message.bytes and the broker's
max.request.size) whose records section expands to 1 GiB or more (128 MiB for xerial snappy,
whose ratio is bounded, and 4 GiB claimed by a raw snappy length preamble). The broker must answer
MESSAGE_TOO_LARGE naming the bound within seconds, store nothing, keep its peak RSS far below
what decompressing the bomb would cost, and keep serving other produces.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.support.decompression_bombs import BOMBS, batch_with_section
from tests.support.processes import BrokerProcess
from tests.support.raw_client import RawBroker
from weir import records
from weir.errors import ErrorCode

TOPIC = "bombs"
# Peak RSS the broker may add while refusing every bomb: the 64 MiB bound, one request's bytes
# and their copies. Decompressing any one bomb whole would add at least 1 GiB.
RSS_GROWTH_BOUND = 320 * 1024 * 1024
REFUSAL_SECONDS = 10.0  # per bomb, on a slow shared machine; a full inflate of 1 GiB takes longer


def rss_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("bombs") / "data"
    process = BrokerProcess(data).start()
    client = RawBroker(process.address)
    # Bombs of up to 8 MiB (max.request.size) must reach the validator, not the size check.
    client.create_topic(TOPIC, 2, {"max.message.bytes": str(8 * 1024 * 1024)})
    assert client.produce_values(TOPIC, 1, [b"warm-up"]) == 0
    yield process, client
    client.close()
    process.stop()


@pytest.fixture(scope="module")
def bombs():
    return {name: batch_with_section(codec, make()) for name, (codec, make) in BOMBS.items()}


def test_every_bomb_is_small_on_the_wire_and_huge_decompressed(bombs):
    for name, batch in bombs.items():
        assert len(batch) < 8 * 1024 * 1024, name
        header = records.read_batch_header(batch, 0)
        with pytest.raises(records.DecompressedSizeError, match="decompresses to more than 67108864 bytes"):
            records.batch_records_bytes(batch, 0, header)


def test_bombs_are_refused_quickly_with_bounded_memory_and_other_produces_go_on(broker, bombs):
    process, client = broker
    pid = process.process.pid
    baseline = rss_kib(pid, "VmRSS")
    for name, batch in bombs.items():
        started = time.monotonic()
        result = client.produce(TOPIC, 0, batch)
        elapsed = time.monotonic() - started
        assert result.error_code == ErrorCode.MESSAGE_TOO_LARGE, (name, result.error_message)
        assert "decompresses to more than 67108864 bytes" in result.error_message, name
        assert "partition 0, batch 0" in result.error_message, name
        assert elapsed < REFUSAL_SECONDS, (name, elapsed)
        # Another tenant's produce right after is served as usual.
        good = client.produce(TOPIC, 1, records.build_batch([(int(time.time() * 1000), None, name.encode(), None)]))
        assert good.error_code == 0, good.error_message
    peak_growth = (rss_kib(pid, "VmHWM") - baseline) * 1024
    assert peak_growth < RSS_GROWTH_BOUND, f"broker peak RSS grew by {peak_growth / 2**20:.0f} MiB"
    assert client.list_offset(TOPIC, 0, -1) == 0  # nothing of any bomb was stored
    assert [value for _, value in client.read_all(TOPIC, 1, start=1)] == [name.encode() for name in bombs]


def test_a_bomb_and_a_good_batch_in_one_request_store_the_good_one(broker, bombs):
    _, client = broker
    start = client.list_offset(TOPIC, 1, -1)
    request = broker_pb2.ProduceRequest(
        acks=-1,
        timeout_ms=10_000,
        topics=[
            broker_pb2.ProduceTopicData(
                topic=TOPIC,
                partitions=[
                    broker_pb2.ProducePartitionData(partition=0, records=bombs["zstd"]),
                    broker_pb2.ProducePartitionData(
                        partition=1, records=records.build_batch([(int(time.time() * 1000), None, b"kept", None)], records.COMPRESSION_ZSTD)
                    ),
                ],
            )
        ],
    )
    answers = {answer.partition: answer for answer in client.stub.Produce(request, timeout=30).topics[0].partitions}
    assert answers[0].error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert answers[1].error_code == 0 and answers[1].base_offset == start
    assert client.read_all(TOPIC, 1, start=start) == [(start, b"kept")]
