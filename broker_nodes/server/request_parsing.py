"""Protocol checks of whole requests: what makes a call malformed (gRPC INVALID_ARGUMENT).

Each function takes a request message and raises InvalidRequestError naming the rule broken;
per-partition problems (unknown topics, bad offsets, bad batches) are not checked here: they
are answered per partition by the logic behind the servicer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from broker_nodes.replica_manager import READ_COMMITTED, READ_UNCOMMITTED, FetchPartitionRequest
from broker_nodes.server.errors import InvalidRequestError
from grpc_protos.weir.v1 import broker_pb2

Key = TypeVar("Key")


def require_unique(keys: Iterable[Key], what: str) -> None:
    """Raise InvalidRequestError when a key occurs twice (``what`` names the kind of key)."""
    seen: set[Key] = set()
    for key in keys:
        if key in seen:
            raise InvalidRequestError(f"{what} {key!r} occurs more than once in the request")
        seen.add(key)


def require_nonempty(items: Sequence[object], what: str) -> None:
    if not items:
        raise InvalidRequestError(f"the request must name at least one {what}")


def require_non_negative(value: int, field: str) -> None:
    if value < 0:
        raise InvalidRequestError(f"{field} must not be negative, it is {value}")


def produce_entries(request: broker_pb2.ProduceRequest) -> list[tuple[str, int, bytes]]:
    """(topic, partition, records) of every partition of a Produce request."""
    require_nonempty(request.topics, "topic")
    entries = []
    for topic in request.topics:
        if not topic.partitions:
            raise InvalidRequestError(f"topic {topic.topic!r} in the produce request has no partition data")
        for partition in topic.partitions:
            entries.append((topic.topic, partition.partition, partition.records))
    require_unique(((topic, partition) for topic, partition, _ in entries), "topic-partition")
    return entries


def fetch_partitions(request: broker_pb2.FetchRequest, default_partition_max_bytes: int) -> list[FetchPartitionRequest]:
    require_non_negative(request.max_wait_ms, "max_wait_ms")
    require_non_negative(request.min_bytes, "min_bytes")
    require_non_negative(request.max_bytes, "max_bytes")
    require_nonempty(request.topics, "topic")
    partitions = []
    for topic in request.topics:
        if not topic.partitions:
            raise InvalidRequestError(f"topic {topic.topic!r} in the fetch request names no partition")
        for partition in topic.partitions:
            require_non_negative(partition.partition_max_bytes, "partition_max_bytes")
            partitions.append(
                FetchPartitionRequest(
                    topic.topic,
                    partition.partition,
                    partition.fetch_offset,
                    partition.partition_max_bytes or default_partition_max_bytes,
                    partition.current_leader_epoch,
                    partition.last_fetched_epoch if partition.HasField("last_fetched_epoch") else -1,
                    READ_COMMITTED if request.isolation_level == broker_pb2.READ_COMMITTED else READ_UNCOMMITTED,
                )
            )
    require_unique(((partition.topic, partition.partition) for partition in partitions), "topic-partition")
    return partitions


def list_offsets_partitions(request: broker_pb2.ListOffsetsRequest) -> list[tuple[str, int, int]]:
    """(topic, partition, timestamp) of every partition of a ListOffsets request."""
    require_nonempty(request.topics, "topic")
    entries = [(topic.topic, partition.partition, partition.timestamp) for topic in request.topics for partition in topic.partitions]
    require_unique(((topic, partition) for topic, partition, _ in entries), "topic-partition")
    return entries


def topic_names(names: Sequence[str], *, required: bool) -> list[str]:
    if required:
        require_nonempty(names, "topic")
    require_unique(names, "topic")
    return list(names)


def config_resources(resources: Sequence[broker_pb2.ConfigResourceRef] | Sequence[broker_pb2.AlterConfigsResource]) -> None:
    require_nonempty(resources, "config resource")
    require_unique(((resource.type, resource.name) for resource in resources), "config resource")
