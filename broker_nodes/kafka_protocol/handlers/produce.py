"""Produce (key 0, v3-v11): the RecordBatch v2 bytes as received, through ``requests.produce``.

The batches are not decoded here: the broker's append validates them (CRC, magic, producer
id/epoch/sequence for idempotent producers) exactly as for the gRPC SDK. A partition's data
holding more than one batch is INVALID_RECORD, Kafka's rule for every version served here (v3+),
checked by the request layer for both doors. acks=0 is answered
with no response at all (the handler returns None, see ``api``), as Kafka does. A partition
this broker does not (or no longer) lead names its current leader and that leader's endpoint
(v10+, KIP-951), so the client moves without a Metadata round trip. A partition
named twice in one request is refused on its repeats (INVALID_REQUEST), its first occurrence
is appended. Records refused by broker-side schema validation are listed in ``record_errors``
(KIP-467, v8+) with the partition's INVALID_RECORD.

The listener answers Produce on its event loop thread (``context.on_loop``), sparing the two
thread hand-offs that cost more than a one-record request itself; a request that may block there
(:func:`_may_block`) raises ``api.WorkerThreadNeeded`` first and goes to a worker thread. The
response body is encoded by ``produce_response`` (kio's bytes, without building kio's objects)
except for answers carrying record errors or leader hints.
"""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module, timeout_ms
from broker_nodes.kafka_protocol.handlers.data_common import by_topic, current_leader, leader_endpoints, throttle_time
from broker_nodes.kafka_protocol.handlers.produce_response import FIRST_FLEXIBLE_VERSION, encode_produce_body
from broker_nodes.requests import produce as produce_requests
from broker_nodes.requests.produce import ProducePartition, ProducePartitionOutcome
from broker_nodes.requests.schema_validation import schema_rules

PRODUCE_KEY = 0
NO_ACKS = 0
NEVER_FLUSH_MESSAGES = 2**63 - 1  # flush.messages's default (Kafka's Long.MAX_VALUE): appends never fsync
LOOP_MAX_RECORD_BYTES = 64 * 1024  # record bytes of a Produce request answered on the listener's loop at most (larger: a worker thread)


@api.handles(PRODUCE_KEY, 3, 11)
def handle_produce(context: api.KafkaRequestContext, request: Any) -> Any:
    if context.on_loop and _may_block(context, request):
        raise api.WorkerThreadNeeded()
    partitions: list[ProducePartition] = []
    repeated: list[ProducePartitionOutcome] = []
    seen: set[tuple[str, int]] = set()
    for topic in request.topic_data:
        for data in topic.partition_data:
            key = (topic.name, data.index)
            if key in seen:
                repeated.append(ProducePartitionOutcome(topic.name, data.index, int(ErrorCode.invalid_request), "the partition occurs twice in the request"))
                continue
            seen.add(key)
            partitions.append(ProducePartition(topic.name, data.index, bytes(data.records or b"")))
    pending = produce_requests.start_produce(
        context.broker,
        context.call,
        partitions,
        acks=request.acks,
        timeout_ms=timeout_ms(request.timeout),
        transactional_id=request.transactional_id or "",
        waits_on_thread=False,
    )
    # acks=all parks on the listener's loop (no thread held) until the in-sync replicas have the batches.
    return api.answer_when_done(pending, lambda: _response(context, request, pending.result(), repeated))


def _may_block(context: api.KafkaRequestContext, request: Any) -> bool:
    """Whether this Produce may wait beyond appending a small batch to the page cache (then it is not answered on the loop).

    A transactional id is verified with its coordinator (KIP-890), possibly another broker; a
    topic with schema validation may look ids up in the control plane's registry; a partition
    whose log fsyncs every ``flush.messages`` records may fsync in this append; a large
    request's copy, checks and write take long enough that the loop would keep other
    connections waiting, and a hand-off costs little beside them.
    """
    if request.transactional_id:
        return True
    size = 0
    broker, qualify = context.broker, context.call.qualify
    for topic in request.topic_data:
        name = qualify(topic.name)
        metadata = broker.registry.get(name)
        if metadata is not None and schema_rules(metadata.configs) is not None:
            return True
        for data in topic.partition_data:
            log = broker.log_manager.get_log(name, data.index)
            if log is not None and log.config.flush_messages < NEVER_FLUSH_MESSAGES:
                return True
            size += len(data.records or b"")
    return size > LOOP_MAX_RECORD_BYTES


def _response(context: api.KafkaRequestContext, request: Any, result: produce_requests.ProduceResult, repeated: list[ProducePartitionOutcome]) -> Any:
    if request.acks == NO_ACKS:
        return api.NO_RESPONSE  # Kafka sends nothing back for acks=0
    outcomes = by_topic([*result.partitions, *repeated], lambda outcome: outcome.topic)
    body = encode_produce_body(context.api_version, outcomes, result.throttle_ms)
    if body is not None:
        return api.EncodedResponse(PRODUCE_KEY, context.api_version, context.api_version >= FIRST_FLEXIBLE_VERSION, body, result.throttle_ms)
    schema = response_module(context)
    hints = [outcome.current_leader for outcome in result.partitions]
    return build(
        schema.ProduceResponse,
        responses=tuple(
            build(schema.TopicProduceResponse, name=topic, partition_responses=tuple(_partition(schema, outcome) for outcome in items))
            for topic, items in outcomes.items()
        ),
        throttle_time=throttle_time(result.throttle_ms),
        node_endpoints=leader_endpoints(context, schema, hints) if hasattr(schema, "NodeEndpoint") else (),
    )


def _partition(schema: Any, outcome: ProducePartitionOutcome) -> Any:
    append_time = None
    if outcome.log_append_time_ms >= 0:
        append_time = datetime.datetime.fromtimestamp(outcome.log_append_time_ms / 1000, tz=datetime.UTC)
    return build(
        schema.PartitionProduceResponse,
        index=outcome.partition,
        error_code=ErrorCode(outcome.error_code),
        base_offset=outcome.base_offset,
        log_append_time=append_time,
        log_start_offset=outcome.log_start_offset,
        record_errors=_record_errors(schema, outcome),
        error_message=outcome.error_message or None,
        current_leader=current_leader(schema, outcome.current_leader) if hasattr(schema, "LeaderIdAndEpoch") else None,
    )


def _record_errors(schema: Any, outcome: ProducePartitionOutcome) -> tuple[Any, ...]:
    """KIP-467's per-record errors (v8+): the records schema validation refused, by batch index."""
    if not outcome.record_errors or not hasattr(schema, "BatchIndexAndErrorMessage"):
        return ()
    return tuple(schema.BatchIndexAndErrorMessage(batch_index=i32(index), batch_index_error_message=message) for index, message in outcome.record_errors)
