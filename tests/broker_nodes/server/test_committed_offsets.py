from grpc_protos.weir.v1 import broker_pb2
from log_formats.offset_commit_records import OffsetCommitKey, decode_key, partition_for_group
from tests.broker_nodes.server.helpers import create_topic, fetch
from weir.errors import ErrorCode
from weir.records import iter_records


def commit(stub, group, offsets, member_id=""):
    topics = {}
    for (topic, partition), (offset, metadata) in offsets.items():
        topics.setdefault(topic, []).append(
            broker_pb2.OffsetCommitPartition(partition=partition, committed_offset=offset, committed_leader_epoch=-1, metadata=metadata)
        )
    request = broker_pb2.OffsetCommitRequest(
        group_id=group,
        generation_id=-1,
        member_id=member_id,
        topics=[broker_pb2.OffsetCommitTopic(topic=topic, partitions=parts) for topic, parts in topics.items()],
    )
    return stub.OffsetCommit(request)


def committed(stub, group, partitions=None):
    topics = {}
    for topic, partition in partitions or []:
        topics.setdefault(topic, []).append(partition)
    reply = stub.OffsetFetch(
        broker_pb2.OffsetFetchRequest(group_id=group, topics=[broker_pb2.OffsetFetchTopic(topic=t, partitions=p) for t, p in topics.items()])
    )
    return reply, {
        (topic.topic, partition.partition): (partition.committed_offset, partition.metadata) for topic in reply.topics for partition in topic.partitions
    }


def partition_codes(reply):
    return {(topic.topic, partition.partition): partition.error_code for topic in reply.topics for partition in topic.partitions}


def test_committed_offsets_are_fetched_back(stub):
    create_topic(stub, "orders", partitions=2)
    reply = commit(stub, "billing", {("orders", 0): (10, "m0"), ("orders", 1): (20, "")})
    assert reply.error_code == 0
    assert partition_codes(reply) == {("orders", 0): 0, ("orders", 1): 0}
    _, offsets = committed(stub, "billing")
    assert offsets == {("orders", 0): (10, "m0"), ("orders", 1): (20, "")}
    _, asked = committed(stub, "billing", [("orders", 1), ("orders", 5)])
    assert asked == {("orders", 1): (20, ""), ("orders", 5): (-1, "")}
    _, other_group = committed(stub, "other")
    assert other_group == {}


def test_commit_is_a_kafka_record_in_the_groups_offsets_partition(server, stub):
    create_topic(stub, "orders")
    commit(stub, "billing", {("orders", 0): (7, "")})
    partition = partition_for_group("billing", 3)
    records = list(iter_records(fetch(stub, "__consumer_offsets", 0, partition=partition).records))
    assert [decode_key(record.key) for record in records] == [OffsetCommitKey("billing", "orders", 0)]


def test_commit_validation_errors(stub):
    create_topic(stub, "orders")
    assert commit(stub, "", {("orders", 0): (1, "")}).error_code == ErrorCode.INVALID_GROUP_ID
    assert commit(stub, "billing", {("orders", 0): (1, "")}, member_id="m-1").error_code == ErrorCode.UNKNOWN_MEMBER_ID
    reply = commit(stub, "billing", {("missing", 0): (1, ""), ("orders", 3): (1, ""), ("orders", 0): (-5, "")})
    assert partition_codes(reply) == {
        ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("orders", 3): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("orders", 0): ErrorCode.INVALID_REQUEST,
    }
    too_large = commit(stub, "billing", {("orders", 0): (1, "x" * 4097)})
    assert partition_codes(too_large) == {("orders", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}
    _, offsets = committed(stub, "billing")
    assert offsets == {}
    fetch_reply, _ = committed(stub, "")
    assert fetch_reply.error_code == ErrorCode.INVALID_GROUP_ID


def test_committed_offsets_survive_an_in_process_restart(server):
    create_topic(server.stub, "orders")
    commit(server.stub, "billing", {("orders", 0): (3, "first")})
    commit(server.stub, "billing", {("orders", 0): (9, "second")})
    server.restart()
    _, offsets = committed(server.stub, "billing")
    assert offsets == {("orders", 0): (9, "second")}


def test_offsets_of_a_deleted_topic_stay(stub):
    create_topic(stub, "orders")
    commit(stub, "billing", {("orders", 0): (4, "")})
    stub.DeleteTopics(broker_pb2.DeleteTopicsRequest(topics=["orders"]))
    _, offsets = committed(stub, "billing")
    assert offsets == {("orders", 0): (4, "")}
