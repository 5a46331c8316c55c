"""bench.tenant_access: the snapshot benchmarks push to bare brokers gives each key ALL on its own tenant's topics only."""

from __future__ import annotations

import hashlib

from bench.tenant_access import TenantKey, every_topic_request
from grpc_protos.weir.v1 import admin_pb2


def test_each_key_gets_its_secrets_digest_and_all_on_its_own_tenants_topics() -> None:
    keys = [TenantKey("tn-a", "User:sa-a", "KEYA", "secret-a"), TenantKey("tn-b", "User:sa-b", "KEYB", "secret-b")]
    request = every_topic_request(keys, version=7)

    assert request.version == 7
    assert [(c.api_key, c.tenant_id, c.principal, c.secret_sha256) for c in request.credentials] == [
        (key.api_key, key.tenant_id, key.principal, hashlib.sha256(key.secret.encode()).hexdigest()) for key in keys
    ]
    assert [(acl.tenant_id, acl.principal) for acl in request.acls] == [("tn-a", "User:sa-a"), ("tn-b", "User:sa-b")]
    for acl in request.acls:
        assert (acl.resource_type, acl.resource_name, acl.pattern_type) == (admin_pb2.ACL_RESOURCE_TYPE_TOPIC, "*", admin_pb2.ACL_PATTERN_TYPE_LITERAL)
        assert (acl.operation, acl.permission, acl.host) == (admin_pb2.ACL_OPERATION_ALL, admin_pb2.ACL_PERMISSION_ALLOW, "*")
