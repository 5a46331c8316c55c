"""DescribeProducers (key 61, v0): each partition's remembered producers, via ``requests.producers``.

Each producer comes with the coordinator epoch of its last transaction marker and the first
offset of its open transaction in the partition (-1 for none), which is how Kafka's
``kafka-transactions.sh find-hanging`` finds transactions holding back the last stable offset.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import by_topic, throttle_time
from broker_nodes.requests import producers as producer_requests
from broker_nodes.requests.producers import ProducersOutcome

DESCRIBE_PRODUCERS_KEY = 61


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
                coordinator_epoch=producer.coordinator_epoch,
                current_txn_start_offset=producer.current_txn_start_offset,
            )
            for producer in outcome.producers
        ),
    )
