"""CreatePartitions (key 37, v0-v3): Kafka's request converted to ``requests.topics.create_partitions``.

``count`` is the new total; a manual assignment of the new partitions' replicas is answered
INVALID_REQUEST for that topic (replicas are placed by Weir).
"""

from __future__ import annotations

from typing import Any

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import NO_THROTTLE, build, error_fields, response_module, timeout_ms
from broker_nodes.requests import topics as topic_requests
from broker_nodes.server.errors import InvalidRequestError, error_code_and_message
from grpc_protos.weir.v1 import broker_pb2
from weir.errors import ErrorCode

CREATE_PARTITIONS_KEY = 37


@api.handles(CREATE_PARTITIONS_KEY, 0, 3)
def handle_create_partitions(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    answers: dict[int, Any] = {}
    growing = []
    for position, topic in enumerate(request.topics):
        if topic.assignments:
            message = "manual replica assignment is not supported: replicas of new partitions are placed by Weir"
            answers[position] = build(schema.CreatePartitionsTopicResult, name=topic.name, **error_fields(ErrorCode.INVALID_REQUEST, message))
        else:
            growing.append((position, topic))
    if growing:
        pb_request = broker_pb2.CreatePartitionsRequest(
            topics=[broker_pb2.CreatePartitionsTopic(name=topic.name, count=topic.count) for _, topic in growing],
            validate_only=request.validate_only,
            timeout_ms=timeout_ms(request.timeout),
        )
        try:
            results = list(topic_requests.create_partitions(context.broker, context.call, pb_request).topics)
        except InvalidRequestError as error:
            code, message = error_code_and_message(error)
            results = [broker_pb2.TopicResult(name=topic.name, error_code=code, error_message=message) for _, topic in growing]
        for (position, topic), result in zip(growing, results, strict=True):
            answers[position] = build(schema.CreatePartitionsTopicResult, name=topic.name, **error_fields(result.error_code, result.error_message))
    return schema.CreatePartitionsResponse(throttle_time=NO_THROTTLE, results=tuple(answers[position] for position in range(len(request.topics))))
