"""OffsetForLeaderEpoch (key 23, v2-v4): where a leader epoch ended, for a consumer's truncation check (KIP-320).

Answered from the partition's leader-epoch cache through ``requests.leader_epochs``. Weir's
followers replicate over gRPC, so a request made as a follower (replica id >= 0) is answered
like a consumer's.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import by_topic, throttle_time
from broker_nodes.requests import leader_epochs
from broker_nodes.requests.leader_epochs import EpochEndOutcome, EpochQuery

OFFSET_FOR_LEADER_EPOCH_KEY = 23


@api.handles(OFFSET_FOR_LEADER_EPOCH_KEY, 2, 4)
def handle_offset_for_leader_epoch(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    queries = [
        EpochQuery(topic.topic, partition.partition, partition.current_leader_epoch, partition.leader_epoch)
        for topic in request.topics
        for partition in topic.partitions
    ]
    outcomes = leader_epochs.end_offsets(context.broker, context.call, queries)
    return build(
        schema.OffsetForLeaderEpochResponse,
        throttle_time=throttle_time(0),
        topics=tuple(
            build(schema.OffsetForLeaderTopicResult, topic=topic, partitions=tuple(_partition(schema, outcome) for outcome in items))
            for topic, items in by_topic(outcomes, lambda outcome: outcome.topic).items()
        ),
    )


def _partition(schema: Any, outcome: EpochEndOutcome) -> Any:
    return build(
        schema.EpochEndOffset,
        error_code=ErrorCode(outcome.error_code),
        partition=outcome.partition,
        leader_epoch=outcome.leader_epoch,
        end_offset=outcome.end_offset,
    )
