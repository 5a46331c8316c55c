"""A tenant's SCRAM user administers what its ACLs allow, through the Kafka listener: Kafka's
rules decide on the broker (CREATE on a PREFIXED topic pattern creates topics in it and only
there; ALTER on the cluster administers ACLs), the broker forwards the SCRAM user to the
controller, which acts as ``User:<name>`` (never as a cluster administrator), and the audit log
records it (door: Kafka protocol). A producer logged in as the user auto-creates a topic it may
CREATE on a broker with auto.create.topics.enable on.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from tests.support.real_cluster import RealCluster
from weir.admin_scram import scram_login_name

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(240)]

WAIT = 30.0
USER = "carol"
PASSWORD = "carol-password"
PREFIX = "carol-"


@pytest.fixture
def cluster(start_cluster, monkeypatch: pytest.MonkeyPatch) -> RealCluster:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("WEIR_BROKER_AUTO_CREATE_TOPICS_ENABLE", "true")  # the broker processes inherit it
    return start_cluster(broker_count=1)


def allow(resource_type: ResourceType, name: str, pattern: ResourcePatternType, operation: AclOperation) -> AclBinding:
    return AclBinding(resource_type, name, pattern, f"User:{USER}", "*", operation, AclPermissionType.ALLOW)


def create_acls(admin: AdminClient, bindings: list[AclBinding]) -> None:
    for future in admin.create_acls(bindings).values():
        assert future.result(WAIT) is None


def create_topic_error(admin: AdminClient, name: str) -> int | None:
    """The code CreateTopics answers for ``name`` (None: created)."""
    try:
        admin.create_topics([NewTopic(name, 1, 1)], request_timeout=WAIT)[name].result(WAIT)
    except KafkaException as error:
        code: int = error.args[0].code()
        return code
    return None


def audited(tenant_id: str) -> list[tuple[str, str, str, str, str]]:
    """The SCRAM user's audit events, oldest first: action, target, door, name, API key id."""
    from webapp.audit.models import AuditEvent

    events = AuditEvent.objects.filter(tenant__public_id=tenant_id, actor_principal=f"User:{USER}").order_by("at", "pk")
    return [(event.action, event.target, event.door, event.actor_name, event.api_key_id) for event in events]


def test_scram_user_creates_topics_and_acls_as_its_acls_allow(cluster: RealCluster) -> None:
    access = cluster.create_tenant("ScramAdmins")
    tenant_admin = AdminClient(cluster.kafka_client_config())
    sha256 = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    assert tenant_admin.alter_user_scram_credentials([UserScramCredentialUpsertion(USER, sha256, PASSWORD.encode())])[USER].result(WAIT) is None
    create_acls(
        tenant_admin,
        [
            allow(ResourceType.TOPIC, PREFIX, ResourcePatternType.PREFIXED, AclOperation.CREATE),
            allow(ResourceType.TOPIC, PREFIX, ResourcePatternType.PREFIXED, AclOperation.WRITE),
        ],
    )
    settings: dict[str, Any] = {
        "bootstrap.servers": cluster.kafka_bootstrap_servers(),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": scram_login_name(USER, access.tenant_id),
        "sasl.password": PASSWORD,
    }
    user_admin = AdminClient(settings)

    # CREATE on the PREFIXED pattern: inside it the controller creates the topic, outside the broker refuses.
    assert create_topic_error(user_admin, f"{PREFIX}orders") is None
    assert create_topic_error(user_admin, "payments") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert create_topic_error(tenant_admin, f"{PREFIX}orders") == KafkaError.TOPIC_ALREADY_EXISTS  # it exists in the catalog

    # ACLs: refused without ALTER on the cluster (the user is no cluster administrator), done with it.
    binding = allow(ResourceType.GROUP, PREFIX, ResourcePatternType.PREFIXED, AclOperation.READ)
    with pytest.raises(KafkaException) as refused:
        user_admin.create_acls([binding])[binding].result(WAIT)
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    create_acls(tenant_admin, [allow(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, AclOperation.ALTER)])
    create_acls(user_admin, [binding])

    # Its producer's first record to an unknown topic it may CREATE auto-creates the topic.
    outcomes: list[KafkaError | None] = []
    producer = Producer({**settings, "message.timeout.ms": 20000})
    producer.produce(f"{PREFIX}auto", b"first", on_delivery=lambda error, message: outcomes.append(error))
    assert producer.flush(WAIT) == 0
    assert outcomes == [None]

    # Configs and deletion: ALTER_CONFIGS and DELETE on the pattern.
    create_acls(
        tenant_admin,
        [
            allow(ResourceType.TOPIC, PREFIX, ResourcePatternType.PREFIXED, AclOperation.ALTER_CONFIGS),
            allow(ResourceType.TOPIC, PREFIX, ResourcePatternType.PREFIXED, AclOperation.DELETE),
        ],
    )
    retention = ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, f"{PREFIX}orders", incremental_configs=[retention])
    assert user_admin.incremental_alter_configs([resource])[resource].result(WAIT) is None
    assert user_admin.delete_topics([f"{PREFIX}orders"], request_timeout=WAIT)[f"{PREFIX}orders"].result(WAIT) is None

    # The audit log: who (the SCRAM user, no API key) and through which door.
    events = audited(access.tenant_id)
    assert [(action, door, name, key) for action, _, door, name, key in events] == [
        ("topic.create", "kafka", USER, ""),
        ("acl.create", "kafka", USER, ""),
        ("topic.create", "kafka", USER, ""),
        ("topic.alter_configs", "kafka", USER, ""),
        ("topic.delete", "kafka", USER, ""),
    ]
    assert [target for action, target, *_ in events if action == "topic.create"] == [f"{PREFIX}orders", f"{PREFIX}auto"]
