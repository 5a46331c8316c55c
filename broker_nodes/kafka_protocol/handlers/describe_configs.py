"""DescribeConfigs (key 32, v1-v4): Kafka's request converted to ``requests.configs.describe_configs``.

TOPIC (2) and BROKER (4) resources; each entry carries its source (DYNAMIC_TOPIC_CONFIG,
STATIC_BROKER_CONFIG, DEFAULT_CONFIG) and, v3+, its type and (when asked) documentation.
``include_synonyms`` lists, for a topic config, the topic's override, the broker setting that sets
its default here (``log.retention.ms``...) and the built-in default (``requests.configs``); a broker
setting, fixed for the life of the process, is its own only synonym.
"""

from __future__ import annotations

from typing import Any

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import NO_THROTTLE, build, error_fields, response_module
from broker_nodes.requests import configs as config_requests
from broker_nodes.server.errors import InvalidRequestError, error_code_and_message
from grpc_protos.weir.v1 import broker_pb2

DESCRIBE_CONFIGS_KEY = 32

# Kafka's DescribeConfigsResponse ConfigType codes, by the type names of Weir's config tables.
CONFIG_TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7, "CLASS": 8, "PASSWORD": 9}


@api.handles(DESCRIBE_CONFIGS_KEY, 1, 4)
def handle_describe_configs(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    include_documentation = bool(getattr(request, "include_documentation", False))
    pb_request = broker_pb2.DescribeConfigsRequest(
        resources=[
            broker_pb2.ConfigResourceRef(type=resource.resource_type, name=resource.resource_name, config_names=resource.configuration_keys or ())
            for resource in request.resources
        ],
        include_documentation=include_documentation,
    )
    try:
        results = list(config_requests.describe_configs(context.broker, context.call, pb_request).resources)
    except InvalidRequestError as error:
        code, message = error_code_and_message(error)
        results = [
            broker_pb2.ConfigResourceResult(type=resource.type, name=resource.name, error_code=code, error_message=message) for resource in pb_request.resources
        ]
    answers = []
    for resource, result in zip(request.resources, results, strict=True):
        configs = tuple(_entry(context, schema, resource.resource_type, entry, request.include_synonyms, include_documentation) for entry in result.configs)
        answers.append(
            build(
                schema.DescribeConfigsResult,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=configs,
                **error_fields(result.error_code, result.error_message),
            )
        )
    return schema.DescribeConfigsResponse(throttle_time=NO_THROTTLE, results=tuple(answers))


def _entry(
    context: api.KafkaRequestContext, schema: Any, resource_type: int, entry: broker_pb2.ConfigEntryResult, include_synonyms: bool, include_documentation: bool
) -> Any:
    synonyms: tuple[Any, ...] = ()
    if include_synonyms:
        found = config_requests.config_synonyms(context.broker, resource_type, entry)
        synonyms = tuple(build(schema.DescribeConfigsSynonym, name=synonym.name, value=synonym.value, source=synonym.source) for synonym in found)
    return build(
        schema.DescribeConfigsResourceResult,
        name=entry.name,
        value=entry.value,
        read_only=entry.read_only,
        config_source=int(entry.source),
        is_sensitive=entry.is_sensitive,
        synonyms=synonyms,
        config_type=CONFIG_TYPES.get(entry.type, 0),
        documentation=entry.documentation if include_documentation else None,
    )
