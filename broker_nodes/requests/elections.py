"""ElectLeaders (Kafka's KIP-460): a tenant's preferred or unclean leader election, forwarded to the controller.

Leadership is the controller's (it elects, persists the leader epoch and pushes the cluster
map), so like topic and ACL administration a client's request is authorized here and forwarded
(``server.topic_forwarding`` for the caller and the timeout). Kafka's rule: ALTER on the CLUSTER
resource, else CLUSTER_AUTHORIZATION_FAILED for the whole request and every partition. The
controller elects among the tenant's own partitions only (another tenant's topic answers
UNKNOWN_TOPIC_OR_PARTITION) and answers once the new map is pushed. A standalone broker (no
controller) has no elections to hold: INVALID_REQUEST; when no controller answers, NOT_CONTROLLER
(retriable). Both front doors call :func:`elect_leaders` with ``broker.proto``'s messages.
"""

from __future__ import annotations

import grpc

from broker_nodes.controller_client import ControllerClient, ControllerUnavailableError
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import CLUSTER_RESOURCE_NAME, Operation, ResourceType
from broker_nodes.server.broker import Broker
from broker_nodes.server.topic_forwarding import FORWARD_TIMEOUT_SECONDS, forwarded_caller
from grpc_protos.weir.v1 import broker_pb2, controller_pb2
from weir.errors import ErrorCode

ELECTION_TYPES = {0: "PREFERRED", 1: "UNCLEAN"}  # Kafka's ElectionType numbers
NO_CONTROLLER = "this broker runs without a controller (standalone): its partitions have one replica each and no leader to elect"


def refused(request: broker_pb2.ElectLeadersRequest, code: int, message: str) -> broker_pb2.ElectLeadersResponse:
    """The whole request refused as Kafka answers it: the error at the top and on every partition asked for."""
    results = [
        broker_pb2.ElectionResult(topic=topic.topic, partition=partition, error_code=code, error_message=message)
        for topic in request.partitions
        for partition in topic.partitions
    ]
    return broker_pb2.ElectLeadersResponse(error_code=code, error_message=message, results=results)


def _problem(request: broker_pb2.ElectLeadersRequest, broker: Broker, call: CallContext) -> tuple[int, str] | None:
    """Why the whole request is refused before it is forwarded, or None."""
    if not call.may(Operation.ALTER, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, f"electing leaders needs ALTER on the cluster resource {CLUSTER_RESOURCE_NAME!r}"
    if request.election_type not in ELECTION_TYPES:
        return ErrorCode.INVALID_REQUEST, f"election type must be 0 (PREFERRED) or 1 (UNCLEAN), not {request.election_type}"
    if broker.controller is None:
        return ErrorCode.INVALID_REQUEST, NO_CONTROLLER
    for topic in request.partitions:
        if not topic.topic or any(partition < 0 for partition in topic.partitions):
            return ErrorCode.INVALID_REQUEST, f"every partition needs a topic name and an index of 0 or more: {topic.topic!r} {list(topic.partitions)}"
    return None


def _forward(controller: ControllerClient, call: CallContext, request: broker_pb2.ElectLeadersRequest) -> broker_pb2.ElectLeadersResponse:
    forwarded = controller_pb2.ForwardedElectLeadersRequest(caller=forwarded_caller(call), request=request)
    try:
        response = controller.call("ElectLeaders", forwarded, timeout=FORWARD_TIMEOUT_SECONDS)
    except ControllerUnavailableError as error:
        return refused(request, ErrorCode.NOT_CONTROLLER, str(error))
    except grpc.RpcError as error:
        problem = ControllerUnavailableError(controller.addresses, f"{error.code().name}: {error.details()}")
        return refused(request, ErrorCode.NOT_CONTROLLER, str(problem))
    assert isinstance(response, broker_pb2.ElectLeadersResponse)
    return response


def elect_leaders(broker: Broker, call: CallContext, request: broker_pb2.ElectLeadersRequest) -> broker_pb2.ElectLeadersResponse:
    """The controller's answer: one result per partition asked for (with ``all_partitions``,
    each of the caller's partitions whose election was needed), or the whole request's error."""
    problem = _problem(request, broker, call)
    if problem is not None:
        return refused(request, *problem)
    assert broker.controller is not None
    return _forward(broker.controller, call, request)
