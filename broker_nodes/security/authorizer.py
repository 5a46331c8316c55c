"""Kafka's ACL semantics, as the brokers use them: the rules live in ``log_formats.acl_rules``,
shared with the control plane's ACL explainer so that both decide alike (see that module)."""

from log_formats.acl_rules import (
    CLUSTER_RESOURCE_NAME,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclEntry,
    Decision,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    explain,
    is_authorized,
    is_authorized_for_any,
)

__all__ = [
    "CLUSTER_RESOURCE_NAME",
    "WILDCARD_HOST",
    "WILDCARD_PRINCIPAL",
    "WILDCARD_RESOURCE",
    "AclEntry",
    "Decision",
    "Operation",
    "PatternType",
    "Permission",
    "ResourceType",
    "explain",
    "is_authorized",
    "is_authorized_for_any",
]
