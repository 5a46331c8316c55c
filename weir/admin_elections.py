"""``AdminClient.elect_leaders``'s argument checks and its answer, as confluent-kafka has them.

confluent-kafka checks the arguments when the call is made (a wrong type is a TypeError, a
negative partition or an empty topic a ValueError) and lets librdkafka refuse a partition named
twice (the future fails with ``_INVALID_ARG``). The result is ``{TopicPartition: KafkaError or
None}``; a request refused as a whole (CLUSTER_AUTHORIZATION_FAILED without ALTER on the
cluster) fails the future instead.
"""

from __future__ import annotations

from typing import Any

from grpc_protos.weir.v1 import broker_pb2
from weir.admin_scram import ElectionType
from weir.errors import KafkaError, KafkaException
from weir.message import TopicPartition


def check_elect_leaders(election_type: Any, partitions: Any) -> None:
    """Raise TypeError or ValueError as confluent-kafka's ``_check_elect_leaders`` does."""
    if not isinstance(election_type, ElectionType):
        raise TypeError("Expected 'election_type' to be of type 'ElectionType'")
    if partitions is None:
        return
    if not isinstance(partitions, list):
        raise TypeError(f"Expected 'partitions' to be a list, got '{type(partitions).__name__}'")
    for partition in partitions:
        if not isinstance(partition, TopicPartition):
            raise TypeError(f"Element of the 'partitions' list must be of type 'TopicPartition' got '{type(partition).__name__}' ")
        if partition.partition < 0:
            raise ValueError("Elements of the 'partitions' list must not have negative value for 'partition' field")
        if not partition.topic:
            raise ValueError("Elements of the 'partitions' list must name a topic")


def election_request(election_type: ElectionType, partitions: list[TopicPartition] | None, timeout_ms: int) -> broker_pb2.ElectLeadersRequest:
    """The broker's request; ``KafkaException(_INVALID_ARG)`` for a partition named twice (librdkafka's check)."""
    by_topic: dict[str, list[int]] = {}
    seen: set[tuple[str, int]] = set()
    for partition in partitions or ():
        if (partition.topic, partition.partition) in seen:
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG, "Duplicate partitions specified"))
        seen.add((partition.topic, partition.partition))
        by_topic.setdefault(partition.topic, []).append(partition.partition)
    return broker_pb2.ElectLeadersRequest(
        election_type=int(election_type),
        all_partitions=partitions is None,
        partitions=[broker_pb2.TopicPartitions(topic=topic, partitions=indexes) for topic, indexes in by_topic.items()],
        timeout_ms=timeout_ms,
    )


def election_results(response: broker_pb2.ElectLeadersResponse) -> dict[TopicPartition, KafkaError | None]:
    """Each partition's error (None: its leader was elected); ``KafkaException`` when the whole request was refused."""
    if response.error_code:
        raise KafkaException(KafkaError(response.error_code, response.error_message))
    return {
        TopicPartition(result.topic, result.partition): KafkaError(result.error_code, result.error_message) if result.error_code else None
        for result in response.results
    }
