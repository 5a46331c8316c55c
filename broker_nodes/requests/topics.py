"""CreateTopics, DeleteTopics and CreatePartitions for both front doors (gRPC and Kafka's protocol).

The request and answer shapes are ``broker.proto``'s topic-admin messages: the controller speaks
them too (a tenant's topic administration is forwarded to it unchanged, see
``server.topic_forwarding``), so neither door converts twice. Per-topic outcomes are Kafka error
codes in the answer, in the request's order; a request that is malformed as a whole raises
:class:`InvalidRequestError` (gRPC answers INVALID_ARGUMENT, Kafka INVALID_REQUEST per topic).

Two paths, decided per call:
- a tenant's caller on a broker with a controller: authorized here, forwarded to the controller,
  which changes the control plane's catalog exactly as the REST API would (limits, policies);
- otherwise the broker's own registry, which only a standalone broker's tenant-less callers
  may change (everything else is the control plane's: POLICY_VIOLATION).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from broker_nodes.controller_client import ControllerClient
from broker_nodes.security.access import CallContext
from broker_nodes.security.errors import ManagedTopicsPolicyError
from broker_nodes.server import request_parsing, topic_forwarding
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import error_code_and_message
from broker_nodes.topic_registry import TopicMetadata
from grpc_protos.weir.v1 import broker_pb2

logger = logging.getLogger(__name__)

MAP_WAIT_SECONDS = 10.0  # the longest a forwarded CreateTopics/DeleteTopics waits for the controller's push


def topic_admin_controller(broker: Broker, call: CallContext) -> ControllerClient | None:
    """The controller the caller's topic administration goes to (a tenant's, when there is a controller); None: done here."""
    return broker.controller if call.has_tenant else None


def check_local_topic_admin_allowed(broker: Broker, call: CallContext, name: str) -> None:
    """Topic administration through the data plane exists only for standalone topics without a tenant."""
    if broker.managed or call.has_tenant:
        raise ManagedTopicsPolicyError(name)


def topic_result(topic: TopicMetadata, name: str | None = None) -> broker_pb2.TopicResult:
    return broker_pb2.TopicResult(
        name=topic.name if name is None else name, topic_id=topic.topic_id, num_partitions=topic.partitions, replication_factor=topic.replication_factor
    )


def topic_error(name: str, error: Exception) -> broker_pb2.TopicResult:
    code, message = error_code_and_message(error)
    return broker_pb2.TopicResult(name=name, error_code=code, error_message=message)


def plain_name_of_topic_id(broker: Broker, call: CallContext, topic_id: str) -> str | None:
    """The caller's plain name of the topic with ``topic_id``; None when none of the caller's topics
    has it (another tenant's id is as unknown as a made-up one)."""
    return next((call.plain(topic.name) for topic in broker.registry.topics() if topic.topic_id == topic_id and call.owns(topic.name)), None)


def create_topics(broker: Broker, call: CallContext, request: broker_pb2.CreateTopicsRequest) -> broker_pb2.CreateTopicsResponse:
    """Create each topic (``-1`` partition count or replication factor: the defaults), or say why not."""
    request_parsing.require_nonempty(request.topics, "topic")
    request_parsing.require_unique((topic.name for topic in request.topics), "topic")
    for creatable in request.topics:
        request_parsing.require_unique((entry.name for entry in creatable.configs), f"config of topic {creatable.name!r}")
    controller = topic_admin_controller(broker, call)
    if controller is not None:
        answer = topic_forwarding.create_topics(controller, call, request)
        if not request.validate_only:
            created = {call.qualify(result.name): result.topic_id for result in answer.topics if result.error_code == 0}
            _wait_for_the_map(broker, created, (), request.timeout_ms)
        return answer
    results = []
    for creatable in request.topics:
        try:
            check_local_topic_admin_allowed(broker, call, creatable.name)
            topic = broker.topic_admin.create_topic(
                creatable.name,
                creatable.num_partitions,
                creatable.replication_factor,
                {entry.name: entry.value for entry in creatable.configs},
                validate_only=request.validate_only,
            )
            results.append(topic_result(topic))
        except Exception as error:  # this topic's answer
            results.append(topic_error(creatable.name, error))
    return broker_pb2.CreateTopicsResponse(topics=results)


def delete_topics(broker: Broker, call: CallContext, names: Sequence[str], timeout_ms: int) -> broker_pb2.DeleteTopicsResponse:
    """Delete each named topic, or say why not."""
    names_to_delete = request_parsing.topic_names(names, required=True)
    controller = topic_admin_controller(broker, call)
    if controller is not None:
        answer = topic_forwarding.delete_topics(controller, call, list(names_to_delete), timeout_ms)
        _wait_for_the_map(broker, {}, [call.qualify(result.name) for result in answer.topics if result.error_code == 0], timeout_ms)
        return answer
    results = []
    for name in names_to_delete:
        try:
            check_local_topic_admin_allowed(broker, call, name)
            results.append(topic_result(broker.topic_admin.delete_topic(name), name))
        except Exception as error:  # this topic's answer
            results.append(topic_error(name, error))
    return broker_pb2.DeleteTopicsResponse(topics=results)


def _wait_for_the_map(broker: Broker, present: dict[str, str], absent: Sequence[str], timeout_ms: int) -> None:
    """Answer a forwarded change once this broker's map shows it, as Kafka does (Broker.wait_for_topics),
    within the request's timeout (at most MAP_WAIT_SECONDS; 0: no wait). The change is made either
    way: when the push is late, the answer still says so and the map follows."""
    if not (present or absent) or timeout_ms <= 0:
        return
    timeout = min(timeout_ms / 1000, MAP_WAIT_SECONDS)
    if not broker.wait_for_topics(present, absent, timeout):
        logger.warning("the controller's push of %d created and %d deleted topics had not arrived after %.1f s", len(present), len(absent), timeout)


def create_partitions(broker: Broker, call: CallContext, request: broker_pb2.CreatePartitionsRequest) -> broker_pb2.CreatePartitionsResponse:
    """Grow each topic to its new total partition count, or say why not."""
    request_parsing.topic_names([topic.name for topic in request.topics], required=True)
    controller = topic_admin_controller(broker, call)
    if controller is not None:
        return topic_forwarding.create_partitions(controller, call, request)
    results = []
    for entry in request.topics:
        try:
            check_local_topic_admin_allowed(broker, call, entry.name)
            results.append(topic_result(broker.topic_admin.create_partitions(entry.name, entry.count, validate_only=request.validate_only)))
        except Exception as error:  # this topic's answer
            results.append(topic_error(entry.name, error))
    return broker_pb2.CreatePartitionsResponse(topics=results)
