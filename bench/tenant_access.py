"""The security snapshot a benchmark pushes to bare brokers: each tenant's cluster key, allowed everything on its topics.

Benchmarks that run brokers without the control plane (``flood``, ``partition_scale``,
``replicated_brokers``) give each of their tenants one key this way, as the control plane would
with an ACL granting ALL on every topic.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import NamedTuple

from grpc_protos.weir.v1 import admin_pb2


class TenantKey(NamedTuple):
    """A tenant's cluster API key: the tenant, the key's principal, the key and its secret."""

    tenant_id: str
    principal: str
    api_key: str
    secret: str


def every_topic_request(keys: Sequence[TenantKey], version: int = 1) -> admin_pb2.ApplySecurityRequest:
    """ApplySecurity for ``keys``: each key's credential (its secret's SHA-256) and an ACL allowing its principal ALL on every topic of its tenant."""
    return admin_pb2.ApplySecurityRequest(
        version=version,
        credentials=[
            admin_pb2.Credential(
                api_key=key.api_key, secret_sha256=hashlib.sha256(key.secret.encode()).hexdigest(), tenant_id=key.tenant_id, principal=key.principal
            )
            for key in keys
        ],
        acls=[
            admin_pb2.AclBinding(
                tenant_id=key.tenant_id,
                principal=key.principal,
                resource_type=admin_pb2.ACL_RESOURCE_TYPE_TOPIC,
                resource_name="*",
                pattern_type=admin_pb2.ACL_PATTERN_TYPE_LITERAL,
                operation=admin_pb2.ACL_OPERATION_ALL,
                permission=admin_pb2.ACL_PERMISSION_ALLOW,
                host="*",
            )
            for key in keys
        ],
    )
