"""Request builders shared by the server tests."""

from __future__ import annotations

from grpc_protos.weir.v1 import broker_pb2
from weir.records import RecordBatchBuilder


def batch(values, *, timestamp: int = 1_700_000_000_000, key: bytes | None = None, **builder_options) -> bytes:
    builder = RecordBatchBuilder(**builder_options)
    for index, value in enumerate(values):
        builder.append(timestamp + index, key, value)
    return builder.build()


def create_topic(stub, name: str, partitions: int = 1, configs: dict[str, str] | None = None, **options) -> broker_pb2.TopicResult:
    entries = [broker_pb2.TopicConfigEntry(name=key, value=value) for key, value in (configs or {}).items()]
    request = broker_pb2.CreateTopicsRequest(
        topics=[broker_pb2.CreatableTopic(name=name, num_partitions=partitions, replication_factor=options.pop("replication_factor", 1), configs=entries)],
        **options,
    )
    return stub.CreateTopics(request).topics[0]


def produce(stub, topic: str, records: bytes, partition: int = 0, acks: int = 1) -> broker_pb2.ProducePartitionResponse:
    request = broker_pb2.ProduceRequest(
        acks=acks,
        timeout_ms=1000,
        topics=[broker_pb2.ProduceTopicData(topic=topic, partitions=[broker_pb2.ProducePartitionData(partition=partition, records=records)])],
    )
    return stub.Produce(request).topics[0].partitions[0]


def fetch(
    stub,
    topic: str,
    offset: int,
    partition: int = 0,
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    max_bytes: int = 0,
    partition_max_bytes: int = 0,
    timeout: float = 10.0,
):
    request = broker_pb2.FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        topics=[
            broker_pb2.FetchTopic(
                topic=topic,
                partitions=[
                    broker_pb2.FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=partition_max_bytes, current_leader_epoch=-1)
                ],
            )
        ],
    )
    return stub.Fetch(request, timeout=timeout).topics[0].partitions[0]


def list_offset(stub, topic: str, timestamp: int, partition: int = 0) -> broker_pb2.ListOffsetsPartitionResponse:
    request = broker_pb2.ListOffsetsRequest(
        topics=[broker_pb2.ListOffsetsTopic(topic=topic, partitions=[broker_pb2.ListOffsetsPartition(partition=partition, timestamp=timestamp)])]
    )
    return stub.ListOffsets(request).topics[0].partitions[0]
