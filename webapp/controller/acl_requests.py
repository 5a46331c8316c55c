"""ACL administration that brokers forward to the controller (Kafka's CreateAcls, DescribeAcls,
DeleteAcls), applied to the catalog's ACL bindings exactly like the same REST request.

The broker authenticated the client (a cluster key or a tenant's SCRAM user) and checked Kafka's rule before forwarding:
ALTER on the tenant's CLUSTER resource to create or delete bindings, DESCRIBE on it to list
them. On the data plane ACLs decide what a key may do (an admin or owner member's key needs none: webapp.accounts.roles), so the forwarded caller acts here
as a tenant admin (the role the catalog's ACL actions ask of REST callers): a key its tenant
allowed to ALTER the cluster administers that tenant's ACLs, as in Kafka, and so does a SCRAM user
its tenant's ACLs allow that (it still never becomes a cluster administrator on the brokers). From there the path
is REST's: ``check_create_acl`` validates (Kafka's vocabulary, operations per resource type,
hosts; any ``User:<name>`` principal, as Kafka accepts, where REST asks for an identity of the
tenant), ``do_create_acl`` / ``do_delete_acls`` write and record the
SYNC_SECURITY job; the controller then pushes the security snapshot itself (``ControllerService``),
so the change applies on the brokers without a Celery worker.

Every binding (or filter) gets its own result: Kafka's error code and a message. Creating a
binding that already exists succeeds, as in Kafka. Only the caller's tenant's bindings are ever
seen or deleted; its plain resource names are the catalog's.
"""

from __future__ import annotations

import dataclasses
import logging

from grpc_protos.weir.v1 import controller_pb2
from webapp.accounts.facade import ActionError, Actor, Conflict, InvalidInput, Role
from webapp.catalog.facade import AclBinding, AclFilter, apply_acl_filter, check_create_acl, do_create_acl, do_delete_acls
from webapp.controller.topic_requests import Answered, TopicRequestError, actor_for_forwarded_caller
from weir.errors import ErrorCode

logger = logging.getLogger(__name__)

BINDING_FIELDS = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission")


def _acl_admin(caller: controller_pb2.ForwardedCaller) -> Actor:
    """The forwarded caller as a tenant admin (see the module docstring); TopicRequestError when it cannot act."""
    return dataclasses.replace(actor_for_forwarded_caller(caller), role=Role.ADMIN)


def _message(error: ActionError) -> str:
    if isinstance(error, InvalidInput):
        sentences = [f"{field}: {' '.join(str(item) for item in problems)}" for field, problems in error.errors.items()]
        return " ".join(sentences) or error.message
    return error.message


def _binding_message(binding: AclBinding) -> controller_pb2.ForwardedAclBinding:
    return controller_pb2.ForwardedAclBinding(**{field: getattr(binding, field) for field in BINDING_FIELDS})


def _filter(message: controller_pb2.ForwardedAclFilter) -> AclFilter:
    return AclFilter(**{field: getattr(message, field) if message.HasField(field) else None for field in BINDING_FIELDS})


def create_acls(caller: controller_pb2.ForwardedCaller, creations: list[controller_pb2.ForwardedAclBinding]) -> Answered[controller_pb2.CreateAclsResponse]:
    """Create each binding as ``POST /acls`` would; the flag of the answer: some binding was created."""
    try:
        actor = _acl_admin(caller)
    except TopicRequestError as error:
        failed = controller_pb2.AclCreationResult(error_code=error.code, error_message=error.message)
        return Answered(controller_pb2.CreateAclsResponse(results=[failed for _ in creations]), False)
    results = []
    changed = False
    for creation in creations:
        try:
            binding = check_create_acl(actor, **{field: getattr(creation, field) for field in BINDING_FIELDS}, known_principal=False)
            do_create_acl(actor, binding)
            changed = True
        except Conflict:
            pass  # Kafka: creating an existing binding succeeds
        except ActionError as error:
            results.append(controller_pb2.AclCreationResult(error_code=ErrorCode.INVALID_REQUEST, error_message=_message(error)))
            continue
        results.append(controller_pb2.AclCreationResult())
    logger.info(
        "CreateAcls from %s of tenant %s: %d of %d binding(s) accepted",
        caller.principal,
        caller.tenant_id,
        sum(not r.error_code for r in results),
        len(results),
    )
    return Answered(controller_pb2.CreateAclsResponse(results=results), changed)


def describe_acls(caller: controller_pb2.ForwardedCaller, acl_filter: controller_pb2.ForwardedAclFilter) -> Answered[controller_pb2.DescribeAclsResponse]:
    """The tenant's bindings the filter matches, as ``GET /acls`` lists them."""
    try:
        actor = _acl_admin(caller)
    except TopicRequestError as error:
        return Answered(controller_pb2.DescribeAclsResponse(error_code=error.code, error_message=error.message), False)
    bindings = apply_acl_filter(AclBinding.objects.filter(tenant=actor.tenant), _filter(acl_filter)).order_by("pk")
    return Answered(controller_pb2.DescribeAclsResponse(bindings=[_binding_message(binding) for binding in bindings]), False)


def delete_acls(caller: controller_pb2.ForwardedCaller, filters: list[controller_pb2.ForwardedAclFilter]) -> Answered[controller_pb2.DeleteAclsResponse]:
    """Delete the tenant's bindings each filter matches, as ``DELETE /acls`` would; one result per filter."""
    try:
        actor = _acl_admin(caller)
    except TopicRequestError as error:
        failed = controller_pb2.DeleteAclsFilterResult(error_code=error.code, error_message=error.message)
        return Answered(controller_pb2.DeleteAclsResponse(results=[failed for _ in filters]), False)
    results = []
    changed = False
    for acl_filter in filters:
        try:
            deleted, job = do_delete_acls(actor, _filter(acl_filter))
        except ActionError as error:
            results.append(controller_pb2.DeleteAclsFilterResult(error_code=ErrorCode.INVALID_REQUEST, error_message=_message(error)))
            continue
        changed = changed or job is not None
        results.append(controller_pb2.DeleteAclsFilterResult(deleted=[_binding_message(binding) for binding in deleted]))
    logger.info("DeleteAcls from %s of tenant %s: %d binding(s) deleted", caller.principal, caller.tenant_id, sum(len(result.deleted) for result in results))
    return Answered(controller_pb2.DeleteAclsResponse(results=results), changed)
