"""ListOffsets (key 2, v1-v8): earliest (-2), latest (-1), max timestamp (-3, v7+) or by time, via ``requests.list_offsets``.

Latest is the high watermark, or the last stable offset at read_committed (v2+; v1 has no
isolation level and reads uncommitted). The answer carries the partition's leader epoch (v4+), and a
``current_leader_epoch`` (v4+) is fenced or unknown as in Fetch (KIP-320).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import by_topic, throttle_time
from broker_nodes.replica_manager import READ_UNCOMMITTED
from broker_nodes.requests import list_offsets as list_offsets_requests
from broker_nodes.requests.list_offsets import ListOffsetsOutcome, ListOffsetsPartition

LIST_OFFSETS_KEY = 2


@api.handles(LIST_OFFSETS_KEY, 1, 8)
def handle_list_offsets(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    isolation_level = int(getattr(request, "isolation_level", READ_UNCOMMITTED))
    wanted = [
        ListOffsetsPartition(topic.name, partition.partition_index, partition.timestamp, getattr(partition, "current_leader_epoch", -1), isolation_level)
        for topic in request.topics
        for partition in topic.partitions
    ]
    outcomes = list_offsets_requests.list_offsets(context.broker, context.call, wanted)
    return build(
        schema.ListOffsetsResponse,
        throttle_time=throttle_time(0),
        topics=tuple(
            build(schema.ListOffsetsTopicResponse, name=topic, partitions=tuple(_partition(schema, outcome) for outcome in items))
            for topic, items in by_topic(outcomes, lambda outcome: outcome.topic).items()
        ),
    )


def _partition(schema: Any, outcome: ListOffsetsOutcome) -> Any:
    return build(
        schema.ListOffsetsPartitionResponse,
        partition_index=outcome.partition,
        error_code=ErrorCode(outcome.error_code),
        timestamp=outcome.timestamp,
        offset=outcome.offset,
        leader_epoch=outcome.leader_epoch,
    )
