"""Fetch (key 1, v4-v16): stored batches as they are, through ``requests.fetch`` (long poll included).

- Fetch sessions (KIP-227) are not kept: every request is a full fetch and the answer's
  ``session_id`` is 0, which clients take as "no session" and keep sending full fetches. A
  request naming a session id (which this broker never handed out) gets
  FETCH_SESSION_ID_NOT_FOUND, as from a broker that forgot it.
- Isolation: read_committed reads stop at the last stable offset and each partition names
  the aborted transactions (producer id, first offset) overlapping the batches returned, from
  the segments' ``.txnindex``; read_uncommitted reads go to the high watermark and send a null
  list, as Kafka does.
- A partition this broker does not (or no longer) lead names its current leader (v12+) and,
  v16+, that leader's endpoint (KIP-951).
- ``current_leader_epoch`` (v9+) is fenced / unknown as the gRPC side does. ``last_fetched_epoch``
  (v12+) is checked as Kafka's leader does (``ReplicaManager._diverging_epoch``): when this
  leader's log never had that epoch or ended it before ``fetch_offset``, the partition answers
  ``diverging_epoch`` (the largest epoch <= it here and where it ended) and no records, and the
  client truncates there (KIP-320); an epoch this log knows nothing at or below, or a fetch
  offset below the log start, answers OFFSET_OUT_OF_RANGE; -1 checks nothing. No preferred
  read replica (-1).
- v13+ name topics by id: ids are looked up among the caller's own topics (``requests.metadata``),
  so an unknown id and another tenant's id both answer UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import by_topic, current_leader, leader_endpoints, throttle_time
from broker_nodes.replica_manager import READ_COMMITTED, READ_UNCOMMITTED, FetchPartitionRequest
from broker_nodes.requests import fetch as fetch_requests
from broker_nodes.requests import metadata as metadata_requests
from broker_nodes.requests.fetch import FetchPartitionOutcome

FETCH_KEY = 1
NO_SESSION = 0
TOPIC_IDS_FROM = 13  # the version from which topics are named by id only


@api.handles(FETCH_KEY, 4, 16)
def handle_fetch(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    if getattr(request, "session_id", NO_SESSION) != NO_SESSION:
        return build(schema.FetchResponse, throttle_time=throttle_time(0), error_code=ErrorCode.fetch_session_id_not_found, session_id=NO_SESSION, responses=())
    wanted, refused, ids = _wanted_partitions(context, request)
    if not wanted:
        return _response(context, request, refused, 0, ids)
    pending = fetch_requests.start_fetch(
        context.broker,
        context.call,
        wanted,
        max_wait_ms=max(int(request.max_wait.total_seconds() * 1000), 0),
        min_bytes=max(request.min_bytes, 0),
        max_bytes=max(request.max_bytes, 0),
    )

    def finish() -> Any:
        result = pending.result()
        return _response(context, request, [*result.partitions, *refused], result.throttle_ms, ids)

    # A long poll parks on the listener's loop (no thread held) until data arrives or max_wait passes.
    return api.answer_when_done(pending, finish)


def _response(context: api.KafkaRequestContext, request: Any, outcomes: list[FetchPartitionOutcome], throttle_ms: int, ids: dict[str, uuid.UUID]) -> Any:
    schema = response_module(context)
    return build(
        schema.FetchResponse,
        throttle_time=throttle_time(throttle_ms),
        error_code=ErrorCode.none,
        session_id=NO_SESSION,
        node_endpoints=leader_endpoints(context, schema, (outcome.current_leader for outcome in outcomes)) if hasattr(schema, "NodeEndpoint") else (),
        responses=tuple(
            build(
                schema.FetchableTopicResponse,
                topic=topic,
                topic_id=ids.get(topic),
                partitions=tuple(_partition(schema, outcome) for outcome in items),
            )
            for topic, items in by_topic(outcomes, lambda outcome: outcome.topic).items()
        ),
    )


def _wanted_partitions(context: api.KafkaRequestContext, request: Any) -> tuple[list[FetchPartitionRequest], list[FetchPartitionOutcome], dict[str, uuid.UUID]]:
    """(partitions to read by plain name, partitions refused at once, plain name or unknown id -> topic id for v13+ answers)."""
    by_id = context.api_version >= TOPIC_IDS_FROM
    names = metadata_requests.names_of_topic_ids(context.broker, context.call, (str(topic.topic_id) for topic in request.topics)) if by_id else {}
    ids: dict[str, uuid.UUID] = {}
    wanted: list[FetchPartitionRequest] = []
    refused: list[FetchPartitionOutcome] = []
    seen: set[tuple[str, int]] = set()
    for topic in request.topics:
        name = names.get(str(topic.topic_id)) if by_id else topic.topic
        if by_id:
            ids[name if name is not None else str(topic.topic_id)] = topic.topic_id
        for partition in topic.partitions:
            if name is None:  # an id unknown to this caller: answered under the id it was asked by
                refused.append(_refused(str(topic.topic_id), partition.partition, ErrorCode.unknown_topic_id))
            elif (name, partition.partition) in seen:
                refused.append(_refused(name, partition.partition, ErrorCode.invalid_request))
            else:
                seen.add((name, partition.partition))
                current_epoch = getattr(partition, "current_leader_epoch", -1)
                last_fetched_epoch = getattr(partition, "last_fetched_epoch", -1)
                wanted.append(
                    FetchPartitionRequest(
                        name,
                        partition.partition,
                        partition.fetch_offset,
                        max(partition.partition_max_bytes, 0),
                        current_epoch,
                        last_fetched_epoch,
                        READ_COMMITTED if request.isolation_level == READ_COMMITTED else READ_UNCOMMITTED,
                    )
                )
    return wanted, refused, ids


def _refused(topic: str, partition: int, code: ErrorCode) -> FetchPartitionOutcome:
    return FetchPartitionOutcome(topic, partition, int(code), "", -1, -1, -1, b"")


def _partition(schema: Any, outcome: FetchPartitionOutcome) -> Any:
    return build(
        schema.PartitionData,
        partition_index=outcome.partition,
        error_code=ErrorCode(outcome.error_code),
        high_watermark=outcome.high_watermark,
        last_stable_offset=outcome.last_stable_offset,
        log_start_offset=outcome.log_start_offset,
        aborted_transactions=_aborted_transactions(schema, outcome),
        preferred_read_replica=-1,
        records=outcome.records,
        current_leader=current_leader(schema, outcome.current_leader) if hasattr(schema, "LeaderIdAndEpoch") else None,
        diverging_epoch=_diverging_epoch(schema, outcome.diverging_epoch) if hasattr(schema, "EpochEndOffset") else None,
    )


def _aborted_transactions(schema: Any, outcome: FetchPartitionOutcome) -> tuple[Any, ...] | None:
    """Kafka's list for a read_committed answer, None (null on the wire) for read_uncommitted."""
    if outcome.aborted_transactions is None:
        return None
    return tuple(
        build(schema.AbortedTransaction, producer_id=i64(entry.producer_id), first_offset=i64(entry.first_offset)) for entry in outcome.aborted_transactions
    )


def _diverging_epoch(schema: Any, diverging: tuple[int, int] | None) -> Any:
    """The tagged field as Kafka sends it: -1 / -1 (left out on the wire) when the logs agree."""
    if diverging is None:
        return schema.EpochEndOffset()
    epoch, end_offset = diverging
    return schema.EpochEndOffset(epoch=i32(epoch), end_offset=i64(end_offset))
