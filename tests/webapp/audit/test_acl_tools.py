"""ACL templates and the explainer, through the REST API, and the explainer against the brokers' authorizer."""

from __future__ import annotations

import pytest

from broker_nodes.security import authorizer
from webapp.accounts.facade import Role
from webapp.catalog.acl_explainer import AccessQuestion, explain_with
from webapp.catalog.models import AclBinding

pytestmark = pytest.mark.django_db


def _bindings(fixture) -> set[tuple[str, str, str, str, str]]:  # type: ignore[no-untyped-def]
    return set(AclBinding.objects.filter(tenant=fixture.tenant).values_list("resource_type", "resource_name", "pattern_type", "operation", "permission"))


def test_consumer_template_creates_topic_and_group_bindings_in_one_job_and_is_idempotent(acme, service_account) -> None:  # type: ignore[no-untyped-def]
    body = {"template": "consumer", "principal": service_account.principal, "topic": "orders", "group": "billing"}
    first = acme.client(Role.ADMIN).post("/api/v1/acls:apply-template", body, format="json")
    assert first.status_code == 201, first.content
    assert _bindings(acme) == {
        ("TOPIC", "orders", "LITERAL", "READ", "ALLOW"),
        ("TOPIC", "orders", "LITERAL", "DESCRIBE", "ALLOW"),
        ("GROUP", "billing", "LITERAL", "READ", "ALLOW"),
    }
    assert len(first.json()["created"]) == 3 and first.json()["job"] is not None
    again = acme.client(Role.ADMIN).post("/api/v1/acls:apply-template", body, format="json")
    assert again.status_code == 200 and again.json()["created"] == [] and len(again.json()["existing"]) == 3


def test_producer_template_by_prefix_and_refusals_name_the_field(acme, service_account) -> None:  # type: ignore[no-untyped-def]
    client = acme.client(Role.ADMIN)
    created = client.post(
        "/api/v1/acls:apply-template",
        {"template": "producer", "principal": service_account.principal, "topic": "orders.", "pattern_type": "PREFIXED"},
        format="json",
    )
    assert created.status_code == 201
    assert _bindings(acme) == {("TOPIC", "orders.", "PREFIXED", "WRITE", "ALLOW"), ("TOPIC", "orders.", "PREFIXED", "DESCRIBE", "ALLOW")}
    no_group = client.post("/api/v1/acls:apply-template", {"template": "consumer", "principal": service_account.principal, "topic": "orders"}, format="json")
    assert no_group.status_code == 400 and "group" in no_group.json()["errors"]
    bad_topic = client.post("/api/v1/acls:apply-template", {"template": "producer", "principal": service_account.principal, "topic": "a~b"}, format="json")
    assert bad_topic.status_code == 400 and "topic" in bad_topic.json()["errors"]
    stranger = client.post("/api/v1/acls:apply-template", {"template": "producer", "principal": "User:sa-nobody", "topic": "x"}, format="json")
    assert stranger.status_code == 400 and "principal" in stranger.json()["errors"]
    assert (
        acme.client(Role.DEVELOPER)
        .post("/api/v1/acls:apply-template", {"template": "producer", "principal": service_account.principal, "topic": "x"}, format="json")
        .status_code
        == 403
    )


def test_transactional_template_binds_its_id_and_the_group_it_commits(acme, service_account) -> None:  # type: ignore[no-untyped-def]
    body = {"template": "transactional-producer", "principal": service_account.principal, "topic": "out", "group": "etl"}
    missing_id = acme.client(Role.ADMIN).post("/api/v1/acls:apply-template", body, format="json")
    assert missing_id.status_code == 400 and "transactional_id" in missing_id.json()["errors"]
    assert acme.client(Role.ADMIN).post("/api/v1/acls:apply-template", body | {"transactional_id": "etl-1"}, format="json").status_code == 201
    assert _bindings(acme) == {
        ("TOPIC", "out", "LITERAL", "WRITE", "ALLOW"),
        ("TOPIC", "out", "LITERAL", "DESCRIBE", "ALLOW"),
        ("TRANSACTIONAL_ID", "etl-1", "LITERAL", "WRITE", "ALLOW"),
        ("TRANSACTIONAL_ID", "etl-1", "LITERAL", "DESCRIBE", "ALLOW"),
        ("GROUP", "etl", "LITERAL", "READ", "ALLOW"),
    }


