"""DescribeProducers (key 61, v0): each partition's remembered idempotent producers, via ``requests.producers``."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import by_topic, throttle_time
from broker_nodes.requests import producers as producer_requests
from broker_nodes.requests.producers import ProducersOutcome

DESCRIBE_PRODUCERS_KEY = 61
NO_COORDINATOR_EPOCH = -1  # no transactions yet: no transaction coordinator wrote markers
NO_OPEN_TRANSACTION = -1


@api.handles(DESCRIBE_PRODUCERS_KEY, 0, 0)
def handle_describe_producers(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    wanted = [(topic.name, partition) for topic in request.topics for partition in topic.partition_indexes]
    outcomes = producer_requests.describe_producers(context.broker, context.call, wanted)
    return build(
        schema.DescribeProducersResponse,
        throttle_time=throttle_time(0),
        topics=tuple(
            build(schema.TopicResponse, name=topic, partitions=tuple(_partition(schema, outcome) for outcome in items))
            for topic, items in by_topic(outcomes, lambda outcome: outcome.topic).items()
        ),
    )


def _partition(schema: Any, outcome: ProducersOutcome) -> Any:
    return build(
        schema.PartitionResponse,
        partition_index=outcome.partition,
        error_code=ErrorCode(outcome.error_code),
        error_message=outcome.error_message or None,
        active_producers=tuple(
            build(
                schema.ProducerState,
                producer_id=producer.producer_id,
                producer_epoch=producer.epoch,
                last_sequence=producer.last_sequence,
                last_timestamp=producer.last_timestamp,
                coordinator_epoch=NO_COORDINATOR_EPOCH,
                current_txn_start_offset=NO_OPEN_TRANSACTION,
            )
            for producer in outcome.producers
        ),
    )
