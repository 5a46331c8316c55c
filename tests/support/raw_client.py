"""A few raw gRPC calls for tests that need exact control over the bytes a broker receives."""

from __future__ import annotations

import time

import grpc

from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc
from weir import records


class RawBroker:
    """Thin wrapper over the Broker stub; every call has a deadline."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = broker_pb2_grpc.BrokerStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> broker_pb2.TopicResult:
        request = broker_pb2.CreateTopicsRequest(
            topics=[
                broker_pb2.CreatableTopic(
                    name=name,
                    num_partitions=partitions,
                    replication_factor=1,
                    configs=[broker_pb2.TopicConfigEntry(name=key, value=value) for key, value in (configs or {}).items()],
                )
            ],
            timeout_ms=10_000,
        )
        result = self.stub.CreateTopics(request, timeout=15).topics[0]
        assert result.error_code == 0, result.error_message
        return result

    def produce(self, topic: str, partition: int, batch: bytes, acks: int = -1) -> broker_pb2.ProducePartitionResponse:
        request = broker_pb2.ProduceRequest(
            acks=acks,
            timeout_ms=10_000,
            topics=[broker_pb2.ProduceTopicData(topic=topic, partitions=[broker_pb2.ProducePartitionData(partition=partition, records=batch)])],
        )
        return self.stub.Produce(request, timeout=15).topics[0].partitions[0]

    def produce_values(self, topic: str, partition: int, values: list[bytes]) -> int:
        """Append one batch of ``values``; return its base offset (asserting success)."""
        now = int(time.time() * 1000)
        result = self.produce(topic, partition, records.build_batch((now, None, value, None) for value in values))
        assert result.error_code == 0, result.error_message
        return result.base_offset

    def fetch(self, topic: str, partition: int, offset: int, max_bytes: int = 1 << 20, max_wait_ms: int = 0) -> broker_pb2.FetchPartitionResponse:
        request = broker_pb2.FetchRequest(
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_bytes=max_bytes,
            topics=[
                broker_pb2.FetchTopic(
                    topic=topic,
                    partitions=[broker_pb2.FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes, current_leader_epoch=-1)],
                )
            ],
            replica_id=-1,
        )
        return self.stub.Fetch(request, timeout=15).topics[0].partitions[0]

    def read_all(self, topic: str, partition: int, start: int = 0, limit: int = 1_000_000) -> list[tuple[int, bytes | None]]:
        """Every (offset, value) from ``start`` to the high watermark, at most ``limit``."""
        out: list[tuple[int, bytes | None]] = []
        offset = start
        for _ in range(10_000):
            response = self.fetch(topic, partition, offset)
            assert response.error_code == 0, response.error_message
            batch_records = list(records.iter_records(response.records, min_offset=offset))
            if not batch_records:
                break
            out.extend((record.offset, record.value) for record in batch_records)
            offset = batch_records[-1].offset + 1
            if offset >= response.high_watermark or len(out) >= limit:
                break
        return out

    def list_offset(self, topic: str, partition: int, timestamp: int) -> int:
        request = broker_pb2.ListOffsetsRequest(
            topics=[broker_pb2.ListOffsetsTopic(topic=topic, partitions=[broker_pb2.ListOffsetsPartition(partition=partition, timestamp=timestamp)])]
        )
        result = self.stub.ListOffsets(request, timeout=15).topics[0].partitions[0]
        assert result.error_code == 0, result.error_message
        return result.offset
