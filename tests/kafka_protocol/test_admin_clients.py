"""Stock Kafka admin clients against a real cluster (controller + brokers + database) over SASL PLAIN.

confluent-kafka's AdminClient (librdkafka) and kafka-python's KafkaAdminClient administer a
tenant's topics through the brokers' Kafka listeners; the brokers forward topic changes to the
controller, which applies them to the catalog like the REST API. Another tenant's client never
sees, describes or deletes them.
"""

from __future__ import annotations

import pytest
from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.support.real_cluster import RealCluster, TenantAccess
from webapp.catalog.models import Partition
from weir import ElectionType as WeirElectionType
from weir import TopicPartition as WeirTopicPartition
from weir.admin import AdminClient as WeirAdminClient
from weir.producer import Producer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(180)]

CLIENT_TIMEOUT_SECONDS = 30.0


@pytest.fixture
def cluster(start_cluster) -> RealCluster:  # type: ignore[no-untyped-def]
    return start_cluster(broker_count=2)


def kafka_config(cluster: RealCluster, access: TenantAccess) -> dict[str, object]:
    return {
        "bootstrap.servers": cluster.kafka_bootstrap_servers(),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": access.api_key,
        "sasl.password": access.api_secret,
        "socket.timeout.ms": 10000,
    }


def result(future):  # type: ignore[no-untyped-def]
    return future.result(timeout=CLIENT_TIMEOUT_SECONDS)


def error_code_of(future) -> int:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaException) as raised:
        result(future)
    return int(raised.value.args[0].code())


