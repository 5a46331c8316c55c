"""Exactly-once consume-transform-produce with the SDK, as confluent-kafka applications write it.

Two proofs against a real broker process:

- confluent-kafka-python's own example, ``examples/eos_transactions.py``, run unchanged but for
  its import (``confluent_kafka`` -> ``weir``). The file is not part of Weir: it is read from a
  clone of confluentinc/confluent-kafka-python (``WEIR_CONFLUENT_KAFKA_PYTHON_GIT``: its git
  directory, by default the one the development machine keeps) and the test is skipped where
  there is none.
- The same loop in this file, with a subscribed group member (KIP-447: its generation and
  member id go with the offsets) and an aborted round: the output of an aborted transaction
  is never read at read_committed and its offsets are never committed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from base64 import b64encode
from pathlib import Path

import pytest

from tests.weir.sdk_support import assigned, consume_all, create_topic, wait_for
from weir import OFFSET_BEGINNING, Consumer, Message, Producer, TopicPartition
from weir.consumer import consume_available

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_GIT = Path(os.environ.get("WEIR_CONFLUENT_KAFKA_PYTHON_GIT", "/work/.mirror/confluentinc+confluent-kafka-python/repo"))
EXAMPLE_PATH = "examples/eos_transactions.py"
CONFLUENT_IMPORT = "from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition"
INPUT, OUTPUT = "input", "output"


def example_source() -> str | None:
    """The example's text from the clone, None when there is no clone here."""
    if not EXAMPLE_GIT.exists():
        return None
    shown = subprocess.run(["git", "--git-dir", str(EXAMPLE_GIT), "show", f"HEAD:{EXAMPLE_PATH}"], capture_output=True, text=True, timeout=30)
    return shown.stdout if shown.returncode == 0 else None


def produce_input(address: str, count: int) -> list[tuple[bytes, bytes]]:
    records = [(f"key-{index}".encode(), f"value-{index}".encode()) for index in range(count)]
    producer = Producer({"bootstrap.servers": address})
    for key, value in records:
        producer.produce(INPUT, value=value, key=key, partition=0)
    assert producer.flush(30) == 0
    producer.close()
    return records


def read_committed_output(address: str, expected: int) -> list[tuple[bytes | None, bytes | None]]:
    consumer = assigned(Consumer({"bootstrap.servers": address}), OUTPUT, 1, OFFSET_BEGINNING)
    try:
        messages = consume_all(consumer, expected, timeout=20)
        messages += [message for message in consume_available(consumer, 100, 0.5) if message.error() is None]
        return sorted((message.key(), message.value()) for message in messages)
    finally:
        consumer.close()


def take(consumer: Consumer, count: int, timeout: float = 30.0) -> list[Message]:
    """Exactly ``count`` records (fewer only when ``timeout`` passes first), as a loop that processes a batch at a time reads them."""
    taken: list[Message] = []
    deadline = time.monotonic() + timeout
    while len(taken) < count and time.monotonic() < deadline:
        taken += [message for message in consumer.consume(count - len(taken), timeout=0.5) if message.error() is None]
    assert len(taken) == count
    return taken


def committed_offset(address: str, group_id: str) -> int:
    consumer = Consumer({"bootstrap.servers": address, "group.id": group_id})
    try:
        (committed,) = consumer.committed([TopicPartition(INPUT, 0)], timeout=10)
        return committed.offset
    finally:
        consumer.close()


def test_confluent_kafka_eos_example_runs_on_weir_by_changing_its_import(broker, tmp_path: Path) -> None:
    source = example_source()
    if source is None:
        pytest.skip(f"no clone of confluent-kafka-python at {EXAMPLE_GIT} (set WEIR_CONFLUENT_KAFKA_PYTHON_GIT)")
    assert source.count(CONFLUENT_IMPORT) == 1, "the example's import line changed: update CONFLUENT_IMPORT"
    script = tmp_path / "eos_transactions.py"
    script.write_text(source.replace(CONFLUENT_IMPORT, CONFLUENT_IMPORT.replace("confluent_kafka", "weir")))
    create_topic(broker.address, INPUT)
    create_topic(broker.address, OUTPUT)
    records = produce_input(broker.address, 250)  # two commits of 100 inside the loop, the last 50 at the end

    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY_ROOT)}
    command = [sys.executable, str(script), "-b", broker.address, "-t", INPUT, "-o", OUTPUT, "-g", "eos-example"]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment, cwd=tmp_path)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "=== Reached end of input ===" in finished.stdout
    assert "Message delivery failed" not in finished.stdout

    expected = sorted((b64encode(key), b64encode(value)) for key, value in records)
    assert read_committed_output(broker.address, len(expected)) == expected
    assert committed_offset(broker.address, "eos-example") == 250


def test_subscribed_consume_transform_produce_commits_output_and_offsets_together(broker) -> None:
    create_topic(broker.address, INPUT)
    create_topic(broker.address, OUTPUT)
    records = produce_input(broker.address, 30)
    group_id = "transformers"
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": group_id, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([INPUT])
    producer = Producer({"bootstrap.servers": broker.address, "transactional.id": "transformer-1"})
    producer.init_transactions(30)

    def transform_round(count: int, commit: bool) -> None:
        producer.begin_transaction()
        taken = take(consumer, count)
        for message in taken:
            producer.produce(OUTPUT, value=message.value().upper(), key=message.key())
        metadata = consumer.consumer_group_metadata()
        assert metadata.generation_id > 0 and metadata.member_id  # a member of the group: its commits are fenced if it leaves
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()), metadata, 30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)

    transform_round(10, commit=True)
    assert wait_for(lambda: committed_offset(broker.address, group_id) == 10, timeout=20)
    transform_round(10, commit=False)
    assert committed_offset(broker.address, group_id) == 10  # the aborted round's offsets never count
    # As an application does after an abort: rewind to the committed offsets, then redo the work.
    for partition in consumer.committed(consumer.assignment(), timeout=10):
        consumer.seek(partition)
    transform_round(20, commit=True)
    assert wait_for(lambda: committed_offset(broker.address, group_id) == 30, timeout=20)
    producer.close()
    consumer.close()

    expected = sorted((key, value.upper()) for key, value in records)
    assert read_committed_output(broker.address, len(expected)) == expected
