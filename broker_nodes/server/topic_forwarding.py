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

from typing import Callable, Sequence, TypeVar

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


def _caller(call: CallContext) -> controller_pb2.ForwardedCaller:
    return controller_pb2.ForwardedCaller(tenant_id=call.tenant_id, principal=call.principal)


def _split(
    entries: Sequence[Entry], name: Callable[[Entry], str], allowed: Callable[[str], bool], action: str, refused: Callable[[Entry, int, str], Result]
) -> tuple[list[Entry], dict[int, Result]]:
    """(entries to forward, position -> refusal for the unauthorized ones)."""
    forwarded: list[Entry] = []
    refusals: dict[int, Result] = {}
    for position, entry in enumerate(entries):
        if allowed(name(entry)):
            forwarded.append(entry)
        else:
            code, message = error_code_and_message(TopicAuthorizationError(name(entry), action))
            refusals[position] = refused(entry, code, message)
    return forwarded, refusals


def _merge(count: int, refusals: dict[int, Result], answers: Sequence[Result]) -> list[Result]:
    """The answers of the forwarded entries, in order, with the refusals at their positions."""
    forwarded = iter(answers)
    return [refusals[position] if position in refusals else next(forwarded) for position in range(count)]


def _call(controller: ControllerClient, method: str, request: object) -> object | Exception:
    try:
        return controller.call(method, request, timeout=FORWARD_TIMEOUT_SECONDS)
    except ControllerUnavailableError as error:
        return error
    except grpc.RpcError as error:
        return ControllerUnavailableError(controller.addresses, f"{error.code().name}: {error.details()}")  # type: ignore[attr-defined]


def _topic_result(name: str, code: int, message: str) -> broker_pb2.TopicResult:
    return broker_pb2.TopicResult(name=name, error_code=code, error_message=message)


def _unavailable_topic_results(names: Sequence[str], error: Exception) -> list[broker_pb2.TopicResult]:
    return [_topic_result(name, ErrorCode.NOT_CONTROLLER, str(error)) for name in names]


def create_topics(controller: ControllerClient, call: CallContext, request: broker_pb2.CreateTopicsRequest) -> broker_pb2.CreateTopicsResponse:
    may_create_any = call.may(Operation.CREATE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME)
    forwarded, refusals = _split(
        list(request.topics),
        lambda topic: topic.name,
        lambda name: may_create_any or call.may(Operation.CREATE, ResourceType.TOPIC, name),
        "create",
        lambda topic, code, message: _topic_result(topic.name, code, message),
    )
    answers: list[broker_pb2.TopicResult] = []
    if forwarded:
        inner = broker_pb2.CreateTopicsRequest(topics=forwarded, validate_only=request.validate_only, timeout_ms=request.timeout_ms)
        response = _call(controller, "CreateTopics", controller_pb2.ForwardedCreateTopicsRequest(caller=_caller(call), request=inner))
        answers = _unavailable_topic_results([topic.name for topic in forwarded], response) if isinstance(response, Exception) else list(response.topics)  # type: ignore[attr-defined]
    return broker_pb2.CreateTopicsResponse(topics=_merge(len(request.topics), refusals, answers))


def delete_topics(controller: ControllerClient, call: CallContext, names: Sequence[str], timeout_ms: int) -> broker_pb2.DeleteTopicsResponse:
    forwarded, refusals = _split(
        list(names), lambda name: name, lambda name: call.may(Operation.DELETE, ResourceType.TOPIC, name), "delete", lambda name, code, message: _topic_result(name, code, message)
    )
    answers: list[broker_pb2.TopicResult] = []
    if forwarded:
        inner = broker_pb2.DeleteTopicsRequest(topics=forwarded, timeout_ms=timeout_ms)
        response = _call(controller, "DeleteTopics", controller_pb2.ForwardedDeleteTopicsRequest(caller=_caller(call), request=inner))
        answers = _unavailable_topic_results(forwarded, response) if isinstance(response, Exception) else list(response.topics)  # type: ignore[attr-defined]
    return broker_pb2.DeleteTopicsResponse(topics=_merge(len(names), refusals, answers))


def create_partitions(controller: ControllerClient, call: CallContext, request: broker_pb2.CreatePartitionsRequest) -> broker_pb2.CreatePartitionsResponse:
    forwarded, refusals = _split(
        list(request.topics),
        lambda entry: entry.name,
        lambda name: call.may(Operation.ALTER, ResourceType.TOPIC, name),
        "add partitions to",
        lambda entry, code, message: _topic_result(entry.name, code, message),
    )
    answers: list[broker_pb2.TopicResult] = []
    if forwarded:
        inner = broker_pb2.CreatePartitionsRequest(topics=forwarded, validate_only=request.validate_only, timeout_ms=request.timeout_ms)
        response = _call(controller, "CreatePartitions", controller_pb2.ForwardedCreatePartitionsRequest(caller=_caller(call), request=inner))
        answers = _unavailable_topic_results([entry.name for entry in forwarded], response) if isinstance(response, Exception) else list(response.topics)  # type: ignore[attr-defined]
    return broker_pb2.CreatePartitionsResponse(topics=_merge(len(request.topics), refusals, answers))


def alter_configs(controller: ControllerClient, call: CallContext, request: broker_pb2.AlterConfigsRequest) -> broker_pb2.AlterConfigsResponse:
    def refused(resource: broker_pb2.AlterConfigsResource, code: int, message: str) -> broker_pb2.ConfigResourceResult:
        return broker_pb2.ConfigResourceResult(type=resource.type, name=resource.name, error_code=code, error_message=message)

    forwarded, refusals = _split(
        list(request.resources),
        lambda resource: resource.name,
        # Broker resources are not the tenant's: the controller refuses them with a clear error.
        lambda name: call.may(Operation.ALTER_CONFIGS, ResourceType.TOPIC, name),
        "alter the configs of",
        refused,
    )
    answers: list[broker_pb2.ConfigResourceResult] = []
    if forwarded:
        inner = broker_pb2.AlterConfigsRequest(resources=forwarded, validate_only=request.validate_only)
        response = _call(controller, "AlterConfigs", controller_pb2.ForwardedAlterConfigsRequest(caller=_caller(call), request=inner))
        if isinstance(response, Exception):
            answers = [
                broker_pb2.ConfigResourceResult(type=resource.type, name=resource.name, error_code=ErrorCode.NOT_CONTROLLER, error_message=str(response))
                for resource in forwarded
            ]
        else:
            answers = list(response.resources)  # type: ignore[attr-defined]
    return broker_pb2.AlterConfigsResponse(resources=_merge(len(request.resources), refusals, answers))
