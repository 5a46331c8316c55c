"""DeleteRecords: raise a partition's log start offset on its leader (Kafka's AdminClient.deleteRecords).

The caller needs DELETE on the topic (Kafka's rule); a denied topic answers
TOPIC_AUTHORIZATION_FAILED whether or not it exists. Only the leader accepts the request
(NOT_LEADER_OR_FOLLOWER elsewhere). The requested offset (-1: the high watermark) must lie within
``[log start, high watermark]``, else OFFSET_OUT_OF_RANGE; an offset below the current log start
changes nothing and answers the current one. Records below the new start can no longer be read
on the leader at once; closed segments wholly below it are deleted.

Durability and followers, as in Kafka: the new log start is written to the log-start-offset
checkpoint with the broker's periodic checkpoints, and followers raise theirs from the leader's
log start in their next fetch answers (``replication.follower``). Unlike Kafka, the answer does
not wait for every follower to have raised its log start: a follower that becomes leader before
its next fetch can serve the deleted records until it fetches again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from broker_nodes.requests.outcomes import NO_ERROR, plain_error
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import Operation, ResourceType
from broker_nodes.security.errors import TopicAuthorizationError
from broker_nodes.server.broker import Broker
from broker_nodes.storage.errors import OffsetOutOfRangeError

TO_HIGH_WATERMARK = -1  # Kafka's offset meaning "delete everything up to the high watermark"


@dataclass(frozen=True, slots=True)
class DeleteRecordsPartition:
    topic: str  # the caller's plain name
    partition: int
    offset: int  # the new log start offset, or -1 for the high watermark


@dataclass(frozen=True, slots=True)
class DeleteRecordsOutcome:
    topic: str
    partition: int
    error_code: int = NO_ERROR
    error_message: str = ""
    low_watermark: int = -1  # the partition's log start offset after the request


def delete_records(broker: Broker, call: CallContext, partitions: Sequence[DeleteRecordsPartition]) -> list[DeleteRecordsOutcome]:
    """One outcome per partition, in request order."""
    outcomes = []
    for item in partitions:
        try:
            low_watermark = _delete_below(broker, call, item)
        except Exception as error:  # this partition's answer
            code, message = plain_error(error, call, item.topic)
            outcomes.append(DeleteRecordsOutcome(item.topic, item.partition, code, message))
            continue
        outcomes.append(DeleteRecordsOutcome(item.topic, item.partition, low_watermark=low_watermark))
    return outcomes


def _delete_below(broker: Broker, call: CallContext, item: DeleteRecordsPartition) -> int:
    qualified = call.qualify(item.topic)
    if not call.may(Operation.DELETE, ResourceType.TOPIC, item.topic) or not call.owns(qualified):
        raise TopicAuthorizationError(item.topic, "delete records of")
    broker.replica_manager.leader_epoch(qualified, item.partition)  # NotLeaderOrFollowerError unless this broker leads it
    log = broker.replica_manager.partition_log(qualified, item.partition)
    high_watermark = log.high_watermark
    offset = high_watermark if item.offset == TO_HIGH_WATERMARK else item.offset
    if not 0 <= offset <= high_watermark:
        raise OffsetOutOfRangeError(item.offset, log.log_start_offset, high_watermark)
    log.increase_log_start_offset(offset)
    return log.log_start_offset
