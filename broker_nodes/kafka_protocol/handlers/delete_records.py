"""DeleteRecords (key 21, v0-v2): Kafka's request converted to ``requests.delete_records``.

The answer waits, up to the request's ``timeout_ms``, for every in-sync replica to have deleted
up to the requested offset; the low watermark answered is the smallest log start offset among
them, and a partition whose replicas were not there in time answers REQUEST_TIMED_OUT.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import NO_THROTTLE, response_module, timeout_ms
from broker_nodes.requests.delete_records import DeleteRecordsPartition, delete_records

DELETE_RECORDS_KEY = 21


@api.handles(DELETE_RECORDS_KEY, 0, 2)
def handle_delete_records(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    partitions = [DeleteRecordsPartition(topic.name, partition.partition_index, partition.offset) for topic in request.topics for partition in topic.partitions]
    outcomes = iter(delete_records(context.broker, context.call, partitions, timeout_ms=timeout_ms(request.timeout)))
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
