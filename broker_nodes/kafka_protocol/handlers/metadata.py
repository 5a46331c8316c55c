"""Metadata (key 3, v1-v12): ``requests.metadata.describe`` answered with every broker's Kafka endpoint.

- Topics: a null list asks for every topic the caller may describe, an empty list for none
  (v1+). A topic named only by id (v10+; KIP-848 consumers look up their assigned topics so) is
  found among the caller's own topics, else answered UNKNOWN_TOPIC_ID. Topic ids (v10+) are the topic's UUID, the zero UUID when it has none.
- Brokers: ``api.kafka_endpoints`` (brokers without a Kafka listener are left out, and a
  partition led by one is answered LEADER_NOT_AVAILABLE so the client asks again later).
- Controller: Weir's controller is a control-plane process, not a broker; the answering broker
  names itself, which every client accepts.
- Authorized operations (v8+, KIP-430) when asked: the topics' and (v8-v10) the cluster's.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module, topic_uuid
from broker_nodes.kafka_protocol.handlers.data_common import throttle_time
from broker_nodes.kafka_protocol.handlers.describe_cluster import cluster_operations, operation_bits
from broker_nodes.requests import cluster as cluster_requests
from broker_nodes.requests import metadata as metadata_requests
from broker_nodes.requests import topics as topic_requests
from broker_nodes.requests.metadata import PartitionDescription, TopicDescription

METADATA_KEY = 3
AUTO_CREATE_FROM = 4  # the version from which the request says whether to auto-create


@api.handles(METADATA_KEY, 1, 12)
def handle_metadata(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    answers: list[Any] = []
    names: list[str] = []
    if request.topics is not None:
        for topic in request.topics:
            name = topic.name if topic.name is not None else topic_requests.plain_name_of_topic_id(context.broker, context.call, str(topic.topic_id))
            if name is None:
                answers.append(_unknown_topic_id(schema, topic.topic_id))
            else:
                names.append(name)
    auto_create = request.allow_auto_topic_creation if context.api_version >= AUTO_CREATE_FROM else True
    if request.topics is None or names:
        result = metadata_requests.describe(context.broker, context.call, names or None, allow_auto_topic_creation=auto_create)
        cluster_id, controller_id, described = result.cluster_id, result.controller_id, result.topics
    else:  # an empty list asks for no topic: only brokers and cluster
        cluster_id, controller_id, described = cluster_requests.cluster_id(context.broker), context.broker.config.node_id, []
    endpoints = api.kafka_endpoints(context.broker, context.listener)
    reachable = {endpoint.node_id for endpoint in endpoints}
    include_operations = getattr(request, "include_topic_authorized_operations", False)
    answers[:0] = [_topic(context, schema, topic, reachable, include_operations) for topic in described]
    return build(
        schema.MetadataResponse,
        throttle_time=throttle_time(0),
        brokers=tuple(
            build(schema.MetadataResponseBroker, node_id=endpoint.node_id, host=endpoint.host, port=endpoint.port, rack=endpoint.rack or None)
            for endpoint in endpoints
        ),
        cluster_id=cluster_id,
        controller_id=controller_id,
        topics=tuple(answers),
        cluster_authorized_operations=cluster_operations(context, getattr(request, "include_cluster_authorized_operations", False)),
    )


def _topic(context: api.KafkaRequestContext, schema: Any, topic: TopicDescription, reachable: set[int], include_operations: bool) -> Any:
    wanted = include_operations and not topic.error_code
    operations = operation_bits(frozenset(metadata_requests.authorized_topic_operations(context.call, topic.name)) if wanted else None)
    return build(
        schema.MetadataResponseTopic,
        error_code=ErrorCode(topic.error_code),
        name=topic.name,
        topic_id=topic_uuid(topic.topic_id),
        is_internal=topic.is_internal,
        partitions=tuple(_partition(schema, partition, reachable) for partition in topic.partitions),
        topic_authorized_operations=operations,
    )


def _partition(schema: Any, partition: PartitionDescription, reachable: set[int]) -> Any:
    code = ErrorCode.none if partition.leader_id in reachable else ErrorCode.leader_not_available
    return build(
        schema.MetadataResponsePartition,
        error_code=code,
        partition_index=partition.partition,
        leader_id=partition.leader_id,
        leader_epoch=partition.leader_epoch,
        replica_nodes=partition.replicas,
        isr_nodes=partition.isr,
        offline_replicas=(),
    )


def _unknown_topic_id(schema: Any, topic_id: Any) -> Any:
    return build(schema.MetadataResponseTopic, error_code=ErrorCode.unknown_topic_id, name=None, topic_id=topic_id, partitions=())
