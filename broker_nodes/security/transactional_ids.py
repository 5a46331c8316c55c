"""Who may use a transactional id: Kafka's TRANSACTIONAL_ID ACL resource, and Weir's migration rule.

As Kafka's authorizer: WRITE on the TRANSACTIONAL_ID resource to use the id (InitProducerId,
AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit), DESCRIBE to find its
coordinator, describe or list it (an ALLOW of WRITE implies DESCRIBE). Names are the plain
names of the caller's tenant, as for topics, so one tenant's bindings never reach another's
ids.

Migration: before Weir had this resource, a caller that may WRITE some topic could use every
transactional id of its tenant. A principal that no TRANSACTIONAL_ID binding of its tenant
names (its own principal or ``User:*``, ALLOW or DENY) keeps that rule, so existing tenants'
transactional producers go on working unchanged; the first such binding switches the
principal to Kafka's rule. A tenant that wants Kafka's rule for every principal creates, for
example, ``User:* DENY ALL`` on a transactional id nobody uses.
"""

from __future__ import annotations

from broker_nodes.security.access import CallContext, CallerKind
from broker_nodes.security.authorizer import WILDCARD_PRINCIPAL, Operation, ResourceType


def may_use_transactional_id(call: CallContext, operation: Operation, transactional_id: str) -> bool:
    """Whether the caller may do ``operation`` (WRITE or DESCRIBE) on its tenant's ``transactional_id`` (plain name)."""
    if call.may(operation, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return True
    return follows_the_topic_rule(call) and call.may_on_any(Operation.WRITE, ResourceType.TOPIC)


def follows_the_topic_rule(call: CallContext) -> bool:
    """Whether the migration rule applies: a client no TRANSACTIONAL_ID binding names."""
    if call.kind != CallerKind.CLIENT:
        return False  # trusted callers may anyway
    return not any(acl.resource_type == ResourceType.TRANSACTIONAL_ID and acl.principal in (call.principal, WILDCARD_PRINCIPAL) for acl in call.acls)
