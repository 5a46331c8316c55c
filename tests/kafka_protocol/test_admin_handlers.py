"""The admin handlers against a real in-process broker: topics and configs through Kafka's messages."""

from __future__ import annotations

import datetime
import uuid

import pytest

from broker_nodes.security.access import CallContext, CallerKind, anonymous_context
from broker_nodes.security.authorizer import AclEntry, Operation, PatternType, Permission, ResourceType
from grpc_protos.weir.v1 import controller_pb2
from tests.broker_nodes.server.helpers import batch
from tests.kafka_protocol.admin_calls import call_handler, request_module
from tests.support.in_process_broker import InProcessBroker
from weir.errors import ErrorCode
from weir.topic_config import TOPIC_CONFIGS

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37
DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44
DELETE_RECORDS, DESCRIBE_CLUSTER = 21, 60
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
TOPIC, BROKER = 2, 4
TIMEOUT = datetime.timedelta(seconds=5)
ANONYMOUS = anonymous_context("127.0.0.1")


@pytest.fixture
def broker(tmp_path):
    server = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1", "num.partitions": "3"}).start()
    yield server.broker
    server.stop()


def create(broker, version, *topics, call=ANONYMOUS, validate_only=False):
    schema = request_module(CREATE_TOPICS, version)
    creatable = tuple(
        schema.CreatableTopic(
            name=name,
            num_partitions=partitions,
            replication_factor=1,
            assignments=(),
            configs=tuple(schema.CreatableTopicConfig(name=key, value=value) for key, value in configs.items()),
        )
        for name, partitions, configs in topics
    )
    request = schema.CreateTopicsRequest(topics=creatable, timeout=TIMEOUT, validate_only=validate_only)
    return call_handler(broker, call, CREATE_TOPICS, version, request).topics


def describe_configs(broker, version, resource_type, name, keys=None, call=ANONYMOUS, synonyms=False):
    schema = request_module(DESCRIBE_CONFIGS, version)
    fields = {"include_documentation": True} if version >= 3 else {}
    request = schema.DescribeConfigsRequest(
        resources=(schema.DescribeConfigsResource(resource_type=resource_type, resource_name=name, configuration_keys=keys),),
        include_synonyms=synonyms,
        **fields,
    )
    return call_handler(broker, call, DESCRIBE_CONFIGS, version, request).results[0]


def incremental(broker, name, *operations, version=1, call=ANONYMOUS):
    schema = request_module(INCREMENTAL_ALTER_CONFIGS, version)
    configs = tuple(schema.AlterableConfig(name=key, config_operation=op, value=value) for key, op, value in operations)
    request = schema.IncrementalAlterConfigsRequest(
        resources=(schema.AlterConfigsResource(resource_type=TOPIC, resource_name=name, configs=configs),), validate_only=False
    )
    return call_handler(broker, call, INCREMENTAL_ALTER_CONFIGS, version, request).responses[0]


def tenant_client(*acls) -> CallContext:
    return CallContext("tn-a", "User:sa-1", "127.0.0.1", CallerKind.CLIENT, tuple(acls))


@pytest.mark.parametrize("version", [2, 5, 7])
def test_create_topics_creates_them_and_answers_per_topic(broker, version):
    created, duplicate = create(broker, version, ("orders", 2, {"retention.ms": "60000"}), ("orders-dup", -1, {}))
    assert (created.error_code, created.name) == (0, "orders")
    assert duplicate.error_code == 0  # -1: num.partitions of the broker
    assert broker.registry.require("orders-dup").partitions == 3
    if version >= 5:
        assert created.num_partitions == 2 and created.replication_factor == 1
        configs = {entry.name: entry for entry in created.configs}
        assert configs["retention.ms"].value == "60000" and configs["retention.ms"].config_source == 1
    if version >= 7:
        assert str(created.topic_id) == broker.registry.require("orders").topic_id
    again = create(broker, version, ("orders", 2, {}))[0]
    assert again.error_code == ErrorCode.TOPIC_ALREADY_EXISTS and again.error_message


def test_create_topics_validate_only_creates_nothing_and_bad_configs_are_refused(broker):
    assert create(broker, 7, ("checked", 1, {}), validate_only=True)[0].error_code == 0
    assert broker.registry.get("checked") is None
    bad = create(broker, 7, ("bad", 1, {"retention.ms": "soon"}))[0]
    assert bad.error_code == ErrorCode.INVALID_CONFIG and "retention.ms" in bad.error_message


