"""Kafka's ACL semantics as pure functions, stated once for the brokers and the control plane:
may this principal, from this host, do this to this resource, and which binding decides?

The brokers authorize every request with :func:`is_authorized` (through
``broker_nodes.security.authorizer``); the control plane's ACL explainer calls
:func:`explain`, the same decision with the binding that made it, so the dashboard and the
REST API can never disagree with a broker.

Rules (those of Kafka's ``AclAuthorizer``):

- No matching ACL means denied; a matching DENY beats every ALLOW.
- An ACL matches the resource when its type is the resource's and its pattern matches the
  name: LITERAL matches the exact name or every name when it is ``*``; PREFIXED matches
  every name starting with it.
- It matches the caller when its principal is the caller's or ``User:*``, and its host is
  the caller's address or ``*``.
- An ACL of operation ALL matches every operation. A DENY applies to its own operation (or
  ALL) only. An ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE; an ALLOW of
  ALTER_CONFIGS also allows DESCRIBE_CONFIGS.

ACLs are scoped to a tenant before they get here, and resource names are the plain names the
tenant uses. Thread-safe (no state).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

WILDCARD_RESOURCE = "*"  # a LITERAL resource name that matches every name
WILDCARD_PRINCIPAL = "User:*"  # matches every principal
WILDCARD_HOST = "*"  # matches every client address
CLUSTER_RESOURCE_NAME = "kafka-cluster"  # Kafka's name of the one CLUSTER resource


class ResourceType(enum.IntEnum):
    """Values of ``AclResourceType`` in admin.proto."""

    TOPIC = 1
    GROUP = 2
    CLUSTER = 3
    TRANSACTIONAL_ID = 4


class PatternType(enum.IntEnum):
    LITERAL = 1
    PREFIXED = 2


class Operation(enum.IntEnum):
    ALL = 1
    READ = 2
    WRITE = 3
    CREATE = 4
    DELETE = 5
    ALTER = 6
    DESCRIBE = 7
    DESCRIBE_CONFIGS = 8
    ALTER_CONFIGS = 9
    IDEMPOTENT_WRITE = 10


class Permission(enum.IntEnum):
    ALLOW = 1
    DENY = 2


@dataclass(frozen=True, slots=True)
class AclEntry:
    """One ACL binding of a tenant."""

    principal: str
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    operation: Operation
    permission: Permission
    host: str = WILDCARD_HOST


# Operation asked for -> the operations whose ALLOW grants it (besides itself and ALL).
_IMPLIED_BY: Mapping[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset({Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.ALTER_CONFIGS}),
}


def _matches_resource(acl: AclEntry, resource_type: ResourceType, name: str) -> bool:
    if acl.resource_type != resource_type:
        return False
    if acl.pattern_type == PatternType.LITERAL:
        return acl.resource_name == name or acl.resource_name == WILDCARD_RESOURCE
    return name.startswith(acl.resource_name)


def _matches_caller(acl: AclEntry, principal: str, host: str) -> bool:
    return acl.principal in (principal, WILDCARD_PRINCIPAL) and acl.host in (host, WILDCARD_HOST)


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of one authorization: ``deciding`` is the DENY that refused, the ALLOW that
    granted (``implied`` when it grants the operation only by implication, e.g. READ -> DESCRIBE),
    or None when no ACL matched (denied by default)."""

    allowed: bool
    deciding: AclEntry | None
    implied: bool = False


def explain(acls: Iterable[AclEntry], principal: str, host: str, operation: Operation, resource_type: ResourceType, name: str) -> Decision:
    """The decision on ``operation`` for this caller and resource, and the ACL that decides it
    (see the module docstring): the first matching DENY, else the first granting ALLOW."""
    granting = _IMPLIED_BY.get(operation, frozenset()) | {operation, Operation.ALL}
    allowing: AclEntry | None = None
    for acl in acls:
        if not _matches_resource(acl, resource_type, name) or not _matches_caller(acl, principal, host):
            continue
        if acl.permission == Permission.DENY:
            if acl.operation in (operation, Operation.ALL):
                return Decision(False, acl)
        elif allowing is None and acl.operation in granting:
            allowing = acl
    if allowing is None:
        return Decision(False, None)
    return Decision(True, allowing, implied=allowing.operation not in (operation, Operation.ALL))


def is_authorized(acls: Iterable[AclEntry], principal: str, host: str, operation: Operation, resource_type: ResourceType, name: str) -> bool:
    """True when the ACLs allow ``operation`` on the resource for this caller (see the module docstring)."""
    return explain(acls, principal, host, operation, resource_type, name).allowed


def is_authorized_for_any(acls: Iterable[AclEntry], principal: str, host: str, operation: Operation, resource_type: ResourceType) -> bool:
    """True when some resource of ``resource_type`` allows ``operation`` (InitProducerId's "WRITE on any topic").

    As Kafka's ``authorizeByResourceType``: an ALLOW for the caller counts unless a DENY of
    the same operation covers every name (LITERAL ``*`` or PREFIXED with an empty prefix).
    """
    granting = _IMPLIED_BY.get(operation, frozenset()) | {operation, Operation.ALL}
    allowed = False
    for acl in acls:
        if acl.resource_type != resource_type or not _matches_caller(acl, principal, host):
            continue
        if acl.permission == Permission.DENY:
            covers_every_name = (acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD_RESOURCE) or (
                acl.pattern_type == PatternType.PREFIXED and not acl.resource_name
            )
            if covers_every_name and acl.operation in (operation, Operation.ALL):
                return False
        elif acl.operation in granting:
            allowed = True
    return allowed
