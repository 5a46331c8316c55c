"""FindCoordinator for both front doors: which broker coordinates each of the caller's groups or transactional ids.

Kafka asks for DESCRIBE on the group. The group's id is qualified with the caller's tenant
before it is hashed, so a tenant's group is coordinated where its commits live; the answer
names the group as the caller sent it. Transactional ids are qualified and answered the same
way (key type TRANSACTION). Kafka asks for DESCRIBE on the TRANSACTIONAL_ID resource, which
Weir's ACLs do not have yet: the caller must be allowed to write some topic (what every
transactional producer needs), else TRANSACTIONAL_ID_AUTHORIZATION_FAILED. A group that cannot be looked up answers Kafka's
"no node" (id -1, no host, port -1) with the error's code.

Each transport advertises its own port for the node found (the gRPC port or the Kafka
listener's), so the outcome carries the broker endpoint, not an address.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from broker_nodes.cluster_state import BrokerEndpoint
from broker_nodes.coordinator.lookup import find_coordinator, find_transaction_coordinator
from broker_nodes.coordinator.transactions.errors import InvalidTransactionalIdError, TransactionalIdAuthorizationError
from broker_nodes.requests.outcomes import NO_ERROR
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import Operation, ResourceType
from broker_nodes.security.errors import GroupAuthorizationError
from broker_nodes.security.transactional_ids import may_use_transactional_id
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import InvalidRequestError, error_code_and_message


@dataclass(frozen=True, slots=True)
class CoordinatorOutcome:
    """One group's coordinator (``node`` None with an error code when there is none to give)."""

    group_id: str  # the key as the caller sent it: a group id, or a transactional id
    node: BrokerEndpoint | None
    error_code: int = NO_ERROR
    error_message: str = ""


def find_group_coordinators(broker: Broker, call: CallContext, group_ids: Sequence[str], this_broker: BrokerEndpoint) -> list[CoordinatorOutcome]:
    """Each group's coordinator, in request order; ``this_broker`` answers while standalone (see ``coordinator.lookup``)."""
    snapshot = broker.cluster_state.snapshot
    outcomes = []
    for group_id in group_ids:
        try:
            if not group_id:
                raise InvalidRequestError("a group id must not be empty")
            if not call.may(Operation.DESCRIBE, ResourceType.GROUP, group_id):
                raise GroupAuthorizationError(group_id, "describe")
            outcomes.append(CoordinatorOutcome(group_id, find_coordinator(snapshot, call.qualify(group_id), this_broker)))
        except Exception as error:  # this group's answer
            code, message = error_code_and_message(error)
            outcomes.append(CoordinatorOutcome(group_id, None, code, message))
    return outcomes


def find_transaction_coordinators(broker: Broker, call: CallContext, transactional_ids: Sequence[str], this_broker: BrokerEndpoint) -> list[CoordinatorOutcome]:
    """Each transactional id's coordinator, in request order (the leader of its ``__transaction_state`` partition)."""
    if any(transactional_ids):
        broker.ensure_transaction_state()  # standalone: created on first use, as Kafka does
    snapshot = broker.cluster_state.snapshot
    outcomes = []
    for transactional_id in transactional_ids:
        try:
            if not transactional_id:
                raise InvalidTransactionalIdError()
            if not may_use_transactional_id(call, Operation.DESCRIBE, transactional_id):
                raise TransactionalIdAuthorizationError(transactional_id, "describe")
            outcomes.append(CoordinatorOutcome(transactional_id, find_transaction_coordinator(snapshot, call.qualify(transactional_id), this_broker)))
        except Exception as error:  # this id's answer
            code, message = error_code_and_message(error)
            outcomes.append(CoordinatorOutcome(transactional_id, None, code, message))
    return outcomes