def test_create_topics_with_a_name_twice_answers_invalid_request_for_each(broker):
    results = create(broker, 5, ("twice", 1, {}), ("twice", 1, {}))
    assert [result.error_code for result in results] == [ErrorCode.INVALID_REQUEST] * 2
    assert broker.registry.get("twice") is None


def test_a_tenant_without_a_controller_gets_policy_violation(broker):
    result = create(broker, 7, ("orders", 1, {}), call=tenant_client())[0]
    assert result.error_code == ErrorCode.POLICY_VIOLATION


@pytest.mark.parametrize("version", [1, 4, 6])
def test_delete_topics_by_name_and_by_id(broker, version):
    create(broker, 7, ("first", 1, {}), ("second", 1, {}))
    schema = request_module(DELETE_TOPICS, version)
    if version >= 6:
        second_id = uuid.UUID(broker.registry.require("second").topic_id)
        topics = (schema.DeleteTopicState(name="first", topic_id=uuid.UUID(int=0)), schema.DeleteTopicState(name=None, topic_id=second_id))
        unknown = (schema.DeleteTopicState(name=None, topic_id=uuid.uuid4()),)
        request, missing = schema.DeleteTopicsRequest(topics=topics, timeout=TIMEOUT), schema.DeleteTopicsRequest(topics=unknown, timeout=TIMEOUT)
    else:
        request = schema.DeleteTopicsRequest(topic_names=("first", "second"), timeout=TIMEOUT)
        missing = schema.DeleteTopicsRequest(topic_names=("never",), timeout=TIMEOUT)
    results = call_handler(broker, ANONYMOUS, DELETE_TOPICS, version, request).responses
    assert [(result.name, result.error_code) for result in results] == [("first", 0), ("second", 0)]
    assert broker.registry.get("first") is None and broker.registry.get("second") is None
    gone = call_handler(broker, ANONYMOUS, DELETE_TOPICS, version, missing).responses[0]
    assert gone.error_code == (ErrorCode.UNKNOWN_TOPIC_ID if version >= 6 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


@pytest.mark.parametrize("version", [0, 3])
def test_create_partitions_grows_a_topic_and_refuses_shrinking(broker, version):
    create(broker, 7, ("orders", 2, {}))
    schema = request_module(CREATE_PARTITIONS, version)

    def grow(count):
        topic = schema.CreatePartitionsTopic(name="orders", count=count, assignments=None)
        request = schema.CreatePartitionsRequest(topics=(topic,), timeout=TIMEOUT, validate_only=False)
        return call_handler(broker, ANONYMOUS, CREATE_PARTITIONS, version, request).results[0]

    assert grow(4).error_code == 0
    assert broker.registry.require("orders").partitions == 4
    assert grow(3).error_code == ErrorCode.INVALID_PARTITIONS


@pytest.mark.parametrize("version", [1, 3, 4])
def test_describe_configs_of_a_topic_gives_sources_types_and_synonyms(broker, version):
    create(broker, 7, ("orders", 1, {"cleanup.policy": "compact"}))
    result = describe_configs(broker, version, TOPIC, "orders", synonyms=True)
    assert result.error_code == 0
    entries = {entry.name: entry for entry in result.configs}
    policy = entries["cleanup.policy"]
    assert (policy.value, policy.config_source) == ("compact", 1)
    assert [(synonym.name, synonym.value, synonym.source) for synonym in policy.synonyms] == [
        ("cleanup.policy", "compact", 1),
        ("log.cleanup.policy", "delete", 5),
    ]
    assert entries["retention.ms"].config_source == 5  # DEFAULT_CONFIG
    if version >= 3:
        assert policy.config_type == 7 and policy.documentation  # LIST
    only = describe_configs(broker, version, TOPIC, "orders", keys=("retention.ms",))
    assert [entry.name for entry in only.configs] == ["retention.ms"]


def test_describe_configs_of_the_broker_and_of_unknown_or_forbidden_resources(broker):
    node = describe_configs(broker, 4, BROKER, str(broker.config.node_id))
    assert node.error_code == 0 and node.configs and all(entry.read_only for entry in node.configs)
    assert describe_configs(broker, 4, TOPIC, "missing").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    forbidden = describe_configs(broker, 4, TOPIC, "orders", call=tenant_client())
    assert forbidden.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert describe_configs(broker, 4, BROKER, "1", call=tenant_client()).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


@pytest.mark.parametrize("version", [0, 2])
def test_alter_configs_replaces_every_override(broker, version):
    create(broker, 7, ("orders", 1, {"retention.ms": "60000", "cleanup.policy": "compact"}))
    schema = request_module(ALTER_CONFIGS, version)
    resource = schema.AlterConfigsResource(resource_type=TOPIC, resource_name="orders", configs=(schema.AlterableConfig(name="retention.ms", value="120000"),))
    result = call_handler(broker, ANONYMOUS, ALTER_CONFIGS, version, schema.AlterConfigsRequest(resources=(resource,), validate_only=False)).responses[0]
    assert (result.error_code, result.resource_name) == (0, "orders")
    assert dict(broker.registry.require("orders").configs) == {"retention.ms": "120000"}
    broker_resource = schema.AlterConfigsResource(resource_type=BROKER, resource_name="1", configs=(schema.AlterableConfig(name="num.partitions", value="9"),))
    refused = call_handler(broker, ANONYMOUS, ALTER_CONFIGS, version, schema.AlterConfigsRequest(resources=(broker_resource,), validate_only=False))
    assert refused.responses[0].error_code == ErrorCode.INVALID_REQUEST


def test_incremental_alter_configs_sets_deletes_appends_and_subtracts(broker):
    create(broker, 7, ("orders", 1, {"retention.ms": "60000"}))
    assert incremental(broker, "orders", ("segment.ms", 0, "3600000"), ("retention.ms", 1, None)).error_code == 0
    assert dict(broker.registry.require("orders").configs) == {"segment.ms": "3600000"}
    assert incremental(broker, "orders", ("cleanup.policy", 2, "compact")).error_code == 0
    assert broker.registry.require("orders").configs["cleanup.policy"] == "delete,compact"
    assert incremental(broker, "orders", ("cleanup.policy", 3, "delete"), version=0).error_code == 0
    assert broker.registry.require("orders").configs["cleanup.policy"] == "compact"
    not_a_list = incremental(broker, "orders", ("retention.ms", 2, "5"))
    assert not_a_list.error_code == ErrorCode.INVALID_CONFIG and "LIST" in not_a_list.error_message
    assert incremental(broker, "orders", ("retention.ms", 9, "5")).error_code == ErrorCode.INVALID_REQUEST
    assert incremental(broker, "missing", ("cleanup.policy", 2, "compact")).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("version", [0, 1])
def test_describe_cluster_lists_this_broker_and_the_callers_cluster_operations(broker, version):
    schema = request_module(DESCRIBE_CLUSTER, version)
    answer = call_handler(broker, ANONYMOUS, DESCRIBE_CLUSTER, version, schema.DescribeClusterRequest(include_cluster_authorized_operations=True))
    assert answer.error_code == 0 and answer.cluster_id == broker.cluster_id
    assert [(node.broker_id, node.host, node.port) for node in answer.brokers] == [(broker.config.node_id, "127.0.0.1", 9092)]
    assert answer.cluster_authorized_operations & (1 << 5) and answer.cluster_authorized_operations & (1 << 8)  # CREATE, DESCRIBE
    not_asked = call_handler(broker, tenant_client(), DESCRIBE_CLUSTER, version, schema.DescribeClusterRequest(include_cluster_authorized_operations=False))
    assert not_asked.cluster_authorized_operations == -(2**31)
    denied = call_handler(broker, tenant_client(), DESCRIBE_CLUSTER, version, schema.DescribeClusterRequest(include_cluster_authorized_operations=True))
    assert denied.cluster_authorized_operations == 0


def test_describe_cluster_refuses_controller_endpoints(broker):
    schema = request_module(DESCRIBE_CLUSTER, 1)
    answer = call_handler(broker, ANONYMOUS, DESCRIBE_CLUSTER, 1, schema.DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=2))
    assert answer.error_code == 115 and answer.brokers == ()  # UNSUPPORTED_ENDPOINT_TYPE


