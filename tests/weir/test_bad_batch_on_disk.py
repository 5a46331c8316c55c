"""The consumer survives a batch on disk that cannot be decoded (a real broker process serves it):
it delivers the records before it, returns a _BAD_MSG error naming topic, partition and offsets
on every poll until the application seeks past the batch, then delivers the records after it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import weir
from tests.support.bad_batches import append_to_stopped_log, batch_at, undecodable_batch_at
from tests.support.processes import BrokerProcess
from tests.support.raw_client import RawBroker
from weir.errors import BadBatchError, KafkaError


@pytest.fixture
def broker_with_a_bad_batch(tmp_path: Path):
    """Topic ``events``: offsets 0-2 good, 3-5 undecodable (correct CRC), 6-8 good."""
    broker = BrokerProcess(tmp_path / "data").start()
    client = RawBroker(broker.address)
    client.create_topic("events", 1)
    assert client.produce("events", 0, batch_at(0, [b"a", b"b", b"c"])).error_code == 0
    client.close()
    broker.stop()
    append_to_stopped_log(broker, "events", 0, undecodable_batch_at(3, 3) + batch_at(6, [b"x", b"y", b"z"]))
    broker.start()
    yield broker
    broker.stop()


def poll_until(consumer: weir.Consumer, wanted: int, seconds: float = 20.0) -> list[weir.Message]:
    """Messages (records and errors) until ``wanted`` of them arrived or ``seconds`` passed."""
    out: list[weir.Message] = []
    deadline = time.monotonic() + seconds
    while len(out) < wanted and time.monotonic() < deadline:
        out += consumer.consume(wanted - len(out), timeout=min(1.0, max(deadline - time.monotonic(), 0.01)))
    return out


def test_consumer_returns_bad_msg_for_the_batch_and_can_seek_past_it(broker_with_a_bad_batch):
    consumer = weir.Consumer({"bootstrap.servers": broker_with_a_bad_batch.address, "group.id": "readers", "enable.auto.commit": False})
    try:
        consumer.assign([weir.TopicPartition("events", 0, 0)])
        first = poll_until(consumer, 4)
        assert [(message.offset(), message.value()) for message in first[:3]] == [(0, b"a"), (1, b"b"), (2, b"c")]
        error = first[3].error()
        assert error is not None and error.code() == KafkaError._BAD_MSG  # type: ignore[attr-defined]
        assert (first[3].topic(), first[3].partition(), first[3].offset()) == ("events", 0, 3)
        assert "events [0] offsets 3..5 cannot be decoded" in error.str() and "seek to offset 6" in error.str()
        assert isinstance(error, BadBatchError) and (error.first_offset, error.next_offset) == (3, 6)
        # Not skipped silently, not a loop without output: each poll says the same again.
        for _ in range(2):
            again = poll_until(consumer, 1)
            assert [(message.offset(), message.error().code() if message.error() else None) for message in again] == [(3, KafkaError._BAD_MSG)]  # type: ignore[attr-defined]
        assert consumer.position([weir.TopicPartition("events", 0)])[0].offset == 3
        consumer.seek(weir.TopicPartition("events", 0, 6))
        after = poll_until(consumer, 3)
        assert [(message.offset(), message.value(), message.error()) for message in after] == [(6, b"x", None), (7, b"y", None), (8, b"z", None)]
    finally:
        consumer.close()


def test_a_consumer_starting_inside_the_bad_batch_gets_the_error_at_its_own_offset(broker_with_a_bad_batch):
    consumer = weir.Consumer({"bootstrap.servers": broker_with_a_bad_batch.address, "group.id": "readers", "enable.auto.commit": False})
    try:
        consumer.assign([weir.TopicPartition("events", 0, 4)])
        [message] = poll_until(consumer, 1)
        assert message.offset() == 4 and message.error().code() == KafkaError._BAD_MSG  # type: ignore[attr-defined, union-attr]
    finally:
        consumer.close()
