"""FindCoordinator for both front doors: which broker coordinates each of the caller's groups.

Kafka asks for DESCRIBE on the group. The group's id is qualified with the caller's tenant
before it is hashed, so a tenant's group is coordinated where its commits live; the answer
names the group as the caller sent it. A group that cannot be looked up answers Kafka's
"no node" (id -1, no host, port -1) with the error's code.

Each transport advertises its own port for the node found (the gRPC port or the Kafka
listener's), so the outcome carries the broker endpoint, not an address.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from broker_nodes.cluster_state import BrokerEndpoint
from broker_nodes.coordinator.lookup import find_coordinator
from broker_nodes.requests.outcomes import NO_ERROR
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import Operation, ResourceType
from broker_nodes.security.errors import GroupAuthorizationError
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import InvalidRequestError, error_code_and_message


@dataclass(frozen=True, slots=True)
class CoordinatorOutcome:
    """One group's coordinator (``node`` None with an error code when there is none to give)."""

    group_id: str  # as the caller sent it
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
