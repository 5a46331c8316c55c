"""Kafka's numeric ACL codes and the catalog's names for them (what ``controller.proto``'s forwarded
ACL messages carry), both ways; used by the ACL handlers and DescribeCluster's authorized operations.

A code Weir does not know becomes a name the catalog refuses with a clear message (``UNKNOWN(9)``),
so a binding for, say, DELEGATION_TOKEN is answered INVALID_REQUEST rather than dropped.
"""

from __future__ import annotations

from typing import Any

from broker_nodes.security.authorizer import Operation
from grpc_protos.weir.v1 import controller_pb2

ANY_CODE = 1  # Kafka's ANY in every ACL enum (a filter matching every value)

RESOURCE_TYPES = {2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN", 7: "USER"}
PATTERN_TYPES = {2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
OPERATIONS = {
    2: "ALL",
    3: "READ",
    4: "WRITE",
    5: "CREATE",
    6: "DELETE",
    7: "ALTER",
    8: "DESCRIBE",
    9: "CLUSTER_ACTION",
    10: "DESCRIBE_CONFIGS",
    11: "ALTER_CONFIGS",
    12: "IDEMPOTENT_WRITE",
    13: "CREATE_TOKENS",
    14: "DESCRIBE_TOKENS",
}
PERMISSIONS = {2: "DENY", 3: "ALLOW"}

# Kafka's AclOperation code of each operation of Weir's authorizer.
OPERATION_CODES = {operation: code for code, name in OPERATIONS.items() for operation in Operation if operation.name == name}


def name_of(codes: dict[int, str], code: int) -> str:
    return codes.get(code, f"UNKNOWN({code})")


def code_of(codes: dict[int, str], name: str) -> int:
    return next((code for code, known in codes.items() if known == name), 0)


def binding(
    resource_type: int, resource_name: str, pattern_type: int, principal: str, host: str, operation: int, permission: int
) -> controller_pb2.ForwardedAclBinding:
    return controller_pb2.ForwardedAclBinding(
        resource_type=name_of(RESOURCE_TYPES, resource_type),
        resource_name=resource_name,
        pattern_type=name_of(PATTERN_TYPES, pattern_type),
        principal=principal,
        host=host,
        operation=name_of(OPERATIONS, operation),
        permission=name_of(PERMISSIONS, permission),
    )


def acl_filter(request_filter: Any) -> controller_pb2.ForwardedAclFilter:
    """The forwarded filter of a kio DescribeAclsRequest or DeleteAclsFilter (``*_filter`` fields; ANY or null: no condition)."""
    fields: dict[str, str] = {}
    for field, codes, value in (
        ("resource_type", RESOURCE_TYPES, request_filter.resource_type_filter),
        ("pattern_type", PATTERN_TYPES, request_filter.pattern_type_filter),
        ("operation", OPERATIONS, request_filter.operation),
        ("permission", PERMISSIONS, request_filter.permission_type),
    ):
        if value != ANY_CODE:
            fields[field] = name_of(codes, value)
    for field, value in (
        ("resource_name", request_filter.resource_name_filter),
        ("principal", request_filter.principal_filter),
        ("host", request_filter.host_filter),
    ):
        if value is not None:
            fields[field] = value
    return controller_pb2.ForwardedAclFilter(**fields)
