"""A tenant's admin makes SCRAM users with Kafka's AlterUserScramCredentials through both doors,
and stock clients log in as them: confluent-kafka's own AdminClient (librdkafka, Kafka's protocol)
and the SDK's (gRPC) upsert, describe and delete; the controller stores the users and pushes them to
the broker processes; librdkafka and kafka-python then authenticate with SASL/SCRAM as
``<name>@<tenant id>`` and act as ``User:<name>`` under the tenant's ACLs (denied until an ACL
allows); a deleted user cannot log in again; another tenant neither sees nor reaches the user.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka import KafkaAdminClient
from kafka.errors import KafkaError as KafkaPythonError

from tests.support.real_cluster import RealCluster
from weir import admin as weir_admin
from weir.admin_scram import scram_login_name

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(240)]

WAIT = 30.0
TOPIC = "orders"


@pytest.fixture
def cluster(start_cluster) -> RealCluster:  # type: ignore[no-untyped-def]
    return start_cluster(broker_count=1)


def scram_settings(cluster: RealCluster, login: str, password: str, mechanism: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": cluster.kafka_bootstrap_servers(),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": login,
        "sasl.password": password,
    }


def produce_one(cluster: RealCluster, login: str, password: str, mechanism: str) -> KafkaError | None:
    """One record to TOPIC as ``login``; the delivery's error (None: written)."""
    outcomes: list[KafkaError | None] = []
    producer = Producer({**scram_settings(cluster, login, password, mechanism), "message.timeout.ms": 15000, "allow.auto.create.topics": False})
    producer.produce(TOPIC, b"from a SCRAM user", on_delivery=lambda error, message: outcomes.append(error))
    assert producer.flush(WAIT) == 0
    return outcomes[0]


def kafka_python_logs_in(cluster: RealCluster, login: str, password: str) -> bool:
    try:
        client = KafkaAdminClient(
            bootstrap_servers=cluster.kafka_bootstrap_servers().split(","),
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username=login,
            sasl_plain_password=password,
            request_timeout_ms=5000,
            api_version_auto_timeout_ms=5000,
        )
    except KafkaPythonError:
        return False
    client.close()
    return True


def test_scram_users_made_through_both_doors_log_in_under_their_tenants_acls(cluster: RealCluster) -> None:
    other = cluster.create_tenant("ScramOther")
    access = cluster.create_tenant("ScramUsers")
    cluster.create_topic(TOPIC, partitions=1, replication_factor=1)
    alice, bob = scram_login_name("alice", access.tenant_id), scram_login_name("bob", access.tenant_id)

    # Kafka's door: librdkafka computes the salted password and sends AlterUserScramCredentials.
    kafka_admin = AdminClient(cluster.kafka_client_config())
    sha512 = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
    assert kafka_admin.alter_user_scram_credentials([UserScramCredentialUpsertion("alice", sha512, b"alice-password")])["alice"].result(WAIT) is None
    described = kafka_admin.describe_user_scram_credentials(["alice"])["alice"].result(WAIT)
    assert [(info.mechanism, info.iterations) for info in described.scram_credential_infos] == [(ScramMechanism.SCRAM_SHA_512, 8192)]
    too_few = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000), b"pw")
    with pytest.raises(Exception) as refused:
        kafka_admin.alter_user_scram_credentials([too_few])["carol"].result(WAIT)
    assert refused.value.args[0].code() == KafkaError.UNACCEPTABLE_CREDENTIAL

    # The SDK's door (gRPC), same request layer.
    sdk = weir_admin.AdminClient(cluster.client_config())
    sha256 = weir_admin.ScramCredentialInfo(weir_admin.ScramMechanism.SCRAM_SHA_256, 4096)
    assert sdk.alter_user_scram_credentials([weir_admin.UserScramCredentialUpsertion("bob", sha256, b"bob-password")])["bob"].result(WAIT) is None
    everyone = sdk.describe_user_scram_credentials().result(WAIT)  # type: ignore[union-attr]
    assert {"alice", "bob", access.api_key} <= set(everyone)

    # Logging in as the users: authenticated, but Kafka's rule holds (no ACL for User:alice, denied).
    assert produce_one(cluster, alice, "alice-password", "SCRAM-SHA-512").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED  # type: ignore[union-attr]
    allow = AclBinding(ResourceType.TOPIC, TOPIC, ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW)
    assert kafka_admin.create_acls([allow])[allow].result(WAIT) is None
    assert produce_one(cluster, alice, "alice-password", "SCRAM-SHA-512") is None
    assert kafka_python_logs_in(cluster, bob, "bob-password")
    assert not kafka_python_logs_in(cluster, bob, "not-bobs-password")
    assert not kafka_python_logs_in(cluster, scram_login_name("bob", other.tenant_id), "bob-password")  # not a user of the other tenant

    # Another tenant's admin neither sees nor deletes the user.
    other_admin = weir_admin.AdminClient({**cluster.client_config(), "sasl.username": other.api_key, "sasl.password": other.api_secret})
    assert "bob" not in other_admin.describe_user_scram_credentials().result(WAIT)  # type: ignore[union-attr,operator]
    deletion = weir_admin.UserScramCredentialDeletion("bob", weir_admin.ScramMechanism.SCRAM_SHA_256)
    with pytest.raises(weir_admin.KafkaException) as not_found:
        other_admin.alter_user_scram_credentials([deletion])["bob"].result(WAIT)
    assert not_found.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND

    # Deleted: the user cannot log in any more.
    assert kafka_admin.alter_user_scram_credentials([UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_256)])["bob"].result(WAIT) is None
    assert not kafka_python_logs_in(cluster, bob, "bob-password")
    with pytest.raises(Exception) as gone:
        kafka_admin.describe_user_scram_credentials(["bob"])["bob"].result(WAIT)
    assert gone.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND
