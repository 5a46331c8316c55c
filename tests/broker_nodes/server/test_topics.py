import grpc
import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.broker_nodes.server.helpers import create_topic
from weir.errors import ErrorCode


def metadata(stub, *topics, allow_auto_topic_creation=False):
    return stub.Metadata(broker_pb2.MetadataRequest(topics=list(topics), allow_auto_topic_creation=allow_auto_topic_creation))


def test_created_topic_is_listed_with_this_broker_as_leader(server, stub):
    result = create_topic(stub, "orders", partitions=3)
    assert result.error_code == 0
    assert result.num_partitions == 3
    reply = metadata(stub, "orders")
    assert [broker.node_id for broker in reply.brokers] == [1]
    assert reply.brokers[0].port == server.running.port
    assert reply.cluster_id
    (topic,) = reply.topics
    assert topic.topic_id == result.topic_id
    assert [(p.partition, p.leader_id, p.leader_epoch, list(p.replicas), list(p.isr)) for p in topic.partitions] == [
        (partition, 1, 0, [1], [1]) for partition in range(3)
    ]
    assert server.broker.log_manager.get_log("orders", 2) is not None


def test_metadata_without_names_lists_every_topic_including_internal(stub):
    create_topic(stub, "orders")
    topics = {topic.name: topic for topic in metadata(stub).topics}
    assert set(topics) == {"orders", "__consumer_offsets"}
    assert topics["__consumer_offsets"].is_internal
    assert not topics["orders"].is_internal


def test_metadata_of_unknown_topic_is_an_error_when_auto_create_is_off(stub):
    (topic,) = metadata(stub, "missing", allow_auto_topic_creation=True).topics
    assert topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "missing" in topic.error_message


def test_metadata_creates_unknown_topic_when_auto_create_is_on(broker_server_factory):
    server = broker_server_factory(**{"auto.create.topics.enable": "true", "num.partitions": "2"})
    (topic,) = metadata(server.stub, "auto", allow_auto_topic_creation=True).topics
    assert topic.error_code == 0
    assert len(topic.partitions) == 2
    (refused,) = metadata(server.stub, "other", allow_auto_topic_creation=False).topics
    assert refused.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_metadata_of_invalid_name_is_invalid_topic_even_with_auto_create(broker_server_factory):
    server = broker_server_factory(**{"auto.create.topics.enable": "true"})
    (topic,) = metadata(server.stub, "../evil", allow_auto_topic_creation=True).topics
    assert topic.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


@pytest.mark.parametrize("name", ["../evil", ".", "..", "x" * 250, "bad/name", "__mine"])
def test_create_with_invalid_name_is_refused_and_nothing_is_written(server, stub, name):
    result = create_topic(stub, name)
    assert result.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert result.error_message
    assert not (server.data_dir.parent / "evil").exists()
    assert sorted(topic.name for topic in metadata(stub).topics) == ["__consumer_offsets"]


def test_create_errors_are_reported_per_topic(stub):
    create_topic(stub, "orders")
    request = broker_pb2.CreateTopicsRequest(
        topics=[
            broker_pb2.CreatableTopic(name="orders", num_partitions=1, replication_factor=1),
            broker_pb2.CreatableTopic(name="zero", num_partitions=0, replication_factor=1),
            broker_pb2.CreatableTopic(name="replicated", num_partitions=1, replication_factor=3),
            broker_pb2.CreatableTopic(
                name="configured", num_partitions=1, replication_factor=1, configs=[broker_pb2.TopicConfigEntry(name="retention.ms", value="soon")]
            ),
            broker_pb2.CreatableTopic(
                name="unknown-key", num_partitions=1, replication_factor=1, configs=[broker_pb2.TopicConfigEntry(name="no.such", value="1")]
            ),
            broker_pb2.CreatableTopic(name="fine", num_partitions=-1, replication_factor=-1),
        ]
    )
    codes = {result.name: result.error_code for result in stub.CreateTopics(request).topics}
    assert codes == {
        "orders": ErrorCode.TOPIC_ALREADY_EXISTS,
        "zero": ErrorCode.INVALID_PARTITIONS,
        "replicated": ErrorCode.INVALID_REPLICATION_FACTOR,
        "configured": ErrorCode.INVALID_CONFIG,
        "unknown-key": ErrorCode.INVALID_CONFIG,
        "fine": 0,
    }


