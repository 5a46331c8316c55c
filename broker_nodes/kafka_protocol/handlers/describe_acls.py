"""DescribeAcls (key 29, v1-v3): ``requests.acls.describe_acls``, bindings grouped by resource as Kafka answers."""

from __future__ import annotations

from typing import Any

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers import acl_codes
from broker_nodes.kafka_protocol.handlers.admin_common import NO_THROTTLE, error_fields, response_module
from broker_nodes.requests import acls as acl_requests

DESCRIBE_ACLS_KEY = 29


@api.handles(DESCRIBE_ACLS_KEY, 1, 3)
def handle_describe_acls(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    described = acl_requests.describe_acls(context.broker, context.call, acl_codes.acl_filter(request))
    by_resource: dict[tuple[str, str, str], list[Any]] = {}
    for binding in described.bindings:
        description = schema.AclDescription(
            principal=binding.principal,
            host=binding.host,
            operation=acl_codes.code_of(acl_codes.OPERATIONS, binding.operation),
            permission_type=acl_codes.code_of(acl_codes.PERMISSIONS, binding.permission),
        )
        by_resource.setdefault((binding.resource_type, binding.resource_name, binding.pattern_type), []).append(description)
    resources = tuple(
        schema.DescribeAclsResource(
            resource_type=acl_codes.code_of(acl_codes.RESOURCE_TYPES, resource_type),
            resource_name=resource_name,
            pattern_type=acl_codes.code_of(acl_codes.PATTERN_TYPES, pattern_type),
            acls=tuple(descriptions),
        )
        for (resource_type, resource_name, pattern_type), descriptions in by_resource.items()
    )
    return schema.DescribeAclsResponse(throttle_time=NO_THROTTLE, resources=resources, **error_fields(described.error_code, described.error_message))
