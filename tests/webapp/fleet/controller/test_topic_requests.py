"""Topic administration forwarded by brokers: through the real gRPC servicer into the catalog,
with a provisioning job and a push, and Kafka's error code for every way a request fails."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import grpc
import pytest

from grpc_protos.weir.v1 import broker_pb2, controller_pb2, controller_pb2_grpc
from webapp.accounts.actions.keys import KeyOwner, do_create_key
from webapp.accounts.actions.signup import do_sign_up
from webapp.accounts.errors import InvalidInput
from webapp.accounts.identity import Actor
from webapp.accounts.models import ApiKey, Membership, Role, ServiceAccount, Tenant
from webapp.catalog.models import Partition, Topic
from webapp.catalog.topic_names import TENANT_TOPIC_NAME_MAX_LENGTH
from webapp.controller import topic_requests
from webapp.controller.epoch import ControllerFencedError, become_active
from webapp.controller.internal_topics import OFFSETS_TOPIC, ensure_internal_topics
from webapp.controller.service import ControllerService
from webapp.controller.servicer import create_controller_server
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.provisioning import tasks
from webapp.provisioning.models import JobKind, ProvisioningJob, SnapshotKind
from webapp.provisioning.versions import current_versions
from weir.errors import ErrorCode

TOKEN = "controller-test-token"
METADATA = (("x-weir-internal-token", TOKEN),)
TOPIC = broker_pb2.RESOURCE_TYPE_TOPIC
SET = broker_pb2.ALTER_CONFIG_OP_SET
DELETE = broker_pb2.ALTER_CONFIG_OP_DELETE


@dataclass
class Cluster:
    """A tenant with a service account's cluster key, three online brokers, a controller
    serving on loopback; pushes and queued provisioning jobs are recorded."""

    tenant: Tenant
    owner: Membership
    account: ServiceAccount
    key: ApiKey
    service: ControllerService
    stub: controller_pb2_grpc.ControllerStub
    pushes: list[int] = field(default_factory=list)
    queued: list[int] = field(default_factory=list)

    def caller(self, **overrides: str) -> controller_pb2.ForwardedCaller:
        values = {"tenant_id": self.tenant.public_id, "principal": self.account.principal, "api_key": self.key.key_id, **overrides}
        return controller_pb2.ForwardedCaller(**values)

    def create(
        self, *topics: broker_pb2.CreatableTopic, validate_only: bool = False, caller: controller_pb2.ForwardedCaller | None = None
    ) -> list[broker_pb2.TopicResult]:
        request = broker_pb2.CreateTopicsRequest(topics=topics, validate_only=validate_only)
        forwarded = controller_pb2.ForwardedCreateTopicsRequest(caller=caller or self.caller(), request=request)
        return list(self.stub.CreateTopics(forwarded, metadata=METADATA, timeout=30).topics)

    def delete(self, *names: str) -> list[broker_pb2.TopicResult]:
        forwarded = controller_pb2.ForwardedDeleteTopicsRequest(caller=self.caller(), request=broker_pb2.DeleteTopicsRequest(topics=names))
        return list(self.stub.DeleteTopics(forwarded, metadata=METADATA, timeout=30).topics)

    def grow(self, name: str, count: int, validate_only: bool = False) -> broker_pb2.TopicResult:
        request = broker_pb2.CreatePartitionsRequest(topics=[broker_pb2.CreatePartitionsTopic(name=name, count=count)], validate_only=validate_only)
        forwarded = controller_pb2.ForwardedCreatePartitionsRequest(caller=self.caller(), request=request)
        return self.stub.CreatePartitions(forwarded, metadata=METADATA, timeout=30).topics[0]

    def alter(self, *resources: broker_pb2.AlterConfigsResource, validate_only: bool = False) -> list[broker_pb2.ConfigResourceResult]:
        forwarded = controller_pb2.ForwardedAlterConfigsRequest(
            caller=self.caller(), request=broker_pb2.AlterConfigsRequest(resources=resources, validate_only=validate_only)
        )
        return list(self.stub.AlterConfigs(forwarded, metadata=METADATA, timeout=30).resources)

    def topic(self, name: str) -> Topic:
        return Topic.objects.get(tenant=self.tenant, name=name)


def creatable(name: str, partitions: int = 1, replication_factor: int = 1, **configs: str) -> broker_pb2.CreatableTopic:
    entries = [broker_pb2.TopicConfigEntry(name=key.replace("_", "."), value=value) for key, value in configs.items()]
    return broker_pb2.CreatableTopic(name=name, num_partitions=partitions, replication_factor=replication_factor, configs=entries)


def config(name: str, value: str = "", op: int = SET) -> broker_pb2.AlterableConfig:
    return broker_pb2.AlterableConfig(name=name, value=value, op=op)


@pytest.fixture
def cluster(transactional_db: None, settings, monkeypatch) -> Iterator[Cluster]:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    signed_up = do_sign_up("owner", "owner@acme.example", "correct horse battery staple 42", "Acme")
    owner = Actor(tenant=signed_up.tenant, role=Role.OWNER, membership=signed_up.membership)
    # A viewer in the dashboard: on the data plane its cluster key is governed by ACLs alone.
    account = ServiceAccount.objects.create(tenant=signed_up.tenant, name="orders-app", role=Role.VIEWER)
    key = do_create_key(owner, "cluster", KeyOwner(service_account=account), "orders app").key
    for node_id in (1, 2, 3):
        BrokerNode.objects.create(node_id=node_id, host="127.0.0.1", port=19000 + node_id, state=BrokerState.ONLINE)
    queued: list[int] = []
    monkeypatch.setattr(tasks.run_job, "delay", queued.append)
    pushes: list[int] = []
    service = ControllerService(session_timeout_ms=9000, first_epoch=1, push=lambda: pushes.append(1))
    server, port = create_controller_server(service, "127.0.0.1:0", internal_token=TOKEN)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    queued.clear()  # the key's security job
    try:
        yield Cluster(signed_up.tenant, signed_up.membership, account, key, service, controller_pb2_grpc.ControllerStub(channel), pushes, queued)
    finally:
        channel.close()
        server.stop(None)


def codes(results: list[broker_pb2.TopicResult] | list[broker_pb2.ConfigResourceResult]) -> list[int]:
    return [result.error_code for result in results]


# ------------------------------------------------------------------ CreateTopics


def test_create_lands_in_the_catalog_with_a_job_and_a_push(cluster: Cluster) -> None:
    [result] = cluster.create(creatable("orders", 3, 2, retention_ms="60000"))
    assert (result.error_code, result.error_message) == (ErrorCode.NO_ERROR, "")
    topic = cluster.topic("orders")
    assert (result.topic_id, result.num_partitions, result.replication_factor) == (str(topic.topic_id), 3, 2)
    assert topic.configs == {"retention.ms": "60000"}
    partitions = list(Partition.objects.filter(topic=topic).order_by("index"))
    assert [partition.index for partition in partitions] == [0, 1, 2]
    assert all(len(set(partition.replicas)) == 2 for partition in partitions)
    job = ProvisioningJob.objects.get(tenant=cluster.tenant, kind=JobKind.CREATE_TOPIC)
    assert job.target == "orders"
    assert cluster.queued == [job.pk]
    assert cluster.pushes == [1]


def test_minus_one_counts_take_the_deployment_defaults(cluster: Cluster, settings) -> None:  # type: ignore[no-untyped-def]
    settings.WEIR_DEFAULT_NUM_PARTITIONS = 4
    [default_rf] = cluster.create(creatable("orders", -1, -1))
    assert (default_rf.error_code, default_rf.num_partitions, default_rf.replication_factor) == (ErrorCode.NO_ERROR, 4, 3)
    settings.WEIR_DEFAULT_REPLICATION_FACTOR = 2
    settings.WEIR_DEFAULT_NUM_PARTITIONS = 1000  # capped at the plan's per-topic limit
    [configured] = cluster.create(creatable("payments", -1, -1))
    assert (configured.error_code, configured.num_partitions, configured.replication_factor) == (
        ErrorCode.NO_ERROR,
        cluster.tenant.limits.max_partitions_per_topic,
        2,
    )


def test_validate_only_answers_like_a_creation_and_writes_nothing(cluster: Cluster) -> None:
    version = current_versions()[SnapshotKind.PARTITIONS]
    valid, too_many_replicas = cluster.create(creatable("orders", 3, 3), creatable("payments", 1, 4), validate_only=True)
    assert (valid.error_code, valid.num_partitions, valid.replication_factor) == (ErrorCode.NO_ERROR, 3, 3)
    assert too_many_replicas.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert not Topic.objects.exists() and not Partition.objects.exists() and not ProvisioningJob.objects.filter(kind=JobKind.CREATE_TOPIC).exists()
    assert current_versions()[SnapshotKind.PARTITIONS] == version
    assert (cluster.queued, cluster.pushes) == ([], [])


@pytest.mark.parametrize(
    ("topic", "code", "message_part"),
    [
        (creatable("bad name!"), ErrorCode.INVALID_TOPIC_EXCEPTION, "only ASCII letters"),
        (creatable("__consumer_offsets"), ErrorCode.INVALID_TOPIC_EXCEPTION, "reserved for internal topics"),
        # The SDK's and CLI's creations: the name must fit a partition directory with the tenant's prefix.
        (
            creatable("a" * (TENANT_TOPIC_NAME_MAX_LENGTH + 1)),
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"at most {TENANT_TOPIC_NAME_MAX_LENGTH} characters: the tenant prefix and partition number must fit a 255-byte directory name",
        ),
        (creatable("orders", 0), ErrorCode.INVALID_PARTITIONS, "at least 1 partition, not 0"),
        (creatable("orders", 1, 0), ErrorCode.INVALID_REPLICATION_FACTOR, "at least 1, not 0"),
        (creatable("orders", 1, 4), ErrorCode.INVALID_REPLICATION_FACTOR, "available brokers (3)"),
        (creatable("orders", retention_ms="soon"), ErrorCode.INVALID_CONFIG, "retention.ms"),
        (creatable("orders", no_such_config="1"), ErrorCode.INVALID_CONFIG, "no.such.config"),
        (creatable("orders", 101), ErrorCode.POLICY_VIOLATION, "1 to 100 partitions"),
    ],
)
def test_create_refusals_carry_kafka_codes(cluster: Cluster, topic: broker_pb2.CreatableTopic, code: int, message_part: str) -> None:
    [result] = cluster.create(topic)
    assert result.error_code == code
    assert message_part in result.error_message
    assert not Topic.objects.filter(tenant=cluster.tenant).exists()
    assert cluster.pushes == []


def test_existing_topic_and_names_given_twice(cluster: Cluster) -> None:
    cluster.create(creatable("orders"))
    existing, first, second = cluster.create(creatable("orders", 1, 9), creatable("twice"), creatable("twice"))
    assert existing.error_code == ErrorCode.TOPIC_ALREADY_EXISTS and "already exists" in existing.error_message
    assert codes([first, second]) == [ErrorCode.INVALID_REQUEST] * 2
    assert not Topic.objects.filter(name="twice").exists()


def test_plan_totals_are_a_policy_violation(cluster: Cluster) -> None:
    Tenant.objects.filter(pk=cluster.tenant.pk).update(plan="free")  # 30 partitions in all, 6 per topic
    filled = cluster.create(*(creatable(f"t{index}", 6) for index in range(5)))
    assert codes(filled) == [ErrorCode.NO_ERROR] * 5
    [over] = cluster.create(creatable("one-more"))
    assert over.error_code == ErrorCode.POLICY_VIOLATION and "30 partitions" in over.error_message


def test_a_caller_without_a_tenant_may_not_administer_topics(cluster: Cluster) -> None:
    [result] = cluster.create(creatable("orders"), caller=controller_pb2.ForwardedCaller(principal="User:internal"))
    assert result.error_code == ErrorCode.INVALID_REQUEST
    assert "needs a tenant's API key" in result.error_message


def test_caller_resolution(cluster: Cluster) -> None:
    owner_actor = Actor(tenant=cluster.tenant, role=Role.OWNER, membership=cluster.owner)
    member_key = do_create_key(owner_actor, "cluster", KeyOwner(membership=cluster.owner), "mine").key
    [by_member] = cluster.create(creatable("orders"), caller=cluster.caller(principal=cluster.owner.principal, api_key=member_key.key_id))
    assert by_member.error_code == ErrorCode.NO_ERROR
    assert ProvisioningJob.objects.get(kind=JobKind.CREATE_TOPIC).created_by == cluster.owner.user  # the audit names the member
    [stranger] = cluster.create(creatable("a"), caller=cluster.caller(principal="User:sa-nobody"))
    [wrong_key] = cluster.create(creatable("b"), caller=cluster.caller(api_key=member_key.key_id))
    ApiKey.objects.filter(pk=cluster.key.pk).update(revoked_at="2026-01-01T00:00:00Z")
    [revoked] = cluster.create(creatable("c"))
    assert codes([stranger, wrong_key, revoked]) == [ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST, ErrorCode.SASL_AUTHENTICATION_FAILED]


def test_a_scram_user_acts_as_itself_and_is_audited(cluster: Cluster) -> None:
    from webapp.accounts.actions.scram_users import ScramUpsertion, do_alter_scram_users
    from webapp.audit.models import AuditEvent

    name = "d" * 128  # the longest SCRAM user name: its principal fits the audit log
    [result], _ = do_alter_scram_users(cluster.tenant, [], [ScramUpsertion(name, "SCRAM-SHA-256", 4096, b"salt", b"x" * 32)], principal="User:test")
    assert result.error_code == 0
    scram_caller = controller_pb2.ForwardedCaller(
        tenant_id=cluster.tenant.public_id, principal=f"User:{name}", scram_user=name, door="kafka", client_host="127.0.0.1"
    )
    [created] = cluster.create(creatable("orders"), caller=scram_caller)
    assert created.error_code == ErrorCode.NO_ERROR
    event = AuditEvent.objects.get(tenant=cluster.tenant, action="topic.create")
    assert (event.actor_principal, event.actor_name, event.api_key_id, event.door, event.client_ip) == (f"User:{name}", name, "", "kafka", "127.0.0.1")
    assert ProvisioningJob.objects.get(kind=JobKind.CREATE_TOPIC).created_by is None  # no Django user behind it
    [posing] = cluster.create(creatable("a"), caller=cluster.caller(scram_user=name))  # a service account's principal and key
    [ghost] = cluster.create(
        creatable("b"), caller=controller_pb2.ForwardedCaller(tenant_id=cluster.tenant.public_id, principal="User:ghost", scram_user="ghost")
    )
    assert codes([posing, ghost]) == [ErrorCode.INVALID_REQUEST, ErrorCode.SASL_AUTHENTICATION_FAILED]
    assert "was deleted" in ghost.error_message


def test_forwarded_calls_need_the_internal_token(cluster: Cluster) -> None:
    forwarded = controller_pb2.ForwardedCreateTopicsRequest(caller=cluster.caller(), request=broker_pb2.CreateTopicsRequest(topics=[creatable("orders")]))
    with pytest.raises(grpc.RpcError) as raised:
        cluster.stub.CreateTopics(forwarded, metadata=(("x-weir-internal-token", "wrong"),), timeout=30)
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert not Topic.objects.exists()


def test_a_superseded_controller_answers_not_controller(cluster: Cluster) -> None:
    become_active()
    with pytest.raises(ControllerFencedError):
        cluster.service.check_still_active()
    [result] = cluster.create(creatable("orders"))
    assert result.error_code == ErrorCode.NOT_CONTROLLER
    assert not Topic.objects.exists()


# ------------------------------------------------------------------ DeleteTopics


def test_delete_removes_the_topic_with_a_job_and_a_push(cluster: Cluster) -> None:
    cluster.create(creatable("orders", 2))
    topic_id = str(cluster.topic("orders").topic_id)
    deleted, unknown = cluster.delete("orders", "missing")
    assert (deleted.error_code, deleted.topic_id, deleted.num_partitions) == (ErrorCode.NO_ERROR, topic_id, 2)
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and "'missing'" in unknown.error_message
    assert not Topic.objects.filter(tenant=cluster.tenant).exists() and not Partition.objects.exists()
    assert ProvisioningJob.objects.filter(kind=JobKind.DELETE_TOPIC, target="orders").count() == 1
    assert cluster.pushes == [1, 1]


def test_internal_topics_cannot_be_deleted_by_a_tenant(cluster: Cluster) -> None:
    ensure_internal_topics(controller_epoch=cluster.service.controller_epoch)
    [result] = cluster.delete(OFFSETS_TOPIC)
    assert result.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert Topic.objects.filter(tenant__isnull=True, name=OFFSETS_TOPIC).exists()


# ------------------------------------------------------------------ CreatePartitions


def test_create_partitions_grows_the_topic(cluster: Cluster) -> None:
    cluster.create(creatable("orders", 1, 2))
    validated = cluster.grow("orders", 3, validate_only=True)
    assert (validated.error_code, validated.num_partitions) == (ErrorCode.NO_ERROR, 3)
    assert cluster.topic("orders").partition_count == 1
    grown = cluster.grow("orders", 3)
    assert (grown.error_code, grown.num_partitions, grown.replication_factor) == (ErrorCode.NO_ERROR, 3, 2)
    assert list(Partition.objects.filter(topic__name="orders").order_by("index").values_list("index", flat=True)) == [0, 1, 2]
    assert ProvisioningJob.objects.filter(kind=JobKind.CREATE_PARTITIONS, target="orders").count() == 1
    assert cluster.pushes == [1, 1]


@pytest.mark.parametrize(
    ("name", "count", "code", "message_part"),
    [
        ("orders", 2, ErrorCode.INVALID_PARTITIONS, "has 2 partitions"),
        ("orders", 1, ErrorCode.INVALID_PARTITIONS, "can only be added"),
        ("orders", 101, ErrorCode.POLICY_VIOLATION, "at most 100 partitions"),
        ("missing", 3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "does not exist"),
    ],
)
def test_create_partitions_refusals(cluster: Cluster, name: str, count: int, code: int, message_part: str) -> None:
    cluster.create(creatable("orders", 2))
    result = cluster.grow(name, count)
    assert result.error_code == code and message_part in result.error_message
    assert cluster.topic("orders").partition_count == 2


# ------------------------------------------------------------------ AlterConfigs


def test_incremental_and_replacing_config_changes(cluster: Cluster) -> None:
    cluster.create(creatable("orders", retention_ms="60000", cleanup_policy="compact"))
    [incremental] = cluster.alter(
        broker_pb2.AlterConfigsResource(
            type=TOPIC, name="orders", incremental=True, configs=[config("segment.ms", "3600000"), config("retention.ms", op=DELETE)]
        )
    )
    assert incremental.error_code == ErrorCode.NO_ERROR
    assert cluster.topic("orders").configs == {"cleanup.policy": "compact", "segment.ms": "3600000"}
    [replaced] = cluster.alter(broker_pb2.AlterConfigsResource(type=TOPIC, name="orders", configs=[config("retention.ms", "120000")]))
    assert replaced.error_code == ErrorCode.NO_ERROR
    assert cluster.topic("orders").configs == {"retention.ms": "120000"}
    assert ProvisioningJob.objects.filter(kind=JobKind.ALTER_TOPIC_CONFIGS, target="orders").count() == 2
    assert len(cluster.pushes) == 3


def test_validate_only_alter_changes_nothing(cluster: Cluster) -> None:
    cluster.create(creatable("orders"))
    [result] = cluster.alter(
        broker_pb2.AlterConfigsResource(type=TOPIC, name="orders", incremental=True, configs=[config("retention.ms", "1000")]), validate_only=True
    )
    assert result.error_code == ErrorCode.NO_ERROR
    assert cluster.topic("orders").configs == {}
    assert not ProvisioningJob.objects.filter(kind=JobKind.ALTER_TOPIC_CONFIGS).exists()
    assert cluster.pushes == [1]


@pytest.mark.parametrize(
    ("resource", "code", "message_part"),
    [
        (
            broker_pb2.AlterConfigsResource(type=broker_pb2.RESOURCE_TYPE_BROKER, name="1", configs=[config("num.partitions", "3")]),
            ErrorCode.INVALID_REQUEST,
            "broker settings",
        ),
        (
            broker_pb2.AlterConfigsResource(type=TOPIC, name="orders", configs=[config("retention.ms", op=DELETE)]),
            ErrorCode.INVALID_REQUEST,
            "only valid in an incremental",
        ),
        (
            broker_pb2.AlterConfigsResource(type=TOPIC, name="orders", incremental=True, configs=[config("retention.ms", "1"), config("retention.ms", "2")]),
            ErrorCode.INVALID_REQUEST,
            "more than once",
        ),
        (
            broker_pb2.AlterConfigsResource(type=TOPIC, name="orders", incremental=True, configs=[config("retention.ms", "soon")]),
            ErrorCode.INVALID_CONFIG,
            "retention.ms",
        ),
        (
            broker_pb2.AlterConfigsResource(type=TOPIC, name="orders", incremental=True, configs=[config("no.such.config", "1")]),
            ErrorCode.INVALID_CONFIG,
            "no.such.config",
        ),
        (
            broker_pb2.AlterConfigsResource(type=TOPIC, name="missing", incremental=True, configs=[config("retention.ms", "1")]),
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "'missing'",
        ),
    ],
)
def test_alter_configs_refusals(cluster: Cluster, resource: broker_pb2.AlterConfigsResource, code: int, message_part: str) -> None:
    cluster.create(creatable("orders", retention_ms="60000"))
    [result] = cluster.alter(resource)
    assert result.error_code == code and message_part in result.error_message
    assert cluster.topic("orders").configs == {"retention.ms": "60000"}
    assert cluster.pushes == [1]


# ------------------------------------------------------------------ error mapping


def test_the_first_failing_field_in_kafka_order_decides_the_code() -> None:
    error = InvalidInput({"configs": {"retention.ms": ["Bad value."]}, "replication_factor": ["Too many."]})
    mapped = topic_requests._request_error(error)
    assert mapped.code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert mapped.message == "retention.ms: Bad value. Too many."
    assert topic_requests._request_error(error, plan_fields={"replication_factor"}).code == ErrorCode.POLICY_VIOLATION