def test_confluent_admin_client_administers_a_tenants_topics(cluster: RealCluster) -> None:
    access = cluster.create_tenant("Admins")
    admin = AdminClient(kafka_config(cluster, access))

    result(admin.create_topics([NewTopic("orders", num_partitions=2, replication_factor=2, config={"retention.ms": "3600000"})])["orders"])
    cluster.wait_until(lambda: "orders" in admin.list_topics(timeout=10).topics, "the new topic in the Kafka clients' metadata")
    duplicate = admin.create_topics([NewTopic("orders", num_partitions=1, replication_factor=1)])["orders"]
    assert error_code_of(duplicate) == 36  # TOPIC_ALREADY_EXISTS

    resource = ConfigResource(ConfigResource.Type.TOPIC, "orders")
    configs = result(admin.describe_configs([resource])[resource])
    assert configs["retention.ms"].value == "3600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["cleanup.policy"].source == ConfigSource.DEFAULT_CONFIG.value

    appended = ConfigResource(
        ConfigResource.Type.TOPIC,
        "orders",
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    result(admin.incremental_alter_configs([appended])[appended])

    def described() -> dict[str, str]:
        entries = result(admin.describe_configs([resource])[resource])
        return {name: entry.value for name, entry in entries.items()}

    cluster.wait_until(lambda: described()["cleanup.policy"] == "delete,compact" and described()["retention.ms"] != "3600000", "the incremental change applied")

    replaced = ConfigResource(ConfigResource.Type.TOPIC, "orders", set_config={"segment.ms": "7200000"})
    result(admin.alter_configs([replaced])[replaced])
    cluster.wait_until(
        lambda: described()["segment.ms"] == "7200000" and described()["cleanup.policy"] == "delete", "the legacy change replaced every override"
    )

    result(admin.create_partitions([NewPartitions("orders", 4)])["orders"])
    cluster.wait_until(lambda: len(admin.list_topics("orders", timeout=10).topics["orders"].partitions) == 4, "four partitions in the metadata")

    # librdkafka describes the cluster with Metadata (its DescribeCluster is the Java client's); the
    # DescribeCluster handler itself is covered in test_admin_handlers.
    cluster_description = result(admin.describe_cluster())
    assert {node.id for node in cluster_description.nodes} == set(cluster.brokers)
    assert {node.port for node in cluster_description.nodes} == {broker.kafka_port for broker in cluster.brokers.values()}

    result(admin.delete_topics(["orders"])["orders"])
    cluster.wait_until(lambda: "orders" not in admin.list_topics(timeout=10).topics, "the deleted topic gone from the metadata")


def test_delete_records_raises_the_log_start_offset_seen_by_every_door(cluster: RealCluster) -> None:
    access = cluster.create_tenant("Records")
    cluster.create_topic("events", 1, 2)
    producer = Producer(cluster.client_config(acks="all"))
    for index in range(10):
        producer.produce("events", value=f"event-{index}".encode(), partition=0)
    assert producer.flush(CLIENT_TIMEOUT_SECONDS) == 0
    admin = AdminClient(kafka_config(cluster, access))

    deleted = result(admin.delete_records([TopicPartition("events", 0, 4)])[TopicPartition("events", 0, 4)])
    assert deleted.low_watermark == 4
    leader = cluster.leader_of("events", 0)
    assert cluster.hosted(leader, "events")[0].log_start_offset == 4
    follower = next(node for node in cluster.brokers if node != leader)
    cluster.wait_until(lambda: cluster.hosted(follower, "events")[0].log_start_offset == 4, "the follower's log start following the leader's")
    beyond = TopicPartition("events", 0, 11)
    assert error_code_of(admin.delete_records([beyond])[beyond]) == 1  # OFFSET_OUT_OF_RANGE


def test_kafka_python_admin_client_creates_and_deletes_topics(cluster: RealCluster) -> None:
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as KafkaPythonNewTopic

    access = cluster.create_tenant("Pythonic")
    admin = KafkaAdminClient(
        bootstrap_servers=cluster.kafka_bootstrap_servers().split(","),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username=access.api_key,
        sasl_plain_password=access.api_secret,
        request_timeout_ms=30000,
        # kafka-python probes the broker's API versions within 2 s by default, then reports NoBrokersAvailable:
        # too short for a SASL handshake on a machine loaded far beyond its cores.
        api_version_auto_timeout_ms=30000,
    )
    try:
        created = admin.create_topics([KafkaPythonNewTopic("clicks", num_partitions=2, replication_factor=2)], timeout_ms=30000)
        assert all(error_code == 0 for _, error_code, *_ in created.topic_errors)
        cluster.wait_until(lambda: "clicks" in admin.list_topics(), "the topic listed by kafka-python")
        deleted = admin.delete_topics(["clicks"], timeout_ms=30000)
        assert all(error_code == 0 for _, error_code, *_ in deleted.topic_error_codes)
        cluster.wait_until(lambda: "clicks" not in admin.list_topics(), "the topic gone for kafka-python")
    finally:
        admin.close()


def test_another_tenant_cannot_see_describe_or_delete_a_tenants_topic(cluster: RealCluster) -> None:
    owner = cluster.create_tenant("Owner")
    cluster.create_topic("private", 1, 2)
    other = cluster.create_tenant("Other")
    owners_admin = AdminClient(kafka_config(cluster, owner))
    others_admin = AdminClient(kafka_config(cluster, other))

    assert "private" not in others_admin.list_topics(timeout=10).topics
    resource = ConfigResource(ConfigResource.Type.TOPIC, "private")
    assert error_code_of(others_admin.describe_configs([resource])[resource]) == 3  # UNKNOWN_TOPIC_OR_PARTITION
    assert error_code_of(others_admin.delete_topics(["private"])["private"]) == 3
    records = TopicPartition("private", 0, 0)
    # librdkafka finds no leader for a topic the tenant cannot see, so the request never leaves it (a local error).
    assert error_code_of(others_admin.delete_records([records])[records]) in (3, KafkaError._NOENT, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION)

    assert "private" in owners_admin.list_topics(timeout=10).topics
    assert result(owners_admin.describe_configs([resource])[resource])["cleanup.policy"].value == "delete"

    # ElectLeaders (key 43): another tenant's topic is unknown; the owner's preferred replica leads already.
    partition = TopicPartition("private", 0)
    assert result(others_admin.elect_leaders(ElectionType.PREFERRED, [partition]))[partition].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert result(owners_admin.elect_leaders(ElectionType.PREFERRED, [partition]))[partition].code() == KafkaError.ELECTION_NOT_NEEDED
    assert result(owners_admin.elect_leaders(ElectionType.UNCLEAN, None)) == {}
    # The SDK's call over gRPC, after the catalog says the other replica leads (as after a failover):
    # the preferred replica is elected at a higher leader epoch, which the brokers take from the push.
    owners_partition = Partition.objects.filter(topic__tenant__public_id=owner.tenant_id, topic__name="private", index=0)
    row = owners_partition.get()
    preferred, other_replica = row.replicas
    owners_partition.update(leader=other_replica)
    owner_config = cluster.client_config(**{"sasl.username": owner.api_key, "sasl.password": owner.api_secret})
    with WeirAdminClient(owner_config) as weir_admin:
        elected = weir_admin.elect_leaders(WeirElectionType.PREFERRED, [WeirTopicPartition("private", 0)]).result(timeout=CLIENT_TIMEOUT_SECONDS)
    assert elected == {WeirTopicPartition("private", 0): None}
    row_after = owners_partition.get()
    assert (row_after.leader, row_after.leader_epoch) == (preferred, row.leader_epoch + 1)


def test_confluent_admin_client_creates_describes_and_deletes_acls_that_brokers_enforce(cluster: RealCluster) -> None:
    access = cluster.create_tenant("Guarded")
    cluster.create_topic("audit", 1, 2)
    admin = AdminClient(kafka_config(cluster, access))
    deny = AclBinding(ResourceType.TOPIC, "audit", ResourcePatternType.LITERAL, access.principal, "*", AclOperation.DESCRIBE_CONFIGS, AclPermissionType.DENY)
    prefixed = AclBinding(ResourceType.TOPIC, "audit-", ResourcePatternType.PREFIXED, access.principal, "*", AclOperation.READ, AclPermissionType.ALLOW)
    futures = admin.create_acls([deny, prefixed], request_timeout=CLIENT_TIMEOUT_SECONDS)
    assert all(result(future) is None for future in futures.values())
    # Kafka's rule: a principal no identity has (yet) is accepted (it matches no one); a malformed one is refused.
    stranger = AclBinding(ResourceType.TOPIC, "audit", ResourcePatternType.LITERAL, "User:sa-nobody", "*", AclOperation.READ, AclPermissionType.ALLOW)
    assert result(admin.create_acls([stranger])[stranger]) is None
    malformed = AclBinding(ResourceType.TOPIC, "audit", ResourcePatternType.LITERAL, "sa-nobody", "*", AclOperation.READ, AclPermissionType.ALLOW)
    with pytest.raises(KafkaException):
        result(admin.create_acls([malformed])[malformed])

    every_topic_acl = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)
    described = result(admin.describe_acls(every_topic_acl, request_timeout=CLIENT_TIMEOUT_SECONDS))
    assert {(binding.name, binding.operation, binding.permission_type) for binding in described} >= {
        ("audit", AclOperation.DESCRIBE_CONFIGS, AclPermissionType.DENY),
        ("audit-", AclOperation.READ, AclPermissionType.ALLOW),
    }

    # The brokers received the new ACLs: the DENY beats the tenant's ALLOW ALL on every topic.
    resource = ConfigResource(ConfigResource.Type.TOPIC, "audit")
    cluster.wait_until(lambda: _describe_configs_code(admin, resource) == 29, "DescribeConfigs refused by the new DENY (TOPIC_AUTHORIZATION_FAILED)")

    deny_filter = AclBindingFilter(
        ResourceType.TOPIC, "audit", ResourcePatternType.LITERAL, access.principal, "*", AclOperation.DESCRIBE_CONFIGS, AclPermissionType.DENY
    )
    deleted = result(admin.delete_acls([deny_filter], request_timeout=CLIENT_TIMEOUT_SECONDS)[deny_filter])
    assert [(binding.name, binding.operation) for binding in deleted] == [("audit", AclOperation.DESCRIBE_CONFIGS)]
    cluster.wait_until(lambda: _describe_configs_code(admin, resource) == 0, "DescribeConfigs allowed again once the DENY is deleted")


def _describe_configs_code(admin: AdminClient, resource: ConfigResource) -> int:
    try:
        result(admin.describe_configs([resource])[resource])
    except KafkaException as error:
        return int(error.args[0].code())
    return 0