def test_explainer_names_the_deciding_binding_deny_wins_and_implication(acme, service_account) -> None:  # type: ignore[no-untyped-def]
    client = acme.client(Role.ADMIN)
    principal = service_account.principal
    for operation, permission, name, pattern in (("READ", "ALLOW", "orders", "PREFIXED"), ("READ", "DENY", "orders.secret", "LITERAL")):
        body = {
            "resource_type": "TOPIC",
            "resource_name": name,
            "pattern_type": pattern,
            "principal": principal,
            "operation": operation,
            "permission": permission,
        }
        assert client.post("/api/v1/acls", body, format="json").status_code == 201
    viewer = acme.client(Role.VIEWER)

    def ask(operation: str, name: str) -> dict:  # type: ignore[type-arg]
        response = viewer.get("/api/v1/acls:explain", {"principal": principal, "operation": operation, "resource_type": "TOPIC", "resource_name": name})
        assert response.status_code == 200, response.content
        return response.json()  # type: ignore[no-any-return]

    allowed = ask("READ", "orders.eu")
    assert allowed["allowed"] and allowed["deciding_acl"]["pattern_type"] == "PREFIXED" and "Allowed by ALLOW READ" in allowed["reason"]
    denied = ask("READ", "orders.secret")
    assert not denied["allowed"] and denied["deciding_acl"]["permission"] == "DENY" and "DENY wins" in denied["reason"]
    implied = ask("DESCRIBE", "orders.eu")
    assert implied["allowed"] and implied["implied"]
    nothing = ask("WRITE", "orders.eu")
    assert not nothing["allowed"] and nothing["deciding_acl"] is None and "no binding allows" in nothing["reason"]
    bad = viewer.get("/api/v1/acls:explain", {"principal": "sa-1", "operation": "READ", "resource_type": "TOPIC", "resource_name": "x", "host": "not-an-ip"})
    assert bad.status_code == 400 and {"principal", "host"} <= set(bad.json()["errors"])


# (resource_type, name, pattern, operation, permission, host) per binding; the questions below are asked of all of them.
TABLE_BINDINGS = [
    ("TOPIC", "orders", "PREFIXED", "WRITE", "ALLOW", "*"),
    ("TOPIC", "orders.audit", "LITERAL", "ALL", "DENY", "*"),
    ("TOPIC", "*", "LITERAL", "DESCRIBE", "ALLOW", "*"),
    ("TOPIC", "payments", "LITERAL", "ALTER_CONFIGS", "ALLOW", "10.0.0.1"),
    ("GROUP", "billing", "LITERAL", "READ", "ALLOW", "*"),
    ("GROUP", "bill", "PREFIXED", "DELETE", "DENY", "*"),
    ("CLUSTER", "kafka-cluster", "LITERAL", "IDEMPOTENT_WRITE", "ALLOW", "*"),
]
QUESTIONS = [
    ("WRITE", "TOPIC", "orders.eu", ""),
    ("DESCRIBE", "TOPIC", "orders.eu", ""),
    ("WRITE", "TOPIC", "orders.audit", ""),
    ("DESCRIBE", "TOPIC", "orders.audit", ""),
    ("READ", "TOPIC", "orders.eu", ""),
    ("DESCRIBE", "TOPIC", "anything", ""),
    ("DESCRIBE_CONFIGS", "TOPIC", "payments", "10.0.0.1"),
    ("DESCRIBE_CONFIGS", "TOPIC", "payments", ""),
    ("ALTER_CONFIGS", "TOPIC", "payments", "10.0.0.2"),
    ("READ", "GROUP", "billing", ""),
    ("DESCRIBE", "GROUP", "billing", ""),
    ("DELETE", "GROUP", "billing", ""),
    ("READ", "GROUP", "other", ""),
    ("IDEMPOTENT_WRITE", "CLUSTER", "kafka-cluster", ""),
    ("ALTER", "CLUSTER", "kafka-cluster", ""),
]
# Transactional ids: Kafka's TRANSACTIONAL_ID resource, and the brokers' migration rule for a
# principal that no such binding names (it may use every id while it may WRITE some topic).
TRANSACTIONAL_TABLES = {
    "named": [("TRANSACTIONAL_ID", "etl-", "PREFIXED", "WRITE", "ALLOW", "*"), ("TOPIC", "out", "LITERAL", "WRITE", "ALLOW", "*")],
    "denied": [("TRANSACTIONAL_ID", "etl-9", "LITERAL", "ALL", "DENY", "*"), ("TOPIC", "out", "LITERAL", "WRITE", "ALLOW", "*")],
    "migration": [("TOPIC", "out", "LITERAL", "WRITE", "ALLOW", "*")],
    "nothing": [("TOPIC", "out", "LITERAL", "READ", "ALLOW", "*")],
}


