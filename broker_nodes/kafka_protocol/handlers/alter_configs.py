"""AlterConfigs (key 33, v0-v2): Kafka's request converted to ``requests.configs.alter_configs``.

The given configs replace every override of the resource (a config not named goes back to its
default), as in Kafka. A config given with a null value is refused (INVALID_CONFIG): the legacy
request has no way to say "delete"; IncrementalAlterConfigs does.
"""

from __future__ import annotations

from typing import Any

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import NO_THROTTLE, alter_configs_responses, response_module
from grpc_protos.weir.v1 import broker_pb2
from weir.topic_config import InvalidConfigError

ALTER_CONFIGS_KEY = 33


@api.handles(ALTER_CONFIGS_KEY, 0, 2)
def handle_alter_configs(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    resources: list[broker_pb2.AlterConfigsResource | Exception] = []
    for resource in request.resources:
        missing = [config.name for config in resource.configs if config.value is None]
        if missing:
            resources.append(InvalidConfigError(missing[0], None, "a null value cannot be set (use IncrementalAlterConfigs DELETE to remove an override)"))
            continue
        configs = [broker_pb2.AlterableConfig(name=config.name, value=config.value, op=broker_pb2.ALTER_CONFIG_OP_SET) for config in resource.configs]
        resources.append(broker_pb2.AlterConfigsResource(type=resource.resource_type, name=resource.resource_name, configs=configs, incremental=False))
    return schema.AlterConfigsResponse(throttle_time=NO_THROTTLE, responses=alter_configs_responses(context, schema, request, resources))
