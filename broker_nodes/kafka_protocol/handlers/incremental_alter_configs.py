"""IncrementalAlterConfigs (key 44, v0-v1): SET, DELETE, APPEND, SUBTRACT through the same path as AlterConfigs.

Each resource's operations become one incremental change of ``requests.configs`` (APPEND and
SUBTRACT on a LIST config resolved there against the current value); a resource whose
operations cannot be resolved (an unknown operation, APPEND to a non-list config) is answered
with its own error and the others still apply.
"""

from __future__ import annotations

from typing import Any

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import NO_THROTTLE, alter_configs_responses, response_module
from broker_nodes.requests import configs as config_requests
from broker_nodes.server.errors import InvalidRequestError
from grpc_protos.weir.v1 import broker_pb2

INCREMENTAL_ALTER_CONFIGS_KEY = 44


@api.handles(INCREMENTAL_ALTER_CONFIGS_KEY, 0, 1)
def handle_incremental_alter_configs(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    resources: list[broker_pb2.AlterConfigsResource | Exception] = []
    for resource in request.resources:
        try:
            changes = [_change(config) for config in resource.configs]
            resources.append(config_requests.incremental_resource(context.broker, context.call, resource.resource_type, resource.resource_name, changes))
        except Exception as error:  # this resource's answer
            resources.append(error)
    return schema.IncrementalAlterConfigsResponse(throttle_time=NO_THROTTLE, responses=alter_configs_responses(context, schema, request, resources))


def _change(config: Any) -> config_requests.IncrementalChange:
    try:
        op = config_requests.IncrementalOp(config.config_operation)
    except ValueError:
        raise InvalidRequestError(
            f"config {config.name!r}: operation {config.config_operation} is not SET (0), DELETE (1), APPEND (2) or SUBTRACT (3)"
        ) from None
    return config_requests.IncrementalChange(config.name, config.value, op)
