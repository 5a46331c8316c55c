"""CreateAcls, DescribeAcls and DeleteAcls: a tenant's ACL administration, forwarded to the controller.

ACL bindings are the control plane's (the catalog pushes them to every broker), so like topic
administration a client's request is authorized here and forwarded (``server.topic_forwarding``
for the caller and the timeout): Kafka's rule, ALTER on the CLUSTER resource to create or delete
bindings, DESCRIBE on it to list them (CLUSTER_AUTHORIZATION_FAILED otherwise). The controller
applies the request to the catalog as the REST API does and pushes the new security snapshot.

Shapes are ``controller.proto``'s forwarded ACL messages (the catalog's names: TOPIC, LITERAL,
READ, ALLOW...); the Kafka handlers convert Kafka's numeric codes. A caller without a tenant, or a
broker without a controller, has no ACLs to administer this way: SECURITY_DISABLED, Kafka's answer
when no authorizer is configured. When no controller answers, every entry gets NOT_CONTROLLER.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from broker_nodes.controller_client import ControllerClient, ControllerUnavailableError
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import CLUSTER_RESOURCE_NAME, Operation, ResourceType
from broker_nodes.server.broker import Broker
from broker_nodes.server.topic_forwarding import FORWARD_TIMEOUT_SECONDS, forwarded_caller
from grpc_protos.weir.v1 import controller_pb2
from weir.errors import ErrorCode

SECURITY_DISABLED = ErrorCode.SECURITY_DISABLED  # 54: the SDK's ACL calls meet it too (a standalone broker)
NO_ACL_ADMINISTRATION = "ACLs are administered by the control plane for a tenant's API key; this broker has no controller or the caller no tenant"


class AclRequestRefusedError(Exception):
    """The whole ACL request is refused: Kafka's ``code`` and a message for every entry."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _controller_for(broker: Broker, call: CallContext, operation: Operation, verb: str) -> ControllerClient:
    if broker.controller is None or not call.has_tenant:
        raise AclRequestRefusedError(SECURITY_DISABLED, NO_ACL_ADMINISTRATION)
    if not call.may(operation, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME):
        raise AclRequestRefusedError(
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED, f"{verb} ACLs needs {operation.name} on the cluster resource {CLUSTER_RESOURCE_NAME!r}"
        )
    return broker.controller


def forward_admin_request(controller: ControllerClient, method: str, request: object) -> object:
    """The controller's answer to a forwarded admin request; AclRequestRefusedError(NOT_CONTROLLER) when none answers."""
    try:
        return controller.call(method, request, timeout=FORWARD_TIMEOUT_SECONDS)
    except ControllerUnavailableError as error:
        raise AclRequestRefusedError(ErrorCode.NOT_CONTROLLER, str(error)) from error
    except grpc.RpcError as error:
        problem = ControllerUnavailableError(controller.addresses, f"{error.code().name}: {error.details()}")
        raise AclRequestRefusedError(ErrorCode.NOT_CONTROLLER, str(problem)) from error


def create_acls(broker: Broker, call: CallContext, creations: Sequence[controller_pb2.ForwardedAclBinding]) -> list[controller_pb2.AclCreationResult]:
    """One result per binding, in order."""
    try:
        controller = _controller_for(broker, call, Operation.ALTER, "creating")
        request = controller_pb2.ForwardedCreateAclsRequest(caller=forwarded_caller(call), creations=creations)
        response = forward_admin_request(controller, "CreateAcls", request)
    except AclRequestRefusedError as error:
        return [controller_pb2.AclCreationResult(error_code=error.code, error_message=error.message) for _ in creations]
    assert isinstance(response, controller_pb2.CreateAclsResponse)
    return list(response.results)


def describe_acls(broker: Broker, call: CallContext, acl_filter: controller_pb2.ForwardedAclFilter) -> controller_pb2.DescribeAclsResponse:
    """The caller's tenant's bindings the filter matches, or the error that refused the request."""
    try:
        controller = _controller_for(broker, call, Operation.DESCRIBE, "describing")
        response = forward_admin_request(
            controller, "DescribeAcls", controller_pb2.ForwardedDescribeAclsRequest(caller=forwarded_caller(call), filter=acl_filter)
        )
    except AclRequestRefusedError as error:
        return controller_pb2.DescribeAclsResponse(error_code=error.code, error_message=error.message)
    assert isinstance(response, controller_pb2.DescribeAclsResponse)
    return response


def delete_acls(broker: Broker, call: CallContext, filters: Sequence[controller_pb2.ForwardedAclFilter]) -> list[controller_pb2.DeleteAclsFilterResult]:
    """One result per filter, in order: the bindings it matched (now deleted) or its error."""
    try:
        controller = _controller_for(broker, call, Operation.ALTER, "deleting")
        response = forward_admin_request(controller, "DeleteAcls", controller_pb2.ForwardedDeleteAclsRequest(caller=forwarded_caller(call), filters=filters))
    except AclRequestRefusedError as error:
        return [controller_pb2.DeleteAclsFilterResult(error_code=error.code, error_message=error.message) for _ in filters]
    assert isinstance(response, controller_pb2.DeleteAclsResponse)
    return list(response.results)
