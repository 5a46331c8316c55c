"""CreateTopics (key 19, v2-v7): Kafka's request converted to ``requests.topics.create_topics``.

``num_partitions`` / ``replication_factor`` of -1 take the defaults; a config with a null value
is left out (Kafka: use the default). Replicas are placed by the control plane (or by the
standalone broker), so a manual replica assignment is answered INVALID_REQUEST for that topic.
v5+ answers carry the created topic's configs, read through the same DescribeConfigs logic as
any other client (when they cannot be read yet, ``topic_config_error_code`` says why).
"""

from __future__ import annotations

from typing import Any

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import NO_THROTTLE, build, error_fields, response_module, timeout_ms, topic_uuid
from broker_nodes.requests import configs as config_requests
from broker_nodes.requests import topics as topic_requests
from broker_nodes.server.errors import InvalidRequestError, error_code_and_message
from grpc_protos.weir.v1 import broker_pb2
from weir.errors import ErrorCode

CREATE_TOPICS_KEY = 19
RETURNS_CONFIGS_FROM = 5  # the version from which an answer carries the topic's configs


@api.handles(CREATE_TOPICS_KEY, 2, 7)
def handle_create_topics(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    answers: dict[int, Any] = {}
    creatable = []
    for position, topic in enumerate(request.topics):
        if topic.assignments:
            message = "manual replica assignment is not supported: replicas are placed by Weir (give num_partitions and replication_factor)"
            answers[position] = build(
                schema.CreatableTopicResult, name=topic.name, topic_id=None, configs=None, **error_fields(ErrorCode.INVALID_REQUEST, message)
            )
        else:
            creatable.append((position, topic))
    if creatable:
        pb_request = broker_pb2.CreateTopicsRequest(
            topics=[
                broker_pb2.CreatableTopic(
                    name=topic.name,
                    num_partitions=topic.num_partitions,
                    replication_factor=topic.replication_factor,
                    configs=[broker_pb2.TopicConfigEntry(name=entry.name, value=entry.value) for entry in topic.configs if entry.value is not None],
                )
                for _, topic in creatable
            ],
            validate_only=request.validate_only,
            timeout_ms=timeout_ms(request.timeout),
        )
        try:
            results = list(topic_requests.create_topics(context.broker, context.call, pb_request).topics)
        except InvalidRequestError as error:
            code, message = error_code_and_message(error)
            results = [broker_pb2.TopicResult(name=topic.name, error_code=code, error_message=message) for _, topic in creatable]
        for (position, topic), result in zip(creatable, results, strict=True):
            answers[position] = _topic_answer(context, schema, topic.name, result, request.validate_only)
    return schema.CreateTopicsResponse(throttle_time=NO_THROTTLE, topics=tuple(answers[position] for position in range(len(request.topics))))


def _topic_answer(context: api.KafkaRequestContext, schema: Any, name: str, result: broker_pb2.TopicResult, validate_only: bool) -> Any:
    if result.error_code:
        return build(schema.CreatableTopicResult, name=name, topic_id=None, configs=None, **error_fields(result.error_code, result.error_message))
    configs, config_error = (None, 0) if validate_only or context.api_version < RETURNS_CONFIGS_FROM else _configs_of(context, schema, name)
    return build(
        schema.CreatableTopicResult,
        name=name,
        topic_id=topic_uuid(result.topic_id),
        num_partitions=result.num_partitions,
        replication_factor=result.replication_factor,
        configs=configs,
        topic_config_error_code=config_error,
        **error_fields(0, ""),
    )


def _configs_of(context: api.KafkaRequestContext, schema: Any, name: str) -> tuple[Any, int]:
    """(the topic's configs, 0), or (None, the error code) when they cannot be read on this broker yet."""
    resource = broker_pb2.ConfigResourceRef(type=broker_pb2.RESOURCE_TYPE_TOPIC, name=name)
    try:
        described = config_requests.describe_configs(context.broker, context.call, broker_pb2.DescribeConfigsRequest(resources=[resource])).resources[0]
    except Exception as error:  # the topic was created; only its configs are missing from the answer
        return None, error_code_and_message(error)[0]
    if described.error_code:
        return None, described.error_code
    entries = tuple(
        build(schema.CreatableTopicConfigs, name=entry.name, value=entry.value, read_only=entry.read_only, config_source=int(entry.source), is_sensitive=False)
        for entry in described.configs
    )
    return entries, 0
