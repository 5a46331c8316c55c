"""The SDK's ACL calls against a real cluster (controller + one broker + database): over gRPC they
go where the Kafka listener's CreateAcls sends them (``requests.acls``, forwarded to the
controller, stored in the catalog, pushed to the brokers), and the brokers enforce them.

One cluster for one test: ACLs need a tenant and the controller, which only a real cluster has
(the standalone broker of test_admin_cluster_calls.py answers SECURITY_DISABLED).
"""

from __future__ import annotations

import io
import json

import pytest

from tests.support.real_cluster import RealCluster
from weir import KafkaError, KafkaException
from weir.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    ResourcePatternType,
    ResourceType,
    ScramMechanism,
)
from weir.cli import main

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(180)]

WAIT = 30.0


def _describe_configs_code(admin: AdminClient, resource: ConfigResource) -> int:
    try:
        admin.describe_configs([resource])[resource].result(timeout=WAIT)
    except KafkaException as error:
        return error.error.code()
    return 0


def test_sdk_creates_describes_and_deletes_acls_that_brokers_enforce(start_cluster) -> None:  # type: ignore[no-untyped-def]
    cluster: RealCluster = start_cluster(broker_count=1)
    access = cluster.create_tenant("Guarded")
    cluster.create_topic("audit", 1, 1)
    with AdminClient(cluster.client_config()) as admin:
        deny = AclBinding(
            ResourceType.TOPIC, "audit", ResourcePatternType.LITERAL, access.principal, "*", AclOperation.DESCRIBE_CONFIGS, AclPermissionType.DENY
        )
        prefixed = AclBinding(ResourceType.TOPIC, "audit-", ResourcePatternType.PREFIXED, access.principal, "*", AclOperation.READ, AclPermissionType.ALLOW)
        # As in Kafka, a principal no identity has (yet) is accepted: it matches no one of this tenant.
        stranger = AclBinding(ResourceType.TOPIC, "audit", ResourcePatternType.LITERAL, "User:sa-nobody", "*", AclOperation.READ, AclPermissionType.ALLOW)
        malformed = AclBinding(ResourceType.TOPIC, "audit", ResourcePatternType.LITERAL, "sa-nobody", "*", AclOperation.READ, AclPermissionType.ALLOW)
        futures = admin.create_acls([deny, prefixed, stranger, malformed], request_timeout=WAIT)
        assert [futures[binding].result(timeout=WAIT) for binding in (deny, prefixed, stranger)] == [None, None, None]
        with pytest.raises(KafkaException) as refused:
            futures[malformed].result(timeout=WAIT)
        assert refused.value.error.code() == KafkaError.INVALID_REQUEST and "User:<name>" in refused.value.error.str()

        every_topic_acl = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)
        described = admin.describe_acls(every_topic_acl, request_timeout=WAIT).result(timeout=WAIT)
        assert {deny, prefixed} <= set(described)

        resource = ConfigResource(ConfigResource.Type.TOPIC, "audit")
        cluster.wait_until(lambda: _describe_configs_code(admin, resource) == KafkaError.TOPIC_AUTHORIZATION_FAILED, "DescribeConfigs refused by the new DENY")

        deny_filter = AclBindingFilter(
            ResourceType.TOPIC, "audit", ResourcePatternType.LITERAL, access.principal, "*", AclOperation.DESCRIBE_CONFIGS, AclPermissionType.DENY
        )
        assert admin.delete_acls([deny_filter], request_timeout=WAIT)[deny_filter].result(timeout=WAIT) == [deny]
        cluster.wait_until(lambda: _describe_configs_code(admin, resource) == 0, "DescribeConfigs allowed again once the DENY is deleted")

    # The tenant's key is its SCRAM user: SCRAM-SHA-256 and -512 credentials, made with the key.
    with AdminClient(cluster.client_config()) as admin:
        mine = admin.describe_user_scram_credentials([access.api_key])[access.api_key].result(timeout=WAIT)  # type: ignore[index]
        assert sorted(info.mechanism for info in mine.scram_credential_infos) == [ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512]
        assert access.api_key in admin.describe_user_scram_credentials().result(timeout=WAIT)  # type: ignore[union-attr]

    # The same through `weir acls` (one binding per --operation; delete prints what it removed).
    def weir(*argv: str) -> tuple[int, str]:
        stdout, stderr = io.StringIO(), io.StringIO()
        connection = ["--bootstrap-server", cluster.bootstrap_servers(), "--api-key", access.api_key, "--api-secret", access.api_secret]
        code = main([*argv, *connection], stdout=stdout, stderr=stderr, environ={})
        return code, stdout.getvalue() + stderr.getvalue()

    create = ["acls", "create", "--resource-type", "group", "--resource-name", "billing-", "--pattern-type", "prefixed", "--principal", access.principal]
    assert weir(*create, "--operation", "read", "--operation", "describe")[0] == 0
    code, listed = weir("acls", "list", "--resource-type", "group", "--resource-name", "billing-", "--output", "json")
    assert code == 0 and sorted((row["resource_name"], row["operation"]) for row in json.loads(listed)) == [("billing-", "describe"), ("billing-", "read")]
    code, deleted = weir("acls", "delete", "--resource-name", "billing-", "--operation", "read", "--output", "json")
    assert code == 0 and [(row["resource_type"], row["operation"]) for row in json.loads(deleted)] == [("group", "read")]