def _rows(acme, principal: str, table: list[tuple[str, str, str, str, str, str]], alternate: bool = True) -> list[AclBinding]:  # type: ignore[no-untyped-def]
    return [
        AclBinding.objects.create(
            tenant=acme.tenant,
            resource_type=rt,
            resource_name=rn,
            pattern_type=pt,
            operation=op,
            permission=perm,
            host=h,
            principal=principal if index % 2 or not alternate else "User:*",
        )
        for index, (rt, rn, pt, op, perm, h) in enumerate(table)
    ]


def _entries(rows: list[AclBinding]) -> list[authorizer.AclEntry]:
    return [
        authorizer.AclEntry(
            row.principal,
            authorizer.ResourceType[row.resource_type],
            row.resource_name,
            authorizer.PatternType[row.pattern_type],
            authorizer.Operation[row.operation],
            authorizer.Permission[row.permission],
            row.host,
        )
        for row in rows
    ]


@pytest.mark.parametrize(("operation", "resource_type", "name", "host"), QUESTIONS)
def test_explainer_decides_as_the_brokers_authorizer(acme, service_account, operation, resource_type, name, host) -> None:  # type: ignore[no-untyped-def]
    principal = service_account.principal
    rows = _rows(acme, principal, TABLE_BINDINGS)
    entries = _entries(rows)
    broker_says = authorizer.is_authorized(entries, principal, host, authorizer.Operation[operation], authorizer.ResourceType[resource_type], name)
    explanation = explain_with(rows, AccessQuestion(principal, operation, resource_type, name, host))
    assert explanation.allowed == broker_says
    assert (explanation.binding is None) == (not broker_says and "no binding" in explanation.reason)


@pytest.mark.parametrize("table", sorted(TRANSACTIONAL_TABLES))
@pytest.mark.parametrize(("operation", "transactional_id"), [("WRITE", "etl-1"), ("DESCRIBE", "etl-1"), ("WRITE", "etl-9"), ("WRITE", "other")])
def test_explainer_decides_transactional_ids_as_the_brokers(acme, service_account, table, operation, transactional_id) -> None:  # type: ignore[no-untyped-def]
    from broker_nodes.security.access import CallContext, CallerKind
    from broker_nodes.security.transactional_ids import may_use_transactional_id

    principal = service_account.principal
    rows = _rows(acme, principal, TRANSACTIONAL_TABLES[table], alternate=False)
    call = CallContext(acme.tenant.public_id, principal, "10.0.0.1", CallerKind.CLIENT, tuple(_entries(rows)))
    broker_says = may_use_transactional_id(call, authorizer.Operation[operation], transactional_id)
    explanation = explain_with(rows, AccessQuestion(principal, operation, "TRANSACTIONAL_ID", transactional_id, "10.0.0.1"))
    assert explanation.allowed == broker_says, explanation.reason
