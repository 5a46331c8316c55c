"""DescribeUserScramCredentials and AlterUserScramCredentials, transport-neutral: the SCRAM
credentials of the caller's tenant (Kafka's AdminClient.describeUserScramCredentials and
alterUserScramCredentials, KIP-554), for the gRPC Broker service and the Kafka listener alike.

A tenant has two kinds of SCRAM login (``weir.admin_scram``): its cluster API keys, whose
credentials the control plane makes with each key, and the SCRAM users its admins make here, any
name and password, which Kafka clients log in as ``<name>@<tenant id>``. Both are stored by the
control plane and reach the brokers in the security snapshot.

Describe reads the broker's snapshot: DESCRIBE on the cluster (Kafka's rule:
CLUSTER_AUTHORIZATION_FAILED otherwise); only the caller's tenant's users and keys are seen, so
another tenant's name, like an unknown one, is RESOURCE_NOT_FOUND. No users named: every user and
key of the tenant that has a credential. Only mechanisms and iteration counts leave the broker,
never salts or keys.

Alter is forwarded to the controller like ACL administration (``requests.acls``): ALTER on the
cluster here, then the controller validates with Kafka's rules and codes, stores, and pushes the
new security snapshot to the brokers before it answers, so a describe or a login that follows the
answer sees the change. One result per user; a user's alterations apply together or not at all.
A caller without a tenant, or a broker without a controller, has no SCRAM users to administer:
SECURITY_DISABLED (Kafka's answer when no authorizer is configured). No controller answering:
NOT_CONTROLLER.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from broker_nodes.requests.acls import SECURITY_DISABLED, AclRequestRefusedError, forward_admin_request
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import CLUSTER_RESOURCE_NAME, Operation, ResourceType
from broker_nodes.security.scram import ScramCredential
from broker_nodes.server.broker import Broker
from broker_nodes.server.topic_forwarding import forwarded_caller
from grpc_protos.weir.v1 import broker_pb2, controller_pb2
from weir.errors import ErrorCode

NO_SCRAM_ADMINISTRATION = "SCRAM users are stored by the control plane for a tenant; this broker has no controller or the caller no tenant"


@dataclass(frozen=True, slots=True)
class UserScramCredentials:
    user: str
    error_code: int = 0
    error_message: str = ""
    credentials: tuple[tuple[str, int], ...] = ()  # (mechanism name, iterations), by mechanism


@dataclass(frozen=True, slots=True)
class ScramDescription:
    error_code: int = 0
    error_message: str = ""
    users: list[UserScramCredentials] = field(default_factory=list)


def describe_scram_credentials(broker: Broker, call: CallContext, users: Sequence[str] | None) -> ScramDescription:
    """The named users' credentials in request order (every user and key of the tenant with one when None or empty)."""
    if not call.may(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME):
        return ScramDescription(
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED, f"describing SCRAM credentials needs DESCRIBE on the cluster resource {CLUSTER_RESOURCE_NAME!r}"
        )
    logins = _tenant_logins(broker, call)
    if not users:
        return ScramDescription(users=[_described(name, logins[name]) for name in sorted(logins)])
    counts = {user: list(users).count(user) for user in users}
    described = []
    for user in users:
        scram = logins.get(user)
        if counts[user] > 1:
            described.append(UserScramCredentials(user, ErrorCode.DUPLICATE_RESOURCE, f"user {user!r} is named more than once"))
        elif scram is None:
            described.append(UserScramCredentials(user, ErrorCode.RESOURCE_NOT_FOUND, f"no SCRAM credential for user {user!r}"))
        else:
            described.append(_described(user, scram))
    return ScramDescription(users=described)


def _tenant_logins(broker: Broker, call: CallContext) -> dict[str, Mapping[str, ScramCredential]]:
    """The caller's tenant's SCRAM users and keys with a credential, by the name describe shows."""
    snapshot = broker.security.snapshot
    if snapshot is None:
        return {}
    logins = {key: credential.scram for key, credential in snapshot.credentials.items() if credential.tenant_id == call.tenant_id and credential.scram}
    # The control plane refuses a user named like one of the tenant's keys, so neither hides the other.
    logins.update((name, user.scram) for name, user in snapshot.scram_users_of(call.tenant_id).items())
    return logins


def _described(user: str, scram: Mapping[str, ScramCredential]) -> UserScramCredentials:
    return UserScramCredentials(user, credentials=tuple(sorted((mechanism, credential.iterations) for mechanism, credential in scram.items())))


def _users_in_order(request: broker_pb2.AlterUserScramCredentialsRequest) -> list[str]:
    """Every user the request names, in order of first mention (the answer's order)."""
    return list(dict.fromkeys([*(deletion.user for deletion in request.deletions), *(upsertion.user for upsertion in request.upsertions)]))


def alter_scram_credentials(
    broker: Broker, call: CallContext, request: broker_pb2.AlterUserScramCredentialsRequest
) -> list[broker_pb2.AlterUserScramCredentialsResult]:
    """One result per user the request names (order of first mention): applied, or why not."""
    users = _users_in_order(request)
    try:
        if broker.controller is None or not call.has_tenant:
            raise AclRequestRefusedError(SECURITY_DISABLED, NO_SCRAM_ADMINISTRATION)
        if not call.may(Operation.ALTER, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME):
            raise AclRequestRefusedError(
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED, f"altering SCRAM credentials needs ALTER on the cluster resource {CLUSTER_RESOURCE_NAME!r}"
            )
        forwarded = controller_pb2.ForwardedAlterUserScramCredentialsRequest(caller=forwarded_caller(call), request=request)
        response = forward_admin_request(broker.controller, "AlterUserScramCredentials", forwarded)
    except AclRequestRefusedError as error:
        return [broker_pb2.AlterUserScramCredentialsResult(user=user, error_code=error.code, error_message=error.message) for user in users]
    assert isinstance(response, broker_pb2.AlterUserScramCredentialsResponse)
    return list(response.results)
