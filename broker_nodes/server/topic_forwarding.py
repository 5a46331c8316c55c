"""Topic administration from a tenant's client, forwarded to the controller.

In a cluster with a controller, topics belong to the control plane's catalog: a client's
CreateTopics, DeleteTopics, CreatePartitions or AlterConfigs is authorized here with the
tenant's ACLs (Kafka's rules: CREATE on the cluster or the topic, DELETE, ALTER,
ALTER_CONFIGS on the topic) and the authorized part is forwarded to the controller, which
applies it to the catalog exactly as the REST API would and pushes the new cluster map. The
answer keeps the request's order; unauthorized entries get TOPIC_AUTHORIZATION_FAILED and
are never forwarded. When no controller answers, every forwarded entry gets NOT_CONTROLLER
(retriable: the client tries again).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import grpc

from broker_nodes.controller_client import ControllerClient, ControllerUnavailableError
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import CLUSTER_RESOURCE_NAME, Operation, ResourceType
from broker_nodes.security.errors import TopicAuthorizationError
from broker_nodes.server.errors import error_code_and_message
from grpc_protos.weir.v1 import broker_pb2, controller_pb2
from weir.errors import ErrorCode

Entry = TypeVar("Entry")
Result = TypeVar("Result")

FORWARD_TIMEOUT_SECONDS = 30.0  # the controller writes the catalog and pushes the map before it answers


def forwarded_caller(call: CallContext) -> controller_pb2.ForwardedCaller:
    """The caller as the controller is told it (the broker authenticated it and checked its ACLs):
    a cluster key's owner, or the tenant's SCRAM user the client logged in as."""
    return controller_pb2.ForwardedCaller(
        tenant_id=call.tenant_id, principal=call.principal, client_host=call.client_host, door=call.door, scram_user=call.scram_user
    )


def _forward(
    controller: ControllerClient,
    entries: Sequence[Entry],
    *,
    name: Callable[[Entry], str],
    allowed: Callable[[str], bool],
    action: str,
    result: Callable[[Entry, int, str], Result],
    method: str,
    forwarded_request: Callable[[list[Entry]], object],
    answers: Callable[[Any], Sequence[Result]],  # the controller's answer: the Forwarded<method>Response of controller.proto
) -> list[Result]:
    """The answer per entry, in order: unauthorized entries refused here (never forwarded), the
    rest forwarded to the controller as one ``method`` call (NOT_CONTROLLER for each when no
    controller answers). ``result(entry, code, message)`` builds one entry's error answer."""
    forwarded: list[Entry] = []
    refusals: dict[int, Result] = {}
    for position, entry in enumerate(entries):
        if allowed(name(entry)):
            forwarded.append(entry)
        else:
            code, message = error_code_and_message(TopicAuthorizationError(name(entry), action))
            refusals[position] = result(entry, code, message)
    forwarded_answers: Sequence[Result] = []
    if forwarded:
        try:
            forwarded_answers = answers(controller.call(method, forwarded_request(forwarded), timeout=FORWARD_TIMEOUT_SECONDS))
        except (ControllerUnavailableError, grpc.RpcError) as error:
            problem = (
                error
                if isinstance(error, ControllerUnavailableError)
                else ControllerUnavailableError(
                    controller.addresses,
                    f"{error.code().name}: {error.details()}",
                )
            )
            forwarded_answers = [result(entry, ErrorCode.NOT_CONTROLLER, str(problem)) for entry in forwarded]
    remaining = iter(forwarded_answers)
    return [refusals[position] if position in refusals else next(remaining) for position in range(len(entries))]


def _topic_result(name: str, code: int, message: str) -> broker_pb2.TopicResult:
    return broker_pb2.TopicResult(name=name, error_code=code, error_message=message)


def create_topics(controller: ControllerClient, call: CallContext, request: broker_pb2.CreateTopicsRequest) -> broker_pb2.CreateTopicsResponse:
    may_create_any = call.may(Operation.CREATE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME)
    results = _forward(
        controller,
        list(request.topics),
        name=lambda topic: topic.name,
        allowed=lambda name: may_create_any or call.may(Operation.CREATE, ResourceType.TOPIC, name),
        action="create",
        result=lambda topic, code, message: _topic_result(topic.name, code, message),
        method="CreateTopics",
        forwarded_request=lambda topics: controller_pb2.ForwardedCreateTopicsRequest(
            caller=forwarded_caller(call),
            request=broker_pb2.CreateTopicsRequest(topics=topics, validate_only=request.validate_only, timeout_ms=request.timeout_ms),
        ),
        answers=lambda response: list(response.topics),
    )
    return broker_pb2.CreateTopicsResponse(topics=results)


def delete_topics(controller: ControllerClient, call: CallContext, names: Sequence[str], timeout_ms: int) -> broker_pb2.DeleteTopicsResponse:
    results = _forward(
        controller,
        list(names),
        name=lambda topic: topic,
        allowed=lambda name: call.may(Operation.DELETE, ResourceType.TOPIC, name),
        action="delete",
        result=_topic_result,
        method="DeleteTopics",
        forwarded_request=lambda topics: controller_pb2.ForwardedDeleteTopicsRequest(
            caller=forwarded_caller(call), request=broker_pb2.DeleteTopicsRequest(topics=topics, timeout_ms=timeout_ms)
        ),
        answers=lambda response: list(response.topics),
    )
    return broker_pb2.DeleteTopicsResponse(topics=results)


def create_partitions(controller: ControllerClient, call: CallContext, request: broker_pb2.CreatePartitionsRequest) -> broker_pb2.CreatePartitionsResponse:
    results = _forward(
        controller,
        list(request.topics),
        name=lambda entry: entry.name,
        allowed=lambda name: call.may(Operation.ALTER, ResourceType.TOPIC, name),
        action="add partitions to",
        result=lambda entry, code, message: _topic_result(entry.name, code, message),
        method="CreatePartitions",
        forwarded_request=lambda topics: controller_pb2.ForwardedCreatePartitionsRequest(
            caller=forwarded_caller(call),
            request=broker_pb2.CreatePartitionsRequest(topics=topics, validate_only=request.validate_only, timeout_ms=request.timeout_ms),
        ),
        answers=lambda response: list(response.topics),
    )
    return broker_pb2.CreatePartitionsResponse(topics=results)


def alter_configs(controller: ControllerClient, call: CallContext, request: broker_pb2.AlterConfigsRequest) -> broker_pb2.AlterConfigsResponse:
    results = _forward(
        controller,
        list(request.resources),
        name=lambda resource: resource.name,
        # Broker resources are not the tenant's: the controller refuses them with a clear error.
        allowed=lambda name: call.may(Operation.ALTER_CONFIGS, ResourceType.TOPIC, name),
        action="alter the configs of",
        result=lambda resource, code, message: broker_pb2.ConfigResourceResult(type=resource.type, name=resource.name, error_code=code, error_message=message),
        method="AlterConfigs",
        forwarded_request=lambda resources: controller_pb2.ForwardedAlterConfigsRequest(
            caller=forwarded_caller(call), request=broker_pb2.AlterConfigsRequest(resources=resources, validate_only=request.validate_only)
        ),
        answers=lambda response: list(response.resources),
    )
    return broker_pb2.AlterConfigsResponse(resources=results)
