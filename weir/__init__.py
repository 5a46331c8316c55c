"""Weir's Python SDK: confluent-kafka's API over Weir's gRPC data plane.

``from weir import Producer, Consumer, TopicPartition, KafkaError, KafkaException, Message``
and ``from weir.admin import AdminClient, NewTopic, ...``: code written for confluent-kafka
ports by changing its imports. Configuration keys are listed in ``weir.config``.
"""

from weir.consumer import Consumer
from weir.consumer_groups import ConsumerGroupState, ConsumerGroupTopicPartitions, ConsumerGroupType, Node
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
    TopicPartition,
)
from weir.producer import Producer

__all__ = [
    "Consumer",
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
    "TopicPartition",
]
