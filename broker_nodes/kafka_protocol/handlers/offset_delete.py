"""OffsetDelete (key 47, v0): remove a group's committed offsets of some partitions, via ``requests.group_offsets``.

Refused for a topic the group's members subscribe to (GROUP_SUBSCRIBED_TO_TOPIC), as Kafka does;
a refusal of the whole group (not authorized, not the coordinator, no such group) is the
top-level error code.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import response_module
from broker_nodes.kafka_protocol.handlers.data_common import by_topic, throttle_time
from broker_nodes.requests import group_offsets as group_offset_requests
from broker_nodes.requests.group_offsets import CommitOutcome
from broker_nodes.server.errors import InvalidRequestError, error_code_and_message

OFFSET_DELETE_KEY = 47


@api.handles(OFFSET_DELETE_KEY, 0, 0)
def handle_offset_delete(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    partitions = [(topic.name, partition.partition_index) for topic in request.topics for partition in topic.partitions]
    try:
        outcome = group_offset_requests.delete_offsets(context.broker, context.call, request.group_id, partitions)
    except InvalidRequestError as error:  # a partition named twice
        outcome = CommitOutcome(error_code_and_message(error)[0])
    return schema.OffsetDeleteResponse(
        error_code=ErrorCode(outcome.error_code),
        throttle_time=throttle_time(0),
        topics=tuple(
            schema.OffsetDeleteResponseTopic(
                name=topic,
                partitions=tuple(schema.OffsetDeleteResponsePartition(partition_index=item.partition, error_code=ErrorCode(item.error_code)) for item in items),
            )
            for topic, items in by_topic(outcome.partitions, lambda item: item.topic).items()
        ),
    )
