"""DeleteAcls (key 31, v1-v3): ``requests.acls.delete_acls``; each filter answers the bindings it deleted."""

from __future__ import annotations

from typing import Any

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers import acl_codes
from broker_nodes.kafka_protocol.handlers.admin_common import NO_THROTTLE, error_fields, response_module
from broker_nodes.requests import acls as acl_requests

DELETE_ACLS_KEY = 31


@api.handles(DELETE_ACLS_KEY, 1, 3)
def handle_delete_acls(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    results = acl_requests.delete_acls(context.broker, context.call, [acl_codes.acl_filter(item) for item in request.filters])
    answers = []
    for result in results:
        matching = tuple(
            schema.DeleteAclsMatchingAcl(
                resource_type=acl_codes.code_of(acl_codes.RESOURCE_TYPES, binding.resource_type),
                resource_name=binding.resource_name,
                pattern_type=acl_codes.code_of(acl_codes.PATTERN_TYPES, binding.pattern_type),
                principal=binding.principal,
                host=binding.host,
                operation=acl_codes.code_of(acl_codes.OPERATIONS, binding.operation),
                permission_type=acl_codes.code_of(acl_codes.PERMISSIONS, binding.permission),
                **error_fields(0, ""),
            )
            for binding in result.deleted
        )
        answers.append(schema.DeleteAclsFilterResult(matching_acls=matching, **error_fields(result.error_code, result.error_message)))
    return schema.DeleteAclsResponse(throttle_time=NO_THROTTLE, filter_results=tuple(answers))
