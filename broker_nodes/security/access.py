"""Who is calling, per call: the tenant, the principal, the client's address and what kind of caller.

A :class:`CallContext` is made once per call by the authenticator and handed to the
broker's logic, which uses it to map names into the caller's tenant (``qualify``) and back
(``plain``), to decide which stored names the caller may see at all (``owns``), and to
authorize operations with the tenant's ACLs (``may``).

Three kinds of caller:

- ANONYMOUS: a standalone broker (``security.required=false``) without credentials; exactly
  the unrestricted behaviour of issue 2, internal topics included.
- INTERNAL: the control plane (or another broker) with the internal token, full rights on
  every name; or the control plane with a tenant token, full rights on that tenant's names.
- CLIENT: an authenticated cluster API key: its tenant's names only, ACLs decide the rest,
  unless the key is its tenant's cluster administrator (``cluster_admin``: a key of a member
  with the admin or owner role, as Confluent Cloud's user keys act with the user's role), which
  may do everything on its tenant's names without ACLs, as Kafka's ``super.users``. It is still
  a tenant's client: never another tenant's names, never internal topics.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from broker_nodes import names
from broker_nodes.security.authorizer import AclEntry, Operation, ResourceType, is_authorized, is_authorized_for_any
from broker_nodes.topic_registry import is_internal_topic_name

INTERNAL_PRINCIPAL = "User:__internal"  # the control plane and brokers among themselves
ANONYMOUS_PRINCIPAL = "User:ANONYMOUS"  # Kafka's principal of unauthenticated callers


class CallerKind(enum.Enum):
    ANONYMOUS = "anonymous"
    INTERNAL = "internal"
    CLIENT = "client"


@dataclass(frozen=True, slots=True)
class CallContext:
    """One call's identity. Immutable; the ACLs are those of the snapshot current at authentication."""

    tenant_id: str  # "" for no tenant
    principal: str
    client_host: str
    kind: CallerKind
    acls: tuple[AclEntry, ...] = ()
    door: str = "sdk"  # the front door the call came through: "sdk" (gRPC) or "kafka" (the Kafka listener); the audit log names it
    api_key: str = ""  # the cluster key a CLIENT authenticated with ("" for other callers)
    cluster_admin: bool = False  # a CLIENT whose key is its tenant's cluster administrator: no ACL is consulted
    scram_user: str = ""  # the tenant's SCRAM user a CLIENT logged in as (principal User:<scram_user>; never a cluster admin)

    def with_client_host(self, client_host: str) -> CallContext:
        """This context with the client's address filled in (what ``dataclasses.replace`` does, at a
        fraction of its cost: the gRPC servicer calls it once per call)."""
        return CallContext(self.tenant_id, self.principal, client_host, self.kind, self.acls, self.door, self.api_key, self.cluster_admin, self.scram_user)

    @property
    def has_tenant(self) -> bool:
        return bool(self.tenant_id)

    def qualify(self, name: str) -> str:
        """The stored name of the caller's ``name``."""
        return names.qualify(self.tenant_id, name)

    def plain(self, qualified: str) -> str:
        """The name the caller knows a stored name of its own tenant by."""
        return names.plain(qualified) if self.tenant_id else qualified

    def owns(self, qualified: str) -> bool:
        """Whether the stored name is the caller's to see at all (its tenant; internal topics only for trusted callers).

        The internal credential acting as no tenant sees every name, tenants' ones qualified
        (``tn-…~orders``): the pipelines read all tenants' topics and the internal ones at once.
        """
        if self.kind == CallerKind.INTERNAL and not self.tenant_id:
            return True
        if not names.belongs_to(qualified, self.tenant_id):
            return False
        return self.kind != CallerKind.CLIENT or not is_internal_topic_name(qualified)

    def may(self, operation: Operation, resource_type: ResourceType, plain_name: str) -> bool:
        """Whether the caller's ACLs allow ``operation`` on the resource (trusted callers and cluster admins always may)."""
        if self.kind != CallerKind.CLIENT or self.cluster_admin:
            return True
        return is_authorized(self.acls, self.principal, self.client_host, operation, resource_type, plain_name)

    def may_on_any(self, operation: Operation, resource_type: ResourceType) -> bool:
        """Whether some resource of the type allows ``operation`` (trusted callers always may)."""
        if self.kind != CallerKind.CLIENT or self.cluster_admin:
            return True
        return is_authorized_for_any(self.acls, self.principal, self.client_host, operation, resource_type)


def anonymous_context(client_host: str = "") -> CallContext:
    """The caller of a standalone broker (and of in-process calls with no network peer)."""
    return CallContext("", ANONYMOUS_PRINCIPAL, client_host, CallerKind.ANONYMOUS)


def client_host_of(peer: str) -> str:
    """The IP address in a gRPC peer string: ``ipv4:127.0.0.1:5000`` -> ``127.0.0.1``, ``ipv6:[::1]:5000`` -> ``::1``."""
    kind, _, address = peer.partition(":")
    if kind == "ipv6":
        return address.rpartition(":")[0].strip("[]")
    if kind == "ipv4":
        return address.rpartition(":")[0]
    return address or peer
