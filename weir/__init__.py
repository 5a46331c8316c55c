"""Weir's Python SDK: confluent-kafka's API over Weir's gRPC data plane.

``from weir import Producer, Consumer, TopicPartition, KafkaError, KafkaException, Message``
and ``from weir.admin import AdminClient, NewTopic, ...``: code written for confluent-kafka
ports by changing its imports. Configuration keys are listed in ``weir.config``. As in
confluent-kafka: ``weir.error``, ``weir.serialization``, ``SerializingProducer``,
``DeserializingConsumer``, ``weir.aio`` (asyncio clients) and ``weir.schema_registry`` (the
Schema Registry client and its Avro, JSON Schema and Protobuf serializers).
"""

from weir.admin import ElectionType, IsolationLevel
from weir.admin_cluster import TopicCollection, TopicPartitionInfo
from weir.consumer import Consumer
from weir.consumer_groups import ConsumerGroupState, ConsumerGroupTopicPartitions, ConsumerGroupType, Node
from weir.deserializing_consumer import DeserializingConsumer
from weir.errors import KafkaError, KafkaException
from weir.message import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Message,
    ThrottleEvent,
    TopicPartition,
)
from weir.partition_functions import consistent, fnv1a, libversion, murmur2, version
from weir.producer import Producer
from weir.serializing_producer import SerializingProducer

__all__ = [
    "Consumer",
    "DeserializingConsumer",
    "ElectionType",
    "IsolationLevel",
    "SerializingProducer",
    "TopicCollection",
    "TopicPartitionInfo",
    "consistent",
    "fnv1a",
    "libversion",
    "murmur2",
    "version",
    "ConsumerGroupState",
    "ConsumerGroupTopicPartitions",
    "ConsumerGroupType",
    "KafkaError",
    "KafkaException",
    "Message",
    "Node",
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "OFFSET_INVALID",
    "OFFSET_STORED",
    "Producer",
    "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_LOG_APPEND_TIME",
    "TIMESTAMP_NOT_AVAILABLE",
    "ThrottleEvent",
    "TopicPartition",
]
