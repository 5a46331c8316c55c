"""A key the snapshot marks ``cluster_admin`` may do everything on its tenant's names without
ACLs (not even a DENY is consulted, as Kafka's super.users), but stays a tenant's client: never
another tenant's names, never internal topics. Other keys keep Kafka's ACL rules. The mark
survives a restart (the snapshot file)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from broker_nodes.clock import ManualClock
from broker_nodes.security.access import CallContext, CallerKind
from broker_nodes.security.authenticator import Authenticator
from broker_nodes.security.authorizer import Operation, ResourceType
from broker_nodes.security.snapshot import SecuritySnapshot, SecurityStore
from grpc_protos.weir.v1 import admin_pb2

PEER = "ipv4:127.0.0.1:50000"
SECRETS = {"ADMINKEY": "weir_cluster_admin-secret", "APPKEY": "weir_cluster_app-secret"}


def security_request() -> admin_pb2.ApplySecurityRequest:
    def credential(api_key: str, principal: str, cluster_admin: bool) -> admin_pb2.Credential:
        digest = hashlib.sha256(SECRETS[api_key].encode()).hexdigest()
        return admin_pb2.Credential(api_key=api_key, secret_sha256=digest, tenant_id="tn-a", principal=principal, cluster_admin=cluster_admin)

    deny_everyone = admin_pb2.AclBinding(
        tenant_id="tn-a",
        principal="User:*",
        resource_type=admin_pb2.ACL_RESOURCE_TYPE_TOPIC,
        resource_name="secret",
        pattern_type=admin_pb2.ACL_PATTERN_TYPE_LITERAL,
        operation=admin_pb2.ACL_OPERATION_ALL,
        permission=admin_pb2.ACL_PERMISSION_DENY,
        host="*",
    )
    return admin_pb2.ApplySecurityRequest(
        version=1, credentials=[credential("ADMINKEY", "User:u-owner", True), credential("APPKEY", "User:sa-app", False)], acls=[deny_everyone]
    )


def authenticated(store: SecurityStore, api_key: str) -> CallContext:
    authenticator = Authenticator(security_required=True, internal_token="unit-internal-token-0123456789", security_store=store, clock=ManualClock())
    return authenticator.authenticate((("x-weir-api-key", api_key), ("x-weir-api-secret", SECRETS[api_key])), PEER)


def test_a_cluster_admin_key_needs_no_acls_and_stays_in_its_tenant_and_the_mark_survives_a_restart(tmp_path: Path) -> None:
    store = SecurityStore(tmp_path)
    store.store(SecuritySnapshot.from_request(security_request()))

    for current in (store, SecurityStore(tmp_path)):  # the second reads the file, as a restarted broker
        if current is not store:
            current.load()
        admin = authenticated(current, "ADMINKEY")
        assert (admin.kind, admin.cluster_admin, admin.principal) == (CallerKind.CLIENT, True, "User:u-owner")
        assert admin.may(Operation.WRITE, ResourceType.TOPIC, "orders") and admin.may(Operation.ALTER, ResourceType.CLUSTER, "kafka-cluster")
        assert admin.may(Operation.READ, ResourceType.TOPIC, "secret"), "a cluster admin is not subject to DENY bindings"
        assert admin.may_on_any(Operation.WRITE, ResourceType.TRANSACTIONAL_ID)
        assert admin.owns("tn-a~orders") and not admin.owns("tn-b~orders") and not admin.owns("__consumer_offsets")

        application = authenticated(current, "APPKEY")
        assert not application.cluster_admin
        assert not application.may(Operation.WRITE, ResourceType.TOPIC, "orders"), "no binding: denied"
        assert not application.may_on_any(Operation.DESCRIBE, ResourceType.CLUSTER)
