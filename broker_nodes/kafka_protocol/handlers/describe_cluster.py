"""DescribeCluster (key 60, v0-v1): the brokers' Kafka listeners, the cluster id and, when asked,
the caller's authorized operations on the cluster (Kafka's bit field: bit N set for AclOperation N).

v1 may ask for the controllers' endpoints: Weir's controller is not reachable with Kafka's
protocol, so that is answered UNSUPPORTED_ENDPOINT_TYPE, as a broker without that support does.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers import acl_codes
from broker_nodes.kafka_protocol.handlers.admin_common import NO_THROTTLE, build, response_module
from broker_nodes.requests import cluster as cluster_requests
from broker_nodes.security.authorizer import Operation

DESCRIBE_CLUSTER_KEY = 60
BROKERS_ENDPOINT_TYPE = 1
OPERATIONS_NOT_REQUESTED = -(2**31)  # Kafka's "authorized operations were not asked for"


@api.handles(DESCRIBE_CLUSTER_KEY, 0, 1)
def handle_describe_cluster(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    endpoint_type = getattr(request, "endpoint_type", BROKERS_ENDPOINT_TYPE)
    description = cluster_requests.describe_cluster(context.broker, context.call, include_authorized_operations=request.include_cluster_authorized_operations)
    common = {"throttle_time": NO_THROTTLE, "endpoint_type": endpoint_type, "cluster_id": description.cluster_id, "controller_id": description.controller_id}
    if endpoint_type != BROKERS_ENDPOINT_TYPE:
        message = "only broker endpoints (endpoint type 1) are served: Weir's controller does not speak Kafka's protocol"
        return build(
            schema.DescribeClusterResponse,
            error_code=ErrorCode.unsupported_endpoint_type,
            error_message=message,
            brokers=(),
            cluster_authorized_operations=OPERATIONS_NOT_REQUESTED,
            **common,
        )
    brokers = tuple(
        schema.DescribeClusterBroker(broker_id=endpoint.node_id, host=endpoint.host, port=endpoint.port, rack=endpoint.rack or None)
        for endpoint in api.kafka_endpoints(context.broker, context.listener)
    )
    return build(
        schema.DescribeClusterResponse,
        error_code=ErrorCode.none,
        error_message=None,
        brokers=brokers,
        cluster_authorized_operations=operation_bits(description.authorized_operations),
        **common,
    )


def operation_bits(operations: frozenset[Operation] | None) -> int:
    """Kafka's authorized-operations bit field (the "not requested" value for None)."""
    if operations is None:
        return OPERATIONS_NOT_REQUESTED
    return sum(1 << acl_codes.OPERATION_CODES[operation] for operation in operations)


def cluster_operations(context: api.KafkaRequestContext, requested: bool) -> int:
    """The caller's authorized operations on the cluster as Kafka's bit field, or "not requested"
    (Metadata v8-v10 carries them too: librdkafka's and kafka-python's describe_cluster ask there)."""
    if not requested:
        return OPERATIONS_NOT_REQUESTED
    description = cluster_requests.describe_cluster(context.broker, context.call, include_authorized_operations=True)
    return operation_bits(description.authorized_operations)
