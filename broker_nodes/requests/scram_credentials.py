"""DescribeUserScramCredentials's transport-neutral part: which SCRAM credentials the caller's
tenant's users have (Kafka's AdminClient.describeUserScramCredentials).

A Weir SCRAM user is a cluster API key: the control plane makes its SCRAM-SHA-256 and
SCRAM-SHA-512 credentials with the key and pushes them in the security snapshot (keys made before
SCRAM support have none). The caller needs DESCRIBE on the cluster (Kafka's rule:
CLUSTER_AUTHORIZATION_FAILED otherwise) and sees only its own tenant's keys: another tenant's key,
like an unknown one, is RESOURCE_NOT_FOUND. No users named: every key of the tenant that has a
credential. Only mechanisms and iteration counts leave the broker, never salts or keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import CLUSTER_RESOURCE_NAME, Operation, ResourceType
from broker_nodes.security.scram import ScramCredential
from broker_nodes.server.broker import Broker
from weir.errors import ErrorCode


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
    """The named users' credentials in request order (every user of the tenant with one when None or empty)."""
    if not call.may(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME):
        return ScramDescription(
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED, f"describing SCRAM credentials needs DESCRIBE on the cluster resource {CLUSTER_RESOURCE_NAME!r}"
        )
    snapshot = broker.security.snapshot
    keys = {key: credential for key, credential in (snapshot.credentials.items() if snapshot is not None else ()) if credential.tenant_id == call.tenant_id}
    if not users:
        return ScramDescription(users=[_described(key, keys[key].scram) for key in sorted(keys) if keys[key].scram])
    counts = {user: list(users).count(user) for user in users}
    described = []
    for user in users:
        credential = keys.get(user)
        if counts[user] > 1:
            described.append(UserScramCredentials(user, ErrorCode.DUPLICATE_RESOURCE, f"user {user!r} is named more than once"))
        elif credential is None or not credential.scram:
            described.append(UserScramCredentials(user, ErrorCode.RESOURCE_NOT_FOUND, f"no SCRAM credential for user {user!r}"))
        else:
            described.append(_described(user, credential.scram))
    return ScramDescription(users=described)


def _described(user: str, scram: Mapping[str, ScramCredential]) -> UserScramCredentials:
    return UserScramCredentials(user, credentials=tuple(sorted((mechanism, credential.iterations) for mechanism, credential in scram.items())))
