"""DeleteRecords (key 21, v0-v2): Kafka's request converted to ``requests.delete_records``."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import NO_THROTTLE, response_module
from broker_nodes.requests.delete_records import DeleteRecordsPartition, delete_records

DELETE_RECORDS_KEY = 21


@api.handles(DELETE_RECORDS_KEY, 0, 2)
def handle_delete_records(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    partitions = [DeleteRecordsPartition(topic.name, partition.partition_index, partition.offset) for topic in request.topics for partition in topic.partitions]
    outcomes = iter(delete_records(context.broker, context.call, partitions))
    topics = []
    for topic in request.topics:
        results = []
        for _ in topic.partitions:
            outcome = next(outcomes)
            results.append(
                schema.DeleteRecordsPartitionResult(
                    partition_index=outcome.partition, low_watermark=outcome.low_watermark, error_code=ErrorCode(outcome.error_code)
                )
            )
        topics.append(schema.DeleteRecordsTopicResult(name=topic.name, partitions=tuple(results)))
    return schema.DeleteRecordsResponse(throttle_time=NO_THROTTLE, topics=tuple(topics))
