"""WriteTxnMarkers (key 27, v1-v2) from admin clients: Kafka's abort of a hanging transaction (KIP-664).

``kafka-transactions.sh abort`` (Java's ``Admin.abortTransaction``) sends the partition's leader
an ABORT marker for the producer id, epoch and coordinator epoch that ``find-hanging`` reported;
each partition is answered through ``requests.transaction_admin.abort_hanging`` (tenant
qualification, ALTER on the cluster or the topic, leader only). Weir's brokers send each other
their markers over ``Replication.WriteTxnMarkers``, never through this door, so a COMMIT marker
from a client is refused (CLUSTER_AUTHORIZATION_FAILED): only a coordinator decides a commit.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.requests.transaction_admin import abort_hanging

WRITE_TXN_MARKERS_KEY = 27


@api.handles(WRITE_TXN_MARKERS_KEY, 1, 2)
def handle_write_txn_markers(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    return build(schema.WriteTxnMarkersResponse, markers=tuple(_marker(context, schema, marker) for marker in request.markers))


def _marker(context: api.KafkaRequestContext, schema: Any, marker: Any) -> Any:
    topics = []
    for topic in marker.topics:
        partitions = []
        for partition in topic.partition_indexes:
            if marker.transaction_result:
                code = int(ErrorCode.cluster_authorization_failed)
            else:
                code = abort_hanging(
                    context.broker,
                    context.call,
                    topic=topic.name,
                    partition=int(partition),
                    producer_id=int(marker.producer_id),
                    producer_epoch=int(marker.producer_epoch),
                    coordinator_epoch=int(marker.coordinator_epoch),
                ).error_code
            partitions.append(build(schema.WritableTxnMarkerPartitionResult, partition_index=partition, error_code=ErrorCode(code)))
        topics.append(build(schema.WritableTxnMarkerTopicResult, name=topic.name, partitions=tuple(partitions)))
    return build(schema.WritableTxnMarkerResult, producer_id=marker.producer_id, topics=tuple(topics))
