"""The Produce response body encoded without kio is byte for byte kio's, for every version served (3-11)."""

from __future__ import annotations

import datetime
import importlib
import io
from typing import Any

import pytest
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.framing import decode_response, encode_response, encode_response_body
from broker_nodes.kafka_protocol.handlers.admin_common import build
from broker_nodes.kafka_protocol.handlers.produce import _response
from broker_nodes.kafka_protocol.handlers.produce_response import encode_produce_body
from broker_nodes.requests.outcomes import LeaderHint
from broker_nodes.requests.produce import ProducePartitionOutcome, ProduceResult

PRODUCE = 0
VERSIONS = range(3, 12)
NOT_LEADER_OR_FOLLOWER = 6

ANSWERS = {
    "one partition": [ProducePartitionOutcome("orders", 0, base_offset=41, log_start_offset=0)],
    "log append time": [ProducePartitionOutcome("orders", 2, base_offset=7, log_append_time_ms=1_700_000_000_123, log_start_offset=3)],
    "errors with and without a message": [
        ProducePartitionOutcome("orders", 0, base_offset=5, log_start_offset=0),
        ProducePartitionOutcome("orders", 1, NOT_LEADER_OR_FOLLOWER, "this broker does not lead orders-1"),
        ProducePartitionOutcome("secret", 0, 29),
    ],
    "unicode names": [ProducePartitionOutcome("zähler-☃", 3, base_offset=2**40, log_start_offset=2**33), ProducePartitionOutcome("other", 0, 87, "naïve")],
    "many topics": [ProducePartitionOutcome(f"topic-{index}", index % 3, base_offset=index) for index in range(200)],
}


class Context:
    """What the response builder reads of a request context."""

    def __init__(self, version: int) -> None:
        self.api_key = PRODUCE
        self.api_version = version


class Request:
    acks = 1


def by_topic(outcomes: list[ProducePartitionOutcome]) -> dict[str, list[ProducePartitionOutcome]]:
    grouped: dict[str, list[ProducePartitionOutcome]] = {}
    for outcome in outcomes:
        grouped.setdefault(outcome.topic, []).append(outcome)
    return grouped


def kio_body(version: int, outcomes: list[ProducePartitionOutcome], throttle_ms: int) -> bytes:
    """The body kio writes for the same answer (the handler's objects, without the fast path)."""
    schema: Any = load_response_schema(PRODUCE, version)
    module = importlib.import_module(schema.__module__)
    topics = tuple(
        build(
            module.TopicProduceResponse,
            name=topic,
            partition_responses=tuple(
                build(
                    module.PartitionProduceResponse,
                    index=item.partition,
                    error_code=ErrorCode(item.error_code),
                    base_offset=item.base_offset,
                    log_append_time=datetime.datetime.fromtimestamp(item.log_append_time_ms / 1000, tz=datetime.UTC) if item.log_append_time_ms >= 0 else None,
                    log_start_offset=item.log_start_offset,
                    record_errors=(),
                    error_message=item.error_message or None,
                )
                for item in items
            ),
        )
        for topic, items in by_topic(outcomes).items()
    )
    response = build(schema, responses=topics, throttle_time=datetime.timedelta(milliseconds=throttle_ms))
    buffer = io.BytesIO()
    entity_writer(schema)(buffer, response)
    return buffer.getvalue()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("answer", sorted(ANSWERS))
@pytest.mark.parametrize("throttle_ms", [0, 1500])
def test_the_encoded_body_is_kios_bytes(version: int, answer: str, throttle_ms: int) -> None:
    outcomes = ANSWERS[answer]
    assert encode_produce_body(version, by_topic(outcomes), throttle_ms) == kio_body(version, outcomes, throttle_ms)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_whole_frame_is_the_one_kio_would_send(version: int) -> None:
    result = ProduceResult(ANSWERS["errors with and without a message"], 250)
    encoded = _response(Context(version), Request(), result, [])  # type: ignore[arg-type]
    assert isinstance(encoded, api.EncodedResponse)
    assert encoded.throttle_ms == 250
    frame = encode_response_body(77, encoded.body, flexible_header=encoded.flexible_header)
    schema: Any = load_response_schema(PRODUCE, version)
    correlation_id, decoded = decode_response(frame[4:], schema)
    assert correlation_id == 77
    assert frame == encode_response(77, decoded)


@pytest.mark.parametrize("version", [10, 11])
def test_answers_with_a_leader_hint_are_left_to_kio_from_v10(version: int) -> None:
    hinted = [ProducePartitionOutcome("orders", 1, NOT_LEADER_OR_FOLLOWER, "moved", current_leader=LeaderHint(2, 5))]
    assert encode_produce_body(version, by_topic(hinted), 0) is None
    assert encode_produce_body(9, by_topic(hinted), 0) is not None  # no leader hints before v10


def test_answers_with_record_errors_are_left_to_kio() -> None:
    refused = [ProducePartitionOutcome("orders", 0, 87, "schema", record_errors=((0, "not registered"),))]
    assert all(encode_produce_body(version, by_topic(refused), 0) is None for version in VERSIONS)
