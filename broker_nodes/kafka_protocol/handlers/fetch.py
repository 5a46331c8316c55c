"""Fetch (key 1, v4-v12): stored batches as they are, through ``requests.fetch`` (long poll included).

- Fetch sessions (KIP-227) are not kept: every request is a full fetch and the answer's
  ``session_id`` is 0, which clients take as "no session" and keep sending full fetches. A
  request naming a session id (which this broker never handed out) gets
  FETCH_SESSION_ID_NOT_FOUND, as from a broker that forgot it.
- Isolation: without transactions the last stable offset is the high watermark, so
  read_committed and read_uncommitted read the same; aborted transactions are empty.
- ``current_leader_epoch`` (v9+) is fenced / unknown as the gRPC side does; ``diverging_epoch``
  (v12) is not computed (clients then validate with OffsetForLeaderEpoch); no preferred read
  replica (-1).
- v13+ name topics by id only; they are not offered until topics are looked up by id.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import by_topic, throttle_time
from broker_nodes.replica_manager import FetchPartitionRequest
from broker_nodes.requests import fetch as fetch_requests
from broker_nodes.requests.fetch import FetchPartitionOutcome

FETCH_KEY = 1
NO_SESSION = 0
READ_COMMITTED = 1


@api.handles(FETCH_KEY, 4, 12)
def handle_fetch(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    if getattr(request, "session_id", NO_SESSION) != NO_SESSION:
        return build(schema.FetchResponse, throttle_time=throttle_time(0), error_code=ErrorCode.fetch_session_id_not_found, session_id=NO_SESSION, responses=())
    wanted: list[FetchPartitionRequest] = []
    repeated: list[FetchPartitionOutcome] = []
    seen: set[tuple[str, int]] = set()
    for topic in request.topics:
        for partition in topic.partitions:
            key = (topic.topic, partition.partition)
            if key in seen:
                repeated.append(FetchPartitionOutcome(topic.topic, partition.partition, int(ErrorCode.invalid_request), "", -1, -1, -1, b""))
                continue
            seen.add(key)
            current_epoch = getattr(partition, "current_leader_epoch", -1)
            wanted.append(FetchPartitionRequest(topic.topic, partition.partition, partition.fetch_offset, max(partition.partition_max_bytes, 0), current_epoch))
    if wanted:
        result = fetch_requests.fetch(
            context.broker,
            context.call,
            wanted,
            max_wait_ms=max(int(request.max_wait.total_seconds() * 1000), 0),
            min_bytes=max(request.min_bytes, 0),
            max_bytes=max(request.max_bytes, 0),
        )
        outcomes, throttle_ms = [*result.partitions, *repeated], result.throttle_ms
    else:
        outcomes, throttle_ms = repeated, 0
    aborted = () if request.isolation_level == READ_COMMITTED else None
    return build(
        schema.FetchResponse,
        throttle_time=throttle_time(throttle_ms),
        error_code=ErrorCode.none,
        session_id=NO_SESSION,
        responses=tuple(
            build(schema.FetchableTopicResponse, topic=topic, partitions=tuple(_partition(schema, outcome, aborted) for outcome in items))
            for topic, items in by_topic(outcomes, lambda outcome: outcome.topic).items()
        ),
    )


def _partition(schema: Any, outcome: FetchPartitionOutcome, aborted: tuple[()] | None) -> Any:
    return build(
        schema.PartitionData,
        partition_index=outcome.partition,
        error_code=ErrorCode(outcome.error_code),
        high_watermark=outcome.high_watermark,
        last_stable_offset=outcome.last_stable_offset,
        log_start_offset=outcome.log_start_offset,
        aborted_transactions=aborted,
        preferred_read_replica=-1,
        records=outcome.records,
    )
