"""Leader elections a tenant's client asks a broker for (Kafka's ElectLeaders, KIP-460),
forwarded to the controller.

The broker authenticated the client's cluster key and checked Kafka's rule before forwarding:
ALTER on the tenant's CLUSTER resource. Here the caller must still be a live key of its tenant
(``actor_for_forwarded_caller``), and the election (``actions.elect_requested_leaders``) sees
only that tenant's topics, by their plain names: another tenant's topic answers
UNKNOWN_TOPIC_OR_PARTITION exactly like a topic that does not exist. The caller of this module
(``ControllerService.elect_leaders``) holds the controller's lock, passes the live brokers and
its epoch, and pushes the cluster map when a leader moved.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from grpc_protos.weir.v1 import broker_pb2, controller_pb2
from webapp.controller.actions import ElectionOutcome, elect_requested_leaders
from webapp.controller.topic_requests import Answered, TopicRequestError, actor_for_forwarded_caller
from weir.errors import ErrorCode

logger = logging.getLogger(__name__)

PREFERRED, UNCLEAN = 0, 1  # Kafka's ElectionType numbers


def _refused(request: broker_pb2.ElectLeadersRequest, code: int, message: str) -> broker_pb2.ElectLeadersResponse:
    """The whole request refused: the error at the top and on every partition asked for, as Kafka answers."""
    results = [
        broker_pb2.ElectionResult(topic=topic.topic, partition=partition, error_code=code, error_message=message)
        for topic in request.partitions
        for partition in topic.partitions
    ]
    return broker_pb2.ElectLeadersResponse(error_code=code, error_message=message, results=results)


def _result(outcome: ElectionOutcome) -> broker_pb2.ElectionResult:
    return broker_pb2.ElectionResult(topic=outcome.topic, partition=outcome.partition, error_code=outcome.error_code, error_message=outcome.message)


def elect_leaders(
    caller: controller_pb2.ForwardedCaller, request: broker_pb2.ElectLeadersRequest, live: Collection[int], *, controller_epoch: int
) -> Answered[broker_pb2.ElectLeadersResponse]:
    """The answer for the broker; its flag: some leader moved (the map must be pushed).

    ``ControllerFencedError`` when ``controller_epoch`` is no longer current.
    """
    if request.election_type not in (PREFERRED, UNCLEAN):
        message = f"election_type must be 0 (PREFERRED) or 1 (UNCLEAN), not {request.election_type}"
        return Answered(_refused(request, ErrorCode.INVALID_REQUEST, message), False)
    try:
        actor = actor_for_forwarded_caller(caller)
    except TopicRequestError as error:
        return Answered(_refused(request, error.code, error.message), False)
    requested = None if request.all_partitions else [(topic.topic, partition) for topic in request.partitions for partition in topic.partitions]
    outcomes = elect_requested_leaders(actor.tenant.public_id, requested, live, unclean=request.election_type == UNCLEAN, controller_epoch=controller_epoch)
    moved = sum(outcome.move is not None for outcome in outcomes)
    logger.info(
        "ElectLeaders (%s) from %s of tenant %s: %d leader(s) moved, %d partition(s) answered",
        "UNCLEAN" if request.election_type == UNCLEAN else "PREFERRED",
        caller.principal,
        caller.tenant_id,
        moved,
        len(outcomes),
    )
    return Answered(broker_pb2.ElectLeadersResponse(results=[_result(outcome) for outcome in outcomes]), moved > 0)
