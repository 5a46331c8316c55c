"""SCRAM credential changes that brokers forward to the controller (Kafka's
AlterUserScramCredentials), applied to the caller's tenant's SCRAM users.

The broker authenticated the client and checked Kafka's rule, ALTER on the tenant's CLUSTER
resource, before forwarding; the forwarded caller is trusted as given (the call carries the
internal token). Any principal of the tenant allowed that far may administer the tenant's SCRAM
users, as in Kafka, including a SCRAM user itself. The rules and Kafka's error codes are
``webapp.accounts.actions.scram_users``'; the controller then pushes the security snapshot
itself (``ControllerService``) before answering, so the users can log in on every broker that
took the push when the client gets its answer.
"""

from __future__ import annotations

from grpc_protos.weir.v1 import broker_pb2, controller_pb2
from webapp.accounts.facade import ScramDeletion, ScramUpsertion, Tenant, do_alter_scram_users
from webapp.controller.topic_requests import Answered
from weir.errors import ErrorCode


def alter_user_scram_credentials(
    caller: controller_pb2.ForwardedCaller, request: broker_pb2.AlterUserScramCredentialsRequest
) -> Answered[broker_pb2.AlterUserScramCredentialsResponse]:
    """One result per user the request names; the flag of the answer: some user changed."""
    users = list(dict.fromkeys([*(item.user for item in request.deletions), *(item.user for item in request.upsertions)]))
    tenant = Tenant.objects.filter(public_id=caller.tenant_id).first() if caller.tenant_id else None
    if tenant is None:
        message = "SCRAM users belong to a tenant: the caller has none" if not caller.tenant_id else f"no tenant {caller.tenant_id!r}"
        failed = [broker_pb2.AlterUserScramCredentialsResult(user=user, error_code=ErrorCode.INVALID_REQUEST, error_message=message) for user in users]
        return Answered(broker_pb2.AlterUserScramCredentialsResponse(results=failed), False)
    results, changed = do_alter_scram_users(
        tenant,
        [ScramDeletion(item.user, item.mechanism) for item in request.deletions],
        [ScramUpsertion(item.user, item.mechanism, item.iterations, item.salt, item.salted_password) for item in request.upsertions],
        principal=caller.principal,
    )
    answers = [
        broker_pb2.AlterUserScramCredentialsResult(user=result.user, error_code=result.error_code, error_message=result.error_message) for result in results
    ]
    return Answered(broker_pb2.AlterUserScramCredentialsResponse(results=answers), changed)
