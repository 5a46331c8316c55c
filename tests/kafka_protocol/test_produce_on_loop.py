"""Produce on the listener's event loop: a request that may block asks for a worker thread before it changes anything.

The connection answers small Produce requests on its event loop thread (``context.on_loop``);
the handler raises ``api.WorkerThreadNeeded`` for a transactional one (verified with its
coordinator), one to a topic with schema validation (ids looked up in the control plane's
registry), one to a partition that fsyncs every flush.messages records and a large one, and the connection then answers it on a worker thread.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import broker_nodes.kafka_protocol.handlers  # noqa: F401  (registers every handler)
from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.produce import LOOP_MAX_RECORD_BYTES, PRODUCE_KEY
from broker_nodes.security.access import anonymous_context
from tests.kafka_protocol.admin_calls import request_module, round_trip
from tests.support.in_process_broker import InProcessBroker
from weir.records import build_batch

VERSION = 9
PLAIN_TOPIC = "plain"
VALIDATED_TOPIC = "validated"
FLUSHED_TOPIC = "flushed"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Any]:
    server = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1"}).start()
    server.broker.topic_admin.create_topic(PLAIN_TOPIC, 1, 1, {})
    server.broker.topic_admin.create_topic(VALIDATED_TOPIC, 1, 1, {"confluent.value.schema.validation": "true"})
    server.broker.topic_admin.create_topic(FLUSHED_TOPIC, 1, 1, {"flush.messages": "1000"})
    yield server.broker
    server.stop()


def produce_on_loop(broker: Any, topic: str, value: bytes, transactional_id: str | None = None) -> Any:
    schema = request_module(PRODUCE_KEY, VERSION)
    request = schema.ProduceRequest(
        transactional_id=transactional_id,
        acks=1,
        timeout=datetime.timedelta(seconds=5),
        topic_data=(
            schema.TopicProduceData(
                name=topic, partition_data=(schema.PartitionProduceData(index=0, records=build_batch([(1_700_000_000_000, None, value, [])], 0)),)
            ),
        ),
    )
    listener = api.KafkaListener(node_id=broker.config.node_id, host="127.0.0.1", port=9092)
    context = api.KafkaRequestContext(broker, anonymous_context("127.0.0.1"), PRODUCE_KEY, VERSION, 1, "test", listener, on_loop=True)
    registration = api.registration(PRODUCE_KEY)
    assert registration is not None
    return registration.handler(context, round_trip(request))


def log_end(broker: Any, topic: str) -> int:
    return int(broker.replica_manager.partition_log(topic, 0).log_end_offset)


def test_a_small_plain_produce_is_answered_on_the_loop(broker: Any) -> None:
    response = produce_on_loop(broker, PLAIN_TOPIC, b"small")
    assert isinstance(response, api.EncodedResponse)
    assert log_end(broker, PLAIN_TOPIC) == 1


@pytest.mark.parametrize(
    ("topic", "value", "transactional_id"),
    [
        (PLAIN_TOPIC, b"x" * 10, "txn-1"),
        (VALIDATED_TOPIC, b"x" * 10, None),
        (FLUSHED_TOPIC, b"x" * 10, None),
        (PLAIN_TOPIC, b"x" * (LOOP_MAX_RECORD_BYTES + 1), None),
    ],
    ids=["transactional", "schema-validated topic", "fsync by flush.messages", "large"],
)
def test_a_produce_that_may_block_asks_for_a_worker_thread_and_appends_nothing(broker: Any, topic: str, value: bytes, transactional_id: str | None) -> None:
    with pytest.raises(api.WorkerThreadNeeded):
        produce_on_loop(broker, topic, value, transactional_id)
    assert log_end(broker, topic) == 0
