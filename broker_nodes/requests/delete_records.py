"""DeleteRecords: raise a partition's log start offset on its leader (Kafka's AdminClient.deleteRecords).

The caller needs DELETE on the topic (Kafka's rule); a denied topic answers
TOPIC_AUTHORIZATION_FAILED whether or not it exists. Only the leader accepts the request
(NOT_LEADER_OR_FOLLOWER elsewhere). The requested offset (-1: the high watermark) must lie within
``[log start, high watermark]``, else OFFSET_OUT_OF_RANGE; an offset below the current log start
changes nothing and answers the current one. Records below the new start can no longer be read
on the leader at once; closed segments wholly below it are deleted.

Followers, as in Kafka's delete-records purgatory: followers raise their log start from the
leader's in their next fetch answer (``replication.follower``) and report it in the fetch after
that. A replicated partition is answered once its *low watermark* — the smallest log start
offset among the in-sync replicas — reached the requested offset, and that low watermark is the
answer's; until then the request waits (``replication.low_watermark_purgatory``), up to its
timeout (0 or less: the broker's request.timeout.ms), then answers REQUEST_TIMED_OUT (the
records stay deleted on the replicas that got that far). So once a deletion is acknowledged no
in-sync replica, hence no replica that can be elected, serves the deleted records. All
partitions are raised first and then waited for together, under one deadline. Durability: the
new log start is written to the log-start-offset checkpoint with the broker's periodic
checkpoints.
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


def delete_records(broker: Broker, call: CallContext, partitions: Sequence[DeleteRecordsPartition], *, timeout_ms: int = 0) -> list[DeleteRecordsOutcome]:
    """One outcome per partition, in request order; blocks up to ``timeout_ms`` for the in-sync replicas."""
    raised: list[int | Exception] = []
    for item in partitions:
        try:
            raised.append(_delete_below(broker, call, item))
        except Exception as error:  # this partition's answer
            raised.append(error)
    wait_ms = timeout_ms if timeout_ms > 0 else broker.replica_manager.default_request_timeout_ms
    deadline = broker.clock.monotonic() + wait_ms / 1000.0
    outcomes = []
    for item, result in zip(partitions, raised):
        if not isinstance(result, Exception):
            try:
                result = _wait_for_replicas(broker, call.qualify(item.topic), item.partition, result, deadline, wait_ms)
            except Exception as error:  # this partition's answer
                result = error
        if isinstance(result, Exception):
            code, message = plain_error(result, call, item.topic)
            outcomes.append(DeleteRecordsOutcome(item.topic, item.partition, code, message))
        else:
            outcomes.append(DeleteRecordsOutcome(item.topic, item.partition, low_watermark=result))
    return outcomes


def _wait_for_replicas(broker: Broker, qualified: str, partition: int, offset: int, deadline: float, wait_ms: int) -> int:
    """The low watermark once it reached ``offset``; the leader's log start for a partition without followers."""
    replication = broker.replica_manager.replication
    if replication is None or not replication.is_replicated_leader(qualified, partition):
        return broker.replica_manager.partition_log(qualified, partition).log_start_offset
    return replication.wait_for_low_watermark(qualified, partition, offset, deadline, wait_ms)


def _delete_below(broker: Broker, call: CallContext, item: DeleteRecordsPartition) -> int:
    """Raise the leader's log start to the requested offset; the offset the replicas must reach (at least the log start)."""
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
    return max(offset, log.log_start_offset)