def test_replication_factor_message_says_there_is_one_broker(stub):
    result = create_topic(stub, "replicated", replication_factor=2)
    assert "only 1 broker" in result.error_message


def test_validate_only_creates_nothing(server, stub):
    result = create_topic(stub, "orders", partitions=2, validate_only=True)
    assert result.error_code == 0
    assert metadata(stub, "orders").topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert server.broker.log_manager.get_log("orders", 0) is None


def test_deleted_topic_is_gone_with_its_logs(server, stub):
    create_topic(stub, "orders", partitions=2)
    reply = stub.DeleteTopics(broker_pb2.DeleteTopicsRequest(topics=["orders", "missing"]))
    codes = {result.name: result.error_code for result in reply.topics}
    assert codes == {"orders": 0, "missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert metadata(stub, "orders").topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert server.broker.log_manager.get_log("orders", 0) is None
    assert not (server.data_dir / "orders-0").exists()


def test_internal_topic_cannot_be_deleted(stub):
    (result,) = stub.DeleteTopics(broker_pb2.DeleteTopicsRequest(topics=["__consumer_offsets"])).topics
    assert result.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_create_partitions_grows_and_never_shrinks(server, stub):
    create_topic(stub, "orders", partitions=2)

    def grow(count, validate_only=False):
        request = broker_pb2.CreatePartitionsRequest(topics=[broker_pb2.CreatePartitionsTopic(name="orders", count=count)], validate_only=validate_only)
        return stub.CreatePartitions(request).topics[0]

    assert grow(6, validate_only=True).error_code == 0
    assert len(metadata(stub, "orders").topics[0].partitions) == 2
    assert grow(4).num_partitions == 4
    assert server.broker.log_manager.get_log("orders", 3) is not None
    assert grow(4).error_code == ErrorCode.INVALID_PARTITIONS
    assert grow(1).error_code == ErrorCode.INVALID_PARTITIONS
    assert len(metadata(stub, "orders").topics[0].partitions) == 4


def test_topics_survive_a_restart(server):
    created = create_topic(server.stub, "orders", partitions=3, configs={"retention.ms": "60000"})
    server.restart()
    (topic,) = metadata(server.stub, "orders").topics
    assert topic.topic_id == created.topic_id
    assert len(topic.partitions) == 3
    assert server.broker.log_manager.get_log("orders", 2).config.retention_ms == 60000


def test_restart_repairs_logs_of_an_interrupted_delete(server):
    create_topic(server.stub, "orders")
    server.stop()
    # A crash after topics.json was rewritten but before the logs were deleted.
    (server.data_dir / "topics.json").write_text((server.data_dir / "topics.json").read_text().replace('"orders"', '"renamed-away"'))
    server.start()
    assert server.broker.log_manager.get_log("orders", 0) is None
    assert server.broker.log_manager.get_log("renamed-away", 0) is not None


@pytest.mark.parametrize(
    "call, request_message",
    [
        ("CreateTopics", broker_pb2.CreateTopicsRequest()),
        ("DeleteTopics", broker_pb2.DeleteTopicsRequest()),
        ("DeleteTopics", broker_pb2.DeleteTopicsRequest(topics=["a", "a"])),
        ("CreatePartitions", broker_pb2.CreatePartitionsRequest()),
        ("CreateTopics", broker_pb2.CreateTopicsRequest(topics=[broker_pb2.CreatableTopic(name="a", num_partitions=1, replication_factor=1)] * 2)),
    ],
)
def test_malformed_admin_requests_are_invalid_argument(stub, call, request_message):
    with pytest.raises(grpc.RpcError) as raised:
        getattr(stub, call)(request_message)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.details()
