"""Kafka's ACL semantics, one row per rule."""

from __future__ import annotations

import pytest

from broker_nodes.security.authorizer import AclEntry, Operation, PatternType, Permission, ResourceType, is_authorized, is_authorized_for_any

ALICE = "User:sa-alice"
BOB = "User:sa-bob"
HOST = "10.0.0.5"
T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
L, P = PatternType.LITERAL, PatternType.PREFIXED
A, D = Permission.ALLOW, Permission.DENY
O = Operation  # noqa: E741 - a one-letter table column, like L, P, A and D


def acl(operation, name="orders", *, permission=A, pattern=L, principal=ALICE, kind=T, host="*") -> AclEntry:
    return AclEntry(principal, kind, name, pattern, operation, permission, host)


CASES = [
    # (description, acls, operation, resource type, name, principal, host, expected)
    ("no acl at all is denied", [], O.READ, T, "orders", ALICE, HOST, False),
    ("literal allow of the exact name", [acl(O.READ)], O.READ, T, "orders", ALICE, HOST, True),
    ("literal allow does not match another name", [acl(O.READ)], O.READ, T, "orders2", ALICE, HOST, False),
    ("literal * matches every name", [acl(O.READ, "*")], O.READ, T, "anything", ALICE, HOST, True),
    ("prefixed matches a name with the prefix", [acl(O.WRITE, "ord", pattern=P)], O.WRITE, T, "orders", ALICE, HOST, True),
    ("prefixed does not match a name without it", [acl(O.WRITE, "ord", pattern=P)], O.WRITE, T, "payments", ALICE, HOST, False),
    ("prefixed * is a literal prefix, not a wildcard", [acl(O.WRITE, "*", pattern=P)], O.WRITE, T, "orders", ALICE, HOST, False),
    ("deny beats allow", [acl(O.READ), acl(O.READ, permission=D)], O.READ, T, "orders", ALICE, HOST, False),
    ("prefixed deny beats literal allow", [acl(O.READ), acl(O.READ, "o", permission=D, pattern=P)], O.READ, T, "orders", ALICE, HOST, False),
    ("deny of another operation does not deny", [acl(O.READ), acl(O.WRITE, permission=D)], O.READ, T, "orders", ALICE, HOST, True),
    ("deny ALL denies every operation", [acl(O.READ), acl(O.ALL, permission=D)], O.READ, T, "orders", ALICE, HOST, False),
    ("allow ALL allows every operation", [acl(O.ALL)], O.ALTER_CONFIGS, T, "orders", ALICE, HOST, True),
    ("operation must match", [acl(O.READ)], O.WRITE, T, "orders", ALICE, HOST, False),
    ("another principal's acl does not apply", [acl(O.READ, principal=BOB)], O.READ, T, "orders", ALICE, HOST, False),
    ("User:* matches every principal", [acl(O.READ, principal="User:*")], O.READ, T, "orders", ALICE, HOST, True),
    ("host must match exactly", [acl(O.READ, host="10.0.0.6")], O.READ, T, "orders", ALICE, HOST, False),
    ("exact host matches", [acl(O.READ, host=HOST)], O.READ, T, "orders", ALICE, HOST, True),
    ("resource type must match", [acl(O.READ, kind=G)], O.READ, T, "orders", ALICE, HOST, False),
    ("group acl for a group", [acl(O.READ, "billing", kind=G)], O.READ, G, "billing", ALICE, HOST, True),
    ("READ implies DESCRIBE", [acl(O.READ)], O.DESCRIBE, T, "orders", ALICE, HOST, True),
    ("WRITE implies DESCRIBE", [acl(O.WRITE)], O.DESCRIBE, T, "orders", ALICE, HOST, True),
    ("DELETE implies DESCRIBE", [acl(O.DELETE)], O.DESCRIBE, T, "orders", ALICE, HOST, True),
    ("ALTER implies DESCRIBE", [acl(O.ALTER)], O.DESCRIBE, T, "orders", ALICE, HOST, True),
    ("CREATE does not imply DESCRIBE", [acl(O.CREATE)], O.DESCRIBE, T, "orders", ALICE, HOST, False),
    ("DESCRIBE does not imply READ", [acl(O.DESCRIBE)], O.READ, T, "orders", ALICE, HOST, False),
    ("ALTER_CONFIGS implies DESCRIBE_CONFIGS", [acl(O.ALTER_CONFIGS)], O.DESCRIBE_CONFIGS, T, "orders", ALICE, HOST, True),
    ("READ does not imply DESCRIBE_CONFIGS", [acl(O.READ)], O.DESCRIBE_CONFIGS, T, "orders", ALICE, HOST, False),
    ("deny READ does not deny the DESCRIBE a WRITE implies", [acl(O.WRITE), acl(O.READ, permission=D)], O.DESCRIBE, T, "orders", ALICE, HOST, True),
    ("deny DESCRIBE beats the DESCRIBE a READ implies", [acl(O.READ), acl(O.DESCRIBE, permission=D)], O.DESCRIBE, T, "orders", ALICE, HOST, False),
    ("cluster idempotent write", [acl(O.IDEMPOTENT_WRITE, "kafka-cluster", kind=C)], O.IDEMPOTENT_WRITE, C, "kafka-cluster", ALICE, HOST, True),
]


@pytest.mark.parametrize(
    ("acls", "operation", "resource_type", "name", "principal", "host", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_acl_semantics(acls, operation, resource_type, name, principal, host, expected) -> None:
    assert is_authorized(acls, principal, host, operation, resource_type, name) is expected


def test_authorized_for_any_when_some_topic_allows_write() -> None:
    assert is_authorized_for_any([acl(O.WRITE, "orders")], ALICE, HOST, O.WRITE, T)


def test_authorized_for_any_when_only_reads_are_allowed_is_false() -> None:
    assert not is_authorized_for_any([acl(O.READ, "orders")], ALICE, HOST, O.WRITE, T)


def test_authorized_for_any_when_a_wildcard_deny_covers_every_topic_is_false() -> None:
    assert not is_authorized_for_any([acl(O.WRITE, "orders"), acl(O.WRITE, "*", permission=D)], ALICE, HOST, O.WRITE, T)
