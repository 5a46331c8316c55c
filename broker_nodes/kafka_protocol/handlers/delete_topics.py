"""DeleteTopics (key 20, v1-v6): Kafka's request converted to ``requests.topics.delete_topics``.

v6 may name a topic by its id instead of its name: the id is looked up among the topics the
caller may see (another tenant's id is as unknown as a made-up one: UNKNOWN_TOPIC_ID).
"""

from __future__ import annotations

import uuid
from typing import Any

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import NO_THROTTLE, build, error_fields, response_module, timeout_ms, topic_uuid
from broker_nodes.requests import topics as topic_requests
from broker_nodes.server.errors import InvalidRequestError, error_code_and_message
from grpc_protos.weir.v1 import broker_pb2
from weir.errors import ErrorCode

DELETE_TOPICS_KEY = 20
ZERO_UUID = uuid.UUID(int=0)


@api.handles(DELETE_TOPICS_KEY, 1, 6)
def handle_delete_topics(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    # (name or None, topic id or None) per entry, in request order
    entries: list[tuple[str | None, uuid.UUID | None]]
    if context.api_version >= 6:
        entries = [(state.name, state.topic_id if state.topic_id not in (None, ZERO_UUID) else None) for state in request.topics]
    else:
        entries = [(name, None) for name in request.topic_names]
    answers: dict[int, Any] = {}
    by_name: list[tuple[int, str, uuid.UUID | None]] = []
    for position, (name, topic_id) in enumerate(entries):
        if name is None and topic_id is not None:
            name = topic_requests.plain_name_of_topic_id(context.broker, context.call, str(topic_id))
        if name is None:
            message = f"no topic with id {topic_id} exists" if topic_id is not None else "the entry names neither a topic nor a topic id"
            code = ErrorCode.UNKNOWN_TOPIC_ID if topic_id is not None else ErrorCode.INVALID_REQUEST
            answers[position] = build(schema.DeletableTopicResult, name=None, topic_id=topic_id or ZERO_UUID, **error_fields(code, message))
        else:
            by_name.append((position, name, topic_id))
    if by_name:
        try:
            results = list(topic_requests.delete_topics(context.broker, context.call, [name for _, name, _ in by_name], timeout_ms(request.timeout)).topics)
        except InvalidRequestError as error:
            code, message = error_code_and_message(error)
            results = [broker_pb2.TopicResult(name=name, error_code=code, error_message=message) for _, name, _ in by_name]
        for (position, name, topic_id), result in zip(by_name, results, strict=True):
            answered_id = topic_id or (topic_uuid(result.topic_id) or ZERO_UUID)
            answers[position] = build(schema.DeletableTopicResult, name=name, topic_id=answered_id, **error_fields(result.error_code, result.error_message))
    return schema.DeleteTopicsResponse(throttle_time=NO_THROTTLE, responses=tuple(answers[position] for position in range(len(entries))))
