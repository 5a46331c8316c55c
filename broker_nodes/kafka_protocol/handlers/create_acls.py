"""CreateAcls (key 30, v1-v3; kio has no v0, which predates resource patterns): ``requests.acls.create_acls``."""

from __future__ import annotations

from typing import Any

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers import acl_codes
from broker_nodes.kafka_protocol.handlers.admin_common import NO_THROTTLE, error_fields, response_module
from broker_nodes.requests import acls as acl_requests

CREATE_ACLS_KEY = 30


@api.handles(CREATE_ACLS_KEY, 1, 3)
def handle_create_acls(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    creations = [
        acl_codes.binding(
            creation.resource_type,
            creation.resource_name,
            creation.resource_pattern_type,
            creation.principal,
            creation.host,
            creation.operation,
            creation.permission_type,
        )
        for creation in request.creations
    ]
    results = acl_requests.create_acls(context.broker, context.call, creations)
    answers = tuple(schema.AclCreationResult(**error_fields(result.error_code, result.error_message)) for result in results)
    return schema.CreateAclsResponse(throttle_time=NO_THROTTLE, results=answers)
