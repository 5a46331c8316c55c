"""The gRPC Fetch answer: one entry per topic in request order, each with its partitions' answers in request order."""

from __future__ import annotations

from grpc_protos.weir.v1 import broker_pb2
from tests.broker_nodes.server.helpers import batch, create_topic, produce
from weir.records import iter_records


def test_one_fetch_of_several_topics_answers_each_partition_under_its_topic(stub) -> None:
    create_topic(stub, "orders", partitions=2)
    create_topic(stub, "payments")
    produce(stub, "orders", batch([b"o0"]), partition=0)
    produce(stub, "orders", batch([b"o1a", b"o1b"]), partition=1)
    produce(stub, "payments", batch([b"p"]))
    request = broker_pb2.FetchRequest(
        max_wait_ms=0,
        topics=[
            broker_pb2.FetchTopic(topic="orders", partitions=[broker_pb2.FetchPartition(partition=1, fetch_offset=0), broker_pb2.FetchPartition(partition=0)]),
            broker_pb2.FetchTopic(topic="payments", partitions=[broker_pb2.FetchPartition(partition=0, fetch_offset=0)]),
            broker_pb2.FetchTopic(topic="missing", partitions=[broker_pb2.FetchPartition(partition=0, fetch_offset=0)]),
        ],
        replica_id=-1,
    )
    reply = stub.Fetch(request, timeout=10)
    answers = [
        (topic.topic, partition.partition, partition.error_code, partition.high_watermark, [record.value for record in iter_records(partition.records)])
        for topic in reply.topics
        for partition in topic.partitions
    ]
    assert answers[:3] == [("orders", 1, 0, 2, [b"o1a", b"o1b"]), ("orders", 0, 0, 1, [b"o0"]), ("payments", 0, 0, 1, [b"p"])]
    assert [topic.topic for topic in reply.topics] == ["orders", "payments", "missing"]
    missing = reply.topics[2].partitions[0]
    assert missing.error_code != 0 and not missing.records
    assert not any(partition.HasField("diverging_epoch") or partition.aborted_transactions for topic in reply.topics for partition in topic.partitions)