@pytest.mark.parametrize("version", [0, 2])
def test_delete_records_raises_the_log_start_offset(broker, version):
    create(broker, 7, ("orders", 2, {}))
    for start in range(3):
        broker.replica_manager.append_to_partition("orders", 0, batch([b"a", b"b"], timestamp=1_700_000_000_000 + start), acks=1)
    log = broker.replica_manager.partition_log("orders", 0)
    assert log.high_watermark == 6
    schema = request_module(DELETE_RECORDS, version)

    def delete(*offsets, topic="orders", call=ANONYMOUS):
        partitions = tuple(schema.DeleteRecordsPartition(partition_index=partition, offset=offset) for partition, offset in offsets)
        request = schema.DeleteRecordsRequest(topics=(schema.DeleteRecordsTopic(name=topic, partitions=partitions),), timeout=TIMEOUT)
        return call_handler(broker, call, DELETE_RECORDS, version, request).topics[0].partitions

    first = delete((0, 4))
    assert [(result.partition_index, result.error_code, result.low_watermark) for result in first] == [(0, 0, 4)]
    assert log.log_start_offset == 4
    assert delete((0, 2))[0].low_watermark == 4  # below the log start: nothing changes
    assert delete((0, 7))[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert [(result.error_code, result.low_watermark) for result in delete((0, -1), (1, -1))] == [(0, 6), (0, 0)]
    assert delete((0, 1), topic="missing")[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert delete((0, 1), call=tenant_client())[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert log.log_start_offset == 6


class RecordingController:
    """Stands in for the broker's ControllerClient: records forwarded ACL requests, answers from ``answers``."""

    addresses = ("127.0.0.1:1",)

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def call(self, method, request, *, timeout):
        self.calls.append((method, request))
        return self.answers[method]


def acl_creation(schema, **overrides):
    values = dict(resource_type=2, resource_name="orders", resource_pattern_type=3, principal="User:sa-1", host="*", operation=3, permission_type=3)
    return schema.AclCreation(**{**values, **overrides})


def test_acl_requests_without_a_controller_answer_security_disabled(broker):
    schema = request_module(CREATE_ACLS, 3)
    created = call_handler(broker, tenant_client(), CREATE_ACLS, 3, schema.CreateAclsRequest(creations=(acl_creation(schema),)))
    assert [result.error_code for result in created.results] == [54]  # SECURITY_DISABLED


def test_acl_requests_are_authorized_on_the_cluster_and_forwarded_in_the_catalogs_names(broker, monkeypatch):
    forwarded_binding = controller_pb2.ForwardedAclBinding(
        resource_type="TOPIC", resource_name="orders", pattern_type="PREFIXED", principal="User:sa-1", host="*", operation="WRITE", permission="DENY"
    )
    controller = RecordingController(
        {
            "CreateAcls": controller_pb2.CreateAclsResponse(
                results=[controller_pb2.AclCreationResult(), controller_pb2.AclCreationResult(error_code=42, error_message="bad")]
            ),
            "DescribeAcls": controller_pb2.DescribeAclsResponse(bindings=[forwarded_binding]),
            "DeleteAcls": controller_pb2.DeleteAclsResponse(results=[controller_pb2.DeleteAclsFilterResult(deleted=[forwarded_binding])]),
        }
    )
    # Restored before the broker fixture stops the broker (which asks its controller for a controlled shutdown).
    with monkeypatch.context() as patched:
        patched.setattr(broker, "controller", controller)
        admin = tenant_client(AclEntry("User:sa-1", ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, Operation.ALTER, Permission.ALLOW, "*"))
        reader = tenant_client(AclEntry("User:sa-1", ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, Operation.DESCRIBE, Permission.ALLOW, "*"))

        create_schema = request_module(CREATE_ACLS, 2)
        creations = (acl_creation(create_schema), acl_creation(create_schema, resource_type=5, resource_pattern_type=4, operation=9, permission_type=2))
        denied = call_handler(broker, reader, CREATE_ACLS, 2, create_schema.CreateAclsRequest(creations=creations))
        assert [result.error_code for result in denied.results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED] * 2 and not controller.calls
        created = call_handler(broker, admin, CREATE_ACLS, 2, create_schema.CreateAclsRequest(creations=creations))
        assert [(result.error_code, result.error_message) for result in created.results] == [(0, None), (42, "bad")]
        method, request = controller.calls[-1]
        assert method == "CreateAcls" and request.caller.tenant_id == "tn-a" and request.caller.principal == "User:sa-1"
        assert [(b.resource_type, b.pattern_type, b.operation, b.permission) for b in request.creations] == [
            ("TOPIC", "LITERAL", "READ", "ALLOW"),
            ("TRANSACTIONAL_ID", "PREFIXED", "CLUSTER_ACTION", "DENY"),
        ]

        describe_schema = request_module(DESCRIBE_ACLS, 1)
        describe_request = describe_schema.DescribeAclsRequest(
            resource_type_filter=2,
            resource_name_filter="orders",
            pattern_type_filter=2,
            principal_filter=None,
            host_filter=None,
            operation=1,
            permission_type=1,
        )
        described = call_handler(broker, reader, DESCRIBE_ACLS, 1, describe_request)
        assert described.error_code == 0
        [resource] = described.resources
        assert (resource.resource_type, resource.resource_name, resource.pattern_type) == (2, "orders", 4)
        assert [(acl.principal, acl.operation, acl.permission_type) for acl in resource.acls] == [("User:sa-1", 4, 2)]
        sent_filter = controller.calls[-1][1].filter
        assert (sent_filter.resource_type, sent_filter.resource_name, sent_filter.pattern_type) == ("TOPIC", "orders", "MATCH")
        assert not sent_filter.HasField("operation") and not sent_filter.HasField("principal")

        delete_schema = request_module(DELETE_ACLS, 3)
        delete_filter = delete_schema.DeleteAclsFilter(
            resource_type_filter=1,
            resource_name_filter=None,
            pattern_type_filter=1,
            principal_filter="User:sa-1",
            host_filter=None,
            operation=1,
            permission_type=1,
        )
        refused = call_handler(broker, reader, DELETE_ACLS, 3, delete_schema.DeleteAclsRequest(filters=(delete_filter,)))
        assert refused.filter_results[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        deleted = call_handler(broker, admin, DELETE_ACLS, 3, delete_schema.DeleteAclsRequest(filters=(delete_filter,)))
        [matching] = deleted.filter_results[0].matching_acls
        assert (matching.resource_name, matching.pattern_type, matching.operation, matching.permission_type) == ("orders", 4, 4, 2)
        assert controller.calls[-1][1].filters[0].principal == "User:sa-1"


def test_describe_configs_synonyms_name_the_broker_setting_that_sets_a_default(tmp_path):
    server = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1", "log.retention.ms": "7200000"}).start()
    try:
        create(server.broker, 7, ("orders", 1, {}))
        result = describe_configs(server.broker, 4, TOPIC, "orders", keys=("retention.ms",), synonyms=True)
        [retention] = result.configs
        assert (retention.value, retention.config_source) == ("7200000", 4)  # STATIC_BROKER_CONFIG
        assert [(synonym.name, synonym.value, synonym.source) for synonym in retention.synonyms] == [
            ("log.retention.ms", "7200000", 4),
            ("log.retention.ms", TOPIC_CONFIGS["retention.ms"].default, 5),
        ]
        without = describe_configs(server.broker, 4, TOPIC, "orders", keys=("retention.ms",))
        assert without.configs[0].synonyms == ()
    finally:
        server.stop()


def test_deleted_records_stay_deleted_after_a_restart(tmp_path):
    server = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1", "log.segment.bytes": "1024"}).start()
    try:
        create(server.broker, 7, ("orders", 1, {}))
        for index in range(20):  # several segments: the closed ones below the new start are deleted
            server.broker.replica_manager.append_to_partition("orders", 0, batch([b"x" * 100], timestamp=1_700_000_000_000 + index), acks=1)
        schema = request_module(DELETE_RECORDS, 2)
        partitions = (schema.DeleteRecordsPartition(partition_index=0, offset=13),)  # within a segment: only the checkpoint keeps it
        request = schema.DeleteRecordsRequest(topics=(schema.DeleteRecordsTopic(name="orders", partitions=partitions),), timeout=TIMEOUT)
        assert call_handler(server.broker, ANONYMOUS, DELETE_RECORDS, 2, request).topics[0].partitions[0].low_watermark == 13
        server.restart()
        log = server.broker.replica_manager.partition_log("orders", 0)
        assert (log.log_start_offset, log.log_end_offset) == (13, 20)
        assert min(int(path.stem) for path in log.directory.glob("*.log")) < 13  # a segment starts below it: the checkpoint kept the start
    finally:
        server.stop()
