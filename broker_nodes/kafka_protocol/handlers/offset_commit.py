"""OffsetCommit (key 8, v2-v9): a group's committed offsets, via ``requests.group_offsets``.

``generation_id_or_member_epoch`` is a classic member's generation or a KIP-848 member's epoch
(-1 with an empty member id for a commit from outside the group, as ``assign()`` consumers and
admin tools send). v2-v4's ``retention_time`` is ignored, as Kafka 2.1+ does (offsets.retention.minutes
decides). OffsetCommit has no error code for the whole request: a refusal of the group (not the
coordinator, unknown member, illegal generation...) is every partition's code.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.coordinator.offset_store import OffsetCommitEntry
from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import by_topic, throttle_time
from broker_nodes.requests import group_offsets as group_offset_requests
from broker_nodes.requests.group_offsets import PartitionResult
from broker_nodes.server.errors import InvalidRequestError, error_code_and_message

OFFSET_COMMIT_KEY = 8
NO_LEADER_EPOCH = -1


def commit_entries(request: Any) -> list[OffsetCommitEntry]:
    """The offsets an OffsetCommit or TxnOffsetCommit request names, in request order (their topics
    and partitions have the same fields; the leader epoch is absent before its version)."""
    return [
        OffsetCommitEntry(
            topic.name,
            partition.partition_index,
            partition.committed_offset,
            getattr(partition, "committed_leader_epoch", NO_LEADER_EPOCH),
            partition.committed_metadata or "",
        )
        for topic in request.topics
        for partition in topic.partitions
    ]


@api.handles(OFFSET_COMMIT_KEY, 2, 9)
def handle_offset_commit(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    entries = commit_entries(request)
    try:
        outcome = group_offset_requests.commit_offsets(
            context.broker,
            context.call,
            request.group_id,
            request.member_id,
            request.generation_id_or_member_epoch,
            entries,
            instance_id=getattr(request, "group_instance_id", None) or "",
        )
        if outcome.error_code:
            results = [PartitionResult(entry.topic, entry.partition, outcome.error_code, outcome.error_message) for entry in entries]
        else:
            results = outcome.partitions
    except InvalidRequestError as error:  # the request as a whole (a partition named twice): Kafka's answer is per partition
        code, message = error_code_and_message(error)
        results = [PartitionResult(entry.topic, entry.partition, code, message) for entry in entries]
    return build(
        schema.OffsetCommitResponse,
        throttle_time=throttle_time(0),
        topics=tuple(
            schema.OffsetCommitResponseTopic(
                name=topic,
                partitions=tuple(schema.OffsetCommitResponsePartition(partition_index=item.partition, error_code=ErrorCode(item.error_code)) for item in items),
            )
            for topic, items in by_topic(results, lambda item: item.topic).items()
        ),
    )
