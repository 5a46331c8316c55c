"""The ACL explainer: can principal P do operation O on resource R, and which binding decides?

The decision is the brokers' own (``log_formats.acl_rules.explain``, the function behind every
broker's ``is_authorized``) applied to the tenant's bindings as the catalog stores them, so the
dashboard and the REST API answer exactly as a broker would: a matching DENY wins, no matching
ALLOW means denied, PREFIXED matches by prefix, LITERAL ``*`` matches every name, READ, WRITE,
DELETE and ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS.

The host: without one, the question is "from any address", so only bindings whose host is
``*`` apply (a binding for one address decides only for that address).

A member with the admin or owner role is its tenant's cluster administrator on the data plane: the
brokers consult no ACL for its cluster keys (``webapp.accounts.roles.acts_as_cluster_admin``), and
the explainer says so rather than what the bindings alone would decide.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from log_formats import acl_rules
from webapp.accounts.facade import Actor, InvalidInput, Membership, Tenant, acts_as_cluster_admin
from webapp.catalog.models import AclBinding, Operation, ResourceType

PRINCIPAL_PREFIX = "User:"
ANY_HOST = ""  # matches no binding's specific host, only '*'


@dataclass(frozen=True)
class AccessQuestion:
    principal: str
    operation: str
    resource_type: str
    resource_name: str
    host: str = ANY_HOST


@dataclass(frozen=True)
class Explanation:
    """The answer: ``binding`` is the deciding binding (None: no binding matched, denied by default)."""

    question: AccessQuestion
    allowed: bool
    binding: AclBinding | None
    implied: bool
    reason: str


def check_access_question(principal: str, operation: str, resource_type: str, resource_name: str, host: str = ANY_HOST) -> AccessQuestion:
    """Validate the question; InvalidInput names each bad field."""
    errors: dict[str, list[str]] = {}
    if not principal.startswith(PRINCIPAL_PREFIX) or len(principal) == len(PRINCIPAL_PREFIX):
        errors["principal"] = ["A principal is 'User:<service account or member id>'."]
    if operation not in Operation.values or operation == Operation.ALL:
        errors["operation"] = [f"One of {', '.join(value for value in Operation.values if value != Operation.ALL)}."]
    if resource_type not in ResourceType.values:
        errors["resource_type"] = [f"One of {', '.join(ResourceType.values)}."]
    if not resource_name:
        errors["resource_name"] = ["Name the topic, group or cluster ('kafka-cluster')."]
    if host:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            errors["host"] = ["Leave empty for any address, or give one IP address."]
    if errors:
        raise InvalidInput(errors)
    return AccessQuestion(principal, operation, resource_type, resource_name, host)


def _entry(binding: AclBinding) -> acl_rules.AclEntry:
    return acl_rules.AclEntry(
        principal=binding.principal,
        resource_type=acl_rules.ResourceType[binding.resource_type],
        resource_name=binding.resource_name,
        pattern_type=acl_rules.PatternType[binding.pattern_type],
        operation=acl_rules.Operation[binding.operation],
        permission=acl_rules.Permission[binding.permission],
        host=binding.host,
    )


def explain_with(bindings: Iterable[AclBinding], question: AccessQuestion) -> Explanation:
    """The decision over ``bindings`` (one tenant's), in the brokers' rules."""
    by_entry = {_entry(binding): binding for binding in bindings}
    decision = acl_rules.explain(
        by_entry,
        question.principal,
        question.host,
        acl_rules.Operation[question.operation],
        acl_rules.ResourceType[question.resource_type],
        question.resource_name,
    )
    binding = by_entry[decision.deciding] if decision.deciding is not None else None
    if not decision.allowed and binding is None and _follows_the_topic_rule(by_entry, question):
        return Explanation(
            question,
            True,
            None,
            False,
            f"Allowed by Weir's migration rule: no TRANSACTIONAL_ID binding names {question.principal}, and it may WRITE some topic.",
        )
    return Explanation(question, decision.allowed, binding, decision.implied, _reason(question, decision, binding))


def _follows_the_topic_rule(entries: Iterable[acl_rules.AclEntry], question: AccessQuestion) -> bool:
    """The brokers' migration rule for transactional ids (``broker_nodes.security.transactional_ids``):
    a principal that no TRANSACTIONAL_ID binding names may use every id of its tenant while it
    may WRITE some topic."""
    if question.resource_type != ResourceType.TRANSACTIONAL_ID:
        return False
    entries = list(entries)
    named = any(
        entry.resource_type == acl_rules.ResourceType.TRANSACTIONAL_ID and entry.principal in (question.principal, acl_rules.WILDCARD_PRINCIPAL)
        for entry in entries
    )
    return not named and acl_rules.is_authorized_for_any(entries, question.principal, question.host, acl_rules.Operation.WRITE, acl_rules.ResourceType.TOPIC)


def cluster_admin_explanation(tenant: Tenant, question: AccessQuestion) -> Explanation | None:
    """The answer for a principal of ``tenant`` whose cluster keys act as its cluster administrator
    (a member with the admin or owner role), which no binding changes; None for every other
    principal, whose answer the bindings give (one query)."""
    member_id = question.principal.removeprefix(PRINCIPAL_PREFIX)
    role = Membership.objects.filter(tenant=tenant, public_id=member_id).values_list("role", flat=True).first()
    if role is None or not acts_as_cluster_admin(role):
        return None
    reason = (
        f"Allowed: {question.principal} is a member with the {role} role, whose cluster keys act as the tenant's cluster administrator; no ACL is consulted."
    )
    return Explanation(question, True, None, False, reason)


def explain_access(actor: Actor, question: AccessQuestion) -> Explanation:
    """The decision over the actor's tenant's bindings (every member may ask), or that of the
    principal's role when it is a member whose keys act as the cluster administrator."""
    return cluster_admin_explanation(actor.tenant, question) or explain_with(AclBinding.objects.filter(tenant=actor.tenant).order_by("pk"), question)


def describe_binding(binding: AclBinding) -> str:
    return f"{binding.permission} {binding.operation} on {binding.resource_type} {binding.pattern_type} '{binding.resource_name}' for {binding.principal} from host {binding.host}"


def _reason(question: AccessQuestion, decision: acl_rules.Decision, binding: AclBinding | None) -> str:
    subject = f"{question.principal} {question.operation} on {question.resource_type} '{question.resource_name}'"
    if binding is None:
        return f"Denied: no binding allows {subject} (without a matching ALLOW, access is denied)."
    if not decision.allowed:
        return f"Denied by {describe_binding(binding)}: a DENY wins over every ALLOW."
    if decision.implied:
        return f"Allowed by {describe_binding(binding)}: an ALLOW of {binding.operation} implies {question.operation}."
    return f"Allowed by {describe_binding(binding)}."
