"""Kafka's TRANSACTIONAL_ID ACL resource, and the migration rule for principals no such binding names."""

from __future__ import annotations

import pytest

from broker_nodes.security.access import CallContext, CallerKind, anonymous_context
from broker_nodes.security.authorizer import AclEntry, Operation, PatternType, Permission, ResourceType
from broker_nodes.security.transactional_ids import follows_the_topic_rule, may_use_transactional_id

PRINCIPAL = "User:sa-1"
WRITE_ORDERS = AclEntry(PRINCIPAL, ResourceType.TOPIC, "orders", PatternType.LITERAL, Operation.WRITE, Permission.ALLOW)


def client(*acls: AclEntry) -> CallContext:
    return CallContext("tn-a", PRINCIPAL, "127.0.0.1", CallerKind.CLIENT, acls)


def on_id(
    name: str, operation: Operation, *, permission: Permission = Permission.ALLOW, principal: str = PRINCIPAL, pattern: PatternType = PatternType.LITERAL
) -> AclEntry:
    return AclEntry(principal, ResourceType.TRANSACTIONAL_ID, name, pattern, operation, permission)


@pytest.mark.parametrize("operation", [Operation.WRITE, Operation.DESCRIBE])
def test_a_principal_without_transactional_id_bindings_keeps_the_topic_rule(operation):
    assert may_use_transactional_id(client(WRITE_ORDERS), operation, "any-id")
    assert not may_use_transactional_id(client(), operation, "any-id")
    # Another principal's binding does not switch this one.
    assert follows_the_topic_rule(client(WRITE_ORDERS, on_id("app", Operation.WRITE, principal="User:sa-2")))


def test_a_binding_switches_the_principal_to_kafkas_rule():
    caller = client(WRITE_ORDERS, on_id("app", Operation.WRITE))
    assert not follows_the_topic_rule(caller)
    assert may_use_transactional_id(caller, Operation.WRITE, "app")
    assert may_use_transactional_id(caller, Operation.DESCRIBE, "app")  # WRITE implies DESCRIBE
    assert not may_use_transactional_id(caller, Operation.WRITE, "other")  # topic WRITE no longer counts


def test_describe_alone_does_not_allow_use_and_a_deny_wins():
    describer = client(WRITE_ORDERS, on_id("app", Operation.DESCRIBE))
    assert may_use_transactional_id(describer, Operation.DESCRIBE, "app")
    assert not may_use_transactional_id(describer, Operation.WRITE, "app")
    denied = client(WRITE_ORDERS, on_id("*", Operation.WRITE), on_id("secret", Operation.ALL, permission=Permission.DENY, principal="User:*"))
    assert may_use_transactional_id(denied, Operation.WRITE, "app")
    assert not may_use_transactional_id(denied, Operation.WRITE, "secret")


def test_prefixed_bindings_and_trusted_callers():
    caller = client(on_id("etl-", Operation.WRITE, pattern=PatternType.PREFIXED))
    assert may_use_transactional_id(caller, Operation.WRITE, "etl-7")
    assert not may_use_transactional_id(caller, Operation.WRITE, "web-1")
    assert may_use_transactional_id(anonymous_context(), Operation.WRITE, "anything")
    assert not follows_the_topic_rule(anonymous_context())
