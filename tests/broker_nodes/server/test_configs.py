import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.broker_nodes.server.helpers import create_topic
from weir.errors import ErrorCode
from weir.topic_config import TOPIC_CONFIGS

TOPIC = broker_pb2.RESOURCE_TYPE_TOPIC
BROKER = broker_pb2.RESOURCE_TYPE_BROKER


def describe(stub, resource_type, name, *config_names):
    request = broker_pb2.DescribeConfigsRequest(
        resources=[broker_pb2.ConfigResourceRef(type=resource_type, name=name, config_names=list(config_names))], include_documentation=True
    )
    return stub.DescribeConfigs(request).resources[0]


def alter(stub, name, configs, *, incremental=True, validate_only=False, resource_type=TOPIC):
    entries = [
        broker_pb2.AlterableConfig(name=key, value=value or "", op=broker_pb2.ALTER_CONFIG_OP_DELETE if value is None else broker_pb2.ALTER_CONFIG_OP_SET)
        for key, value in configs.items()
    ]
    request = broker_pb2.AlterConfigsRequest(
        resources=[broker_pb2.AlterConfigsResource(type=resource_type, name=name, configs=entries, incremental=incremental)], validate_only=validate_only
    )
    return stub.AlterConfigs(request).resources[0]


def test_describe_topic_lists_every_config_with_source(stub):
    create_topic(stub, "orders", configs={"retention.ms": "60000"})
    result = describe(stub, TOPIC, "orders")
    assert result.error_code == 0
    entries = {entry.name: entry for entry in result.configs}
    assert set(entries) == set(TOPIC_CONFIGS)
    assert entries["retention.ms"].value == "60000"
    assert entries["retention.ms"].source == broker_pb2.CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG
    assert not entries["retention.ms"].is_default
    assert entries["cleanup.policy"].value == "delete"
    assert entries["cleanup.policy"].is_default
    assert entries["cleanup.policy"].source == broker_pb2.CONFIG_SOURCE_DEFAULT_CONFIG
    assert entries["cleanup.policy"].type == "LIST"
    assert entries["segment.bytes"].documentation


def test_broker_default_of_a_topic_config_describes_as_static_broker_config(broker_server_factory):
    server = broker_server_factory(**{"log.retention.ms": "3600000"})
    create_topic(server.stub, "orders")
    (entry,) = describe(server.stub, TOPIC, "orders", "retention.ms").configs
    assert (entry.value, entry.source, entry.is_default) == ("3600000", broker_pb2.CONFIG_SOURCE_STATIC_BROKER_CONFIG, False)
    assert server.broker.log_manager.get_log("orders", 0).config.retention_ms == 3600000


def test_describe_unknown_topic_is_an_error(stub):
    assert describe(stub, TOPIC, "missing").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_describe_broker_lists_settings(stub):
    result = describe(stub, BROKER, "1", "num.io.threads", "offsets.topic.num.partitions")
    entries = {entry.name: entry for entry in result.configs}
    assert entries["num.io.threads"].value == "16"
    assert entries["num.io.threads"].is_default
    assert entries["num.io.threads"].read_only
    assert entries["offsets.topic.num.partitions"].source == broker_pb2.CONFIG_SOURCE_STATIC_BROKER_CONFIG
    assert describe(stub, BROKER, "7").error_code == ErrorCode.INVALID_REQUEST


def test_incremental_set_and_delete_reach_the_running_log(server, stub):
    create_topic(stub, "orders", configs={"retention.ms": "60000"})
    assert alter(stub, "orders", {"segment.bytes": "2048"}).error_code == 0
    log = server.broker.log_manager.get_log("orders", 0)
    assert (log.config.segment_bytes, log.config.retention_ms) == (2048, 60000)
    assert alter(stub, "orders", {"retention.ms": None}).error_code == 0
    log = server.broker.log_manager.get_log("orders", 0)
    assert log.config.retention_ms == TOPIC_CONFIGS["retention.ms"].default_value
    (entry,) = describe(stub, TOPIC, "orders", "retention.ms").configs
    assert entry.is_default


def test_full_replace_drops_configs_not_named(stub):
    create_topic(stub, "orders", configs={"retention.ms": "60000"})
    assert alter(stub, "orders", {"segment.bytes": "4096"}, incremental=False).error_code == 0
    entries = {entry.name: entry for entry in describe(stub, TOPIC, "orders", "retention.ms", "segment.bytes").configs}
    assert entries["retention.ms"].is_default
    assert entries["segment.bytes"].value == "4096"


def test_validate_only_changes_nothing(stub):
    create_topic(stub, "orders")
    assert alter(stub, "orders", {"retention.ms": "5"}, validate_only=True).error_code == 0
    (entry,) = describe(stub, TOPIC, "orders", "retention.ms").configs
    assert entry.is_default


@pytest.mark.parametrize("configs", [{"retention.ms": "soon"}, {"no.such.config": "1"}, {"cleanup.policy": "shred"}, {"no.such.config": None}])
def test_invalid_configs_are_refused_and_nothing_changes(stub, configs):
    create_topic(stub, "orders", configs={"retention.ms": "60000"})
    result = alter(stub, "orders", configs)
    assert result.error_code == ErrorCode.INVALID_CONFIG
    assert result.error_message
    (entry,) = describe(stub, TOPIC, "orders", "retention.ms").configs
    assert entry.value == "60000"


def test_broker_configs_cannot_be_altered(stub):
    assert alter(stub, "1", {"num.partitions": "3"}, resource_type=BROKER).error_code == ErrorCode.INVALID_REQUEST


def test_alter_unknown_topic_is_an_error(stub):
    assert alter(stub, "missing", {"retention.ms": "1"}).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
