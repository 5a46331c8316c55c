"""FindCoordinator (key 10, v0-v5): the broker coordinating each group, at its Kafka listener, via ``requests.coordinator_lookup``.

v0-v3 ask for one key, v4+ for a batch (``coordinator_keys``). Key type GROUP (0) finds the
leader of the group's ``__consumer_offsets`` partition, TRANSACTION (1) that of the
transactional id's ``__transaction_state`` partition; any other key type is answered
INVALID_REQUEST. A coordinator
without a Kafka listener (``kafka_port`` 0 in the cluster map) cannot be reached by a Kafka
client: COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.cluster_state import BrokerEndpoint
from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, error_fields, response_module
from broker_nodes.kafka_protocol.handlers.data_common import throttle_time
from broker_nodes.requests import coordinator_lookup as coordinator_lookup_requests
from broker_nodes.requests.coordinator_lookup import CoordinatorOutcome
from broker_nodes.security.access import CallContext
from broker_nodes.server.broker import Broker

FIND_COORDINATOR_KEY = 10
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
BATCHED_VERSION = 4  # coordinator_keys instead of key


def _no_node(key: str, code: int, message: str) -> dict[str, Any]:
    # Kafka's Node.noNode(): id -1, no host, port -1.
    return {"key": key, "node_id": -1, "host": "", "port": -1, **error_fields(code, message)}


def _coordinator(context: api.KafkaRequestContext, outcome: CoordinatorOutcome) -> dict[str, Any]:
    node = outcome.node
    if node is None:
        return _no_node(outcome.group_id, outcome.error_code, outcome.error_message)
    listener = context.listener
    if node.node_id == listener.node_id:
        return {"key": outcome.group_id, "node_id": node.node_id, "host": listener.host, "port": listener.port, **error_fields(0, "")}
    if node.kafka_port <= 0:
        return _no_node(outcome.group_id, ErrorCode.coordinator_not_available, f"broker {node.node_id}, the coordinator, has no Kafka listener")
    return {"key": outcome.group_id, "node_id": node.node_id, "host": node.host, "port": node.kafka_port, **error_fields(0, "")}


def _lookup(context: api.KafkaRequestContext, key_type: int, keys: list[str]) -> list[dict[str, Any]]:
    find: Callable[[Broker, CallContext, Sequence[str], BrokerEndpoint], list[CoordinatorOutcome]]
    if key_type == GROUP_KEY_TYPE:
        find = coordinator_lookup_requests.find_group_coordinators
    elif key_type == TRANSACTION_KEY_TYPE:
        find = coordinator_lookup_requests.find_transaction_coordinators
    else:
        return [_no_node(key, ErrorCode.invalid_request, f"coordinator key type {key_type} is not supported") for key in keys]
    listener = context.listener
    this_broker = BrokerEndpoint(listener.node_id, listener.host, 0, listener.rack, kafka_port=listener.port)
    return [_coordinator(context, outcome) for outcome in find(context.broker, context.call, keys, this_broker)]


@api.handles(FIND_COORDINATOR_KEY, 0, 5)
def handle_find_coordinator(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    key_type = int(getattr(request, "key_type", GROUP_KEY_TYPE))
    if context.api_version >= BATCHED_VERSION:
        found = _lookup(context, key_type, list(request.coordinator_keys))
        return build(schema.FindCoordinatorResponse, throttle_time=throttle_time(0), coordinators=tuple(build(schema.Coordinator, **entry) for entry in found))
    entry = _lookup(context, key_type, [request.key])[0]
    return build(schema.FindCoordinatorResponse, throttle_time=throttle_time(0), **entry)
