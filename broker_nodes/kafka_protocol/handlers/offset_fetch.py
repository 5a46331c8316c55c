"""OffsetFetch (key 9, v1-v9): a group's committed offsets, via ``requests.group_offsets``.

v1 names the partitions; v2+ may ask for every committed partition (``topics`` null); v8+
asks for several groups at once (``groups``). A refusal of the whole group (not the
coordinator, not authorized) is the top-level ``error_code`` from v2 (per group from v8), and
each named partition's code in v1, which has no other place for it. A partition without a
commit answers offset -1 and no error, as Kafka does. v7+'s ``require_stable`` (KIP-447): a
partition with an offset committed by a transaction still open answers UNSTABLE_OFFSET_COMMIT,
which the consumer retries until the transaction ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import by_topic, throttle_time
from broker_nodes.requests import group_offsets as group_offset_requests
from broker_nodes.requests.group_offsets import CommittedOffset, FetchOutcome
from broker_nodes.server.errors import InvalidRequestError, error_code_and_message

OFFSET_FETCH_KEY = 9
BATCHED_VERSION = 8  # groups instead of group_id


def _wanted(topics: Sequence[Any] | None) -> list[tuple[str, int]] | None:
    if topics is None:
        return None
    return [(topic.name, partition) for topic in topics for partition in topic.partition_indexes]


def _fetch(context: api.KafkaRequestContext, group_id: str, topics: Sequence[Any] | None, *, require_stable: bool) -> FetchOutcome:
    wanted = _wanted(topics)
    try:
        outcome = group_offset_requests.fetch_offsets(context.broker, context.call, group_id, wanted, require_stable=require_stable)
    except InvalidRequestError as error:
        code, message = error_code_and_message(error)
        outcome = FetchOutcome(code, message)
    if outcome.error_code and wanted is not None and context.api_version < 2:
        # v1 has no top-level error code: every named partition carries it.
        return FetchOutcome(partitions=[CommittedOffset(topic, partition, error_code=outcome.error_code) for topic, partition in wanted])
    return outcome


def _topics(schema: Any, topic_type: Any, partition_type: Any, partitions: list[CommittedOffset]) -> tuple[Any, ...]:
    return tuple(
        topic_type(
            name=topic,
            partitions=tuple(
                build(
                    partition_type,
                    partition_index=item.partition,
                    committed_offset=item.offset,
                    committed_leader_epoch=item.leader_epoch,
                    metadata=item.metadata,
                    error_code=ErrorCode(item.error_code),
                )
                for item in items
            ),
        )
        for topic, items in by_topic(partitions, lambda item: item.topic).items()
    )


@api.handles(OFFSET_FETCH_KEY, 1, 9)
def handle_offset_fetch(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    require_stable = bool(getattr(request, "require_stable", False))
    if context.api_version >= BATCHED_VERSION:
        groups = []
        for group in request.groups:
            outcome = _fetch(context, group.group_id, group.topics, require_stable=require_stable)
            groups.append(
                schema.OffsetFetchResponseGroup(
                    group_id=group.group_id,
                    topics=_topics(schema, schema.OffsetFetchResponseTopics, schema.OffsetFetchResponsePartitions, outcome.partitions),
                    error_code=ErrorCode(outcome.error_code),
                )
            )
        return schema.OffsetFetchResponse(throttle_time=throttle_time(0), groups=tuple(groups))
    outcome = _fetch(context, request.group_id, request.topics, require_stable=require_stable)
    return build(
        schema.OffsetFetchResponse,
        throttle_time=throttle_time(0),
        topics=_topics(schema, schema.OffsetFetchResponseTopic, schema.OffsetFetchResponsePartition, outcome.partitions),
        error_code=ErrorCode(outcome.error_code),
    )
