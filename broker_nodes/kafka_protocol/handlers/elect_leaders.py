"""ElectLeaders (key 43, v0-v2): ``requests.elections.elect_leaders``.

v0 has no election type (always PREFERRED) and no top-level error code; null topic partitions
ask for every partition of the caller's topics. Results are grouped by topic in the order the
partitions came back.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode as KafkaErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import NO_THROTTLE, build, error_fields, response_module, timeout_ms
from broker_nodes.requests import elections as election_requests
from grpc_protos.weir.v1 import broker_pb2

ELECT_LEADERS_KEY = 43
PREFERRED = 0


def _request(request: Any) -> broker_pb2.ElectLeadersRequest:
    topics = request.topic_partitions
    return broker_pb2.ElectLeadersRequest(
        election_type=int(getattr(request, "election_type", PREFERRED)),
        all_partitions=topics is None,
        partitions=[broker_pb2.TopicPartitions(topic=str(topic.topic), partitions=[int(p) for p in topic.partitions]) for topic in topics or ()],
        timeout_ms=timeout_ms(request.timeout),
    )


@api.handles(ELECT_LEADERS_KEY, 0, 2)
def handle_elect_leaders(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    response = election_requests.elect_leaders(context.broker, context.call, _request(request))
    by_topic: dict[str, list[Any]] = {}
    for result in response.results:
        by_topic.setdefault(result.topic, []).append(
            schema.PartitionResult(partition_id=result.partition, **error_fields(result.error_code, result.error_message))
        )
    results = tuple(schema.ReplicaElectionResult(topic=topic, partition_result=tuple(partitions)) for topic, partitions in by_topic.items())
    return build(
        schema.ElectLeadersResponse,
        throttle_time=NO_THROTTLE,
        error_code=KafkaErrorCode(response.error_code),
        replica_election_results=results,
    )
