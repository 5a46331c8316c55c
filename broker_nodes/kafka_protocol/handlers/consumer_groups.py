"""KIP-848 consumer groups: ConsumerGroupHeartbeat (key 68, v0-v1) and ConsumerGroupDescribe (69, v0-v1), via ``requests.groups``.

The same coordinator as the gRPC SDK's groups (server-side assignors, member epochs). Kafka's
messages name topics by id: owned partitions come in by topic id and are mapped to the caller's
topics (an id the caller does not own, or that no longer exists, is left out, as Kafka does
with unresolved ids); assignments go out by id, and ConsumerGroupDescribe adds the topic names.
Null fields of a heartbeat mean "unchanged"; ``rebalance_timeout`` -1 means the broker's default.
ConsumerGroupDescribe of a classic group answers GROUP_ID_NOT_FOUND (it is not a consumer
group), as Kafka 4 does; describe it with DescribeGroups.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.coordinator.groups.coordinator import CLASSIC_GROUP_TYPE
from broker_nodes.coordinator.groups.errors import InvalidGroupRequestError
from broker_nodes.coordinator.groups.group import Heartbeat, Subscription
from broker_nodes.coordinator.groups.member import TopicPartition
from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, error_fields, response_module, timeout_ms
from broker_nodes.kafka_protocol.handlers.data_common import throttle_time
from broker_nodes.kafka_protocol.handlers.group_admin import group_operations
from broker_nodes.requests import groups as group_requests
from broker_nodes.requests.topics import plain_name_of_topic_id
from broker_nodes.security.access import CallContext
from broker_nodes.server.broker import Broker

CONSUMER_GROUP_HEARTBEAT_KEY = 68
CONSUMER_GROUP_DESCRIBE_KEY = 69
CONSUMER_MEMBER_TYPE = 1  # ConsumerGroupDescribe v1's member_type: a member speaking the consumer protocol
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def _owned(broker: Broker, call: CallContext, entries: Iterable[Any]) -> frozenset[TopicPartition]:
    owned = set()
    for entry in entries:
        plain = plain_name_of_topic_id(broker, call, str(entry.topic_id))
        for partition in entry.partitions:
            if partition < 0:
                raise InvalidGroupRequestError(f"partition {partition} of topic id {entry.topic_id} in the owned partitions is negative")
            if plain is not None:
                owned.add((call.qualify(plain), int(partition)))
    return frozenset(owned)


def _heartbeat(context: api.KafkaRequestContext, request: Any) -> Heartbeat:
    names = request.subscribed_topic_names
    regex = getattr(request, "subscribed_topic_regex", None)
    subscription = None if names is None and regex is None else Subscription(tuple(names or ()), regex or "")
    rebalance_timeout_ms = timeout_ms(request.rebalance_timeout)
    return Heartbeat(
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id or "",
        rack_id=request.rack_id or "",
        client_id=context.client_id or "",
        client_host=context.call.client_host,
        rebalance_timeout_ms=max(rebalance_timeout_ms, 0),
        subscription=subscription,
        server_assignor=request.server_assignor or "",
        owned=None if request.topic_partitions is None else _owned(context.broker, context.call, request.topic_partitions),
    )


def _by_topic_id(broker: Broker, partitions: Iterable[TopicPartition]) -> dict[uuid.UUID, tuple[str, list[int]]]:
    grouped: dict[uuid.UUID, tuple[str, list[int]]] = {}
    for topic, partition in sorted(partitions):
        metadata = broker.registry.get(topic)
        if metadata is None:
            continue  # deleted meanwhile: its partitions are gone from the next assignment
        grouped.setdefault(uuid.UUID(metadata.topic_id), (topic, []))[1].append(partition)
    return grouped


@api.handles(CONSUMER_GROUP_HEARTBEAT_KEY, 0, 1)
def handle_consumer_group_heartbeat(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    outcome = group_requests.consumer_group_heartbeat(context.broker, context.call, request.group_id, lambda: _heartbeat(context, request))
    answer = outcome.answer
    if answer is None:
        return schema.ConsumerGroupHeartbeatResponse(
            throttle_time=throttle_time(0),
            **error_fields(outcome.error_code, outcome.error_message),
            member_id=request.member_id or None,
            member_epoch=request.member_epoch,
            heartbeat_interval=throttle_time(0),
            assignment=None,
        )
    assignment = None
    if answer.assignment is not None:
        assignment = schema.Assignment(
            topic_partitions=tuple(
                schema.TopicPartitions(topic_id=topic_id, partitions=tuple(numbers))
                for topic_id, (_, numbers) in _by_topic_id(context.broker, answer.assignment).items()
            )
        )
    return schema.ConsumerGroupHeartbeatResponse(
        throttle_time=throttle_time(0),
        **error_fields(0, ""),
        member_id=answer.member_id,
        member_epoch=answer.member_epoch,
        heartbeat_interval=throttle_time(answer.heartbeat_interval_ms),
        assignment=assignment,
    )


def _assignment(schema: Any, broker: Broker, call: CallContext, partitions: Iterable[TopicPartition]) -> Any:
    return schema.Assignment(
        topic_partitions=tuple(
            schema.TopicPartitions(topic_id=topic_id, topic_name=call.plain(topic), partitions=tuple(numbers))
            for topic_id, (topic, numbers) in _by_topic_id(broker, partitions).items()
        )
    )


@api.handles(CONSUMER_GROUP_DESCRIBE_KEY, 0, 1)
def handle_consumer_group_describe(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    call = context.call
    groups = []
    for outcome in group_requests.describe_groups(context.broker, call, list(request.group_ids)):
        snapshot = outcome.snapshot
        if snapshot is None or snapshot.group_type == CLASSIC_GROUP_TYPE:
            code, message = (
                (outcome.error_code, outcome.error_message)
                if snapshot is None
                else (ErrorCode.group_id_not_found, f"group {outcome.group_id!r} is not a consumer group")
            )
            groups.append(
                schema.DescribedGroup(
                    **error_fields(code, message),
                    group_id=outcome.group_id,
                    group_state=group_requests.dead_state(code),
                    group_epoch=-1,
                    assignment_epoch=-1,
                    assignor_name="",
                    members=(),
                    authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
                )
            )
            continue
        members = tuple(
            build(
                schema.Member,
                member_id=member.member_id,
                instance_id=member.instance_id or None,
                rack_id=member.rack_id or None,
                member_epoch=member.member_epoch,
                client_id=member.client_id,
                client_host=member.client_host,
                subscribed_topic_names=tuple(member.subscribed_topic_names),
                subscribed_topic_regex=member.subscribed_topic_regex or None,
                assignment=_assignment(schema, context.broker, call, member.assigned),
                target_assignment=_assignment(schema, context.broker, call, snapshot.target.get(member.member_id, frozenset())),
                member_type=CONSUMER_MEMBER_TYPE,
            )
            for member in snapshot.members
        )
        groups.append(
            schema.DescribedGroup(
                **error_fields(0, ""),
                group_id=outcome.group_id,
                group_state=snapshot.state.value,
                group_epoch=snapshot.group_epoch,
                assignment_epoch=snapshot.assignment_epoch,
                assignor_name=snapshot.assignor_name,
                members=members,
                authorized_operations=group_operations(context, outcome.group_id, request.include_authorized_operations),
            )
        )
    return schema.ConsumerGroupDescribeResponse(throttle_time=throttle_time(0), groups=tuple(groups))
