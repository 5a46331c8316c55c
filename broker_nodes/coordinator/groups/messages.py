"""The consumer-group messages of ``broker.proto`` to and from the coordinator's values.

Names are qualified with the caller's tenant on the way in and made plain on the way out,
so a client only ever sees its own plain topic and group names. Presence matters in a
heartbeat: an absent ``subscription`` or ``owned`` means "unchanged" (proto3 message fields
have presence).
"""

from __future__ import annotations

from collections.abc import Iterable

from broker_nodes.coordinator.groups.coordinator import GroupSnapshot, ListedGroup
from broker_nodes.coordinator.groups.errors import InvalidGroupRequestError
from broker_nodes.coordinator.groups.group import Heartbeat, HeartbeatAnswer, Subscription
from broker_nodes.coordinator.groups.member import TopicPartition
from broker_nodes.security.access import CallContext
from grpc_protos.weir.v1 import broker_pb2


def heartbeat_request(request: broker_pb2.ConsumerGroupHeartbeatRequest, call: CallContext) -> Heartbeat:
    """The parsed heartbeat; InvalidGroupRequestError for a negative partition number."""
    subscription = None
    if request.HasField("subscription"):
        subscription = Subscription(tuple(request.subscription.topic_names), request.subscription.topic_regex)
    owned = None
    if request.HasField("owned"):
        owned = frozenset(_qualified_partitions(request.owned.topics, call, "owned"))
    return Heartbeat(
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        client_id=request.client_id,
        client_host=call.client_host,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        session_timeout_ms=request.session_timeout_ms,
        subscription=subscription,
        server_assignor=request.server_assignor,
        owned=owned,
    )


def _qualified_partitions(topics: Iterable[broker_pb2.TopicPartitions], call: CallContext, field: str) -> Iterable[TopicPartition]:
    for entry in topics:
        if not entry.topic:
            raise InvalidGroupRequestError(f"a topic of {field} has an empty name")
        for partition in entry.partitions:
            if partition < 0:
                raise InvalidGroupRequestError(f"partition {partition} of topic {entry.topic!r} in {field} is negative")
            yield call.qualify(entry.topic), partition


def topic_partitions(partitions: Iterable[TopicPartition], call: CallContext) -> list[broker_pb2.TopicPartitions]:
    """Partitions grouped by topic, plain names, sorted."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(call.plain(topic), []).append(partition)
    return [broker_pb2.TopicPartitions(topic=topic, partitions=sorted(numbers)) for topic, numbers in sorted(by_topic.items())]


def heartbeat_response(answer: HeartbeatAnswer, call: CallContext) -> broker_pb2.ConsumerGroupHeartbeatResponse:
    response = broker_pb2.ConsumerGroupHeartbeatResponse(
        member_id=answer.member_id, member_epoch=answer.member_epoch, heartbeat_interval_ms=answer.heartbeat_interval_ms
    )
    if answer.assignment is not None:
        response.assignment.SetInParent()  # present even when empty: "you own nothing now"
        response.assignment.topics.extend(topic_partitions(answer.assignment, call))
    return response


def group_description(snapshot: GroupSnapshot, call: CallContext) -> broker_pb2.GroupDescription:
    members = [
        broker_pb2.GroupMemberDescription(
            member_id=member.member_id,
            instance_id=member.instance_id,
            rack_id=member.rack_id,
            member_epoch=member.member_epoch,
            client_id=member.client_id,
            client_host=member.client_host,
            subscribed_topic_names=list(member.subscribed_topic_names),
            subscribed_topic_regex=member.subscribed_topic_regex,
            assignment=topic_partitions(member.assigned, call),
            target_assignment=topic_partitions(snapshot.target.get(member.member_id, frozenset()), call),
        )
        for member in snapshot.members
    ]
    return broker_pb2.GroupDescription(
        group_id=call.plain(snapshot.group_id),
        state=snapshot.state.value,
        group_epoch=snapshot.group_epoch,
        assignment_epoch=snapshot.assignment_epoch,
        assignor_name=snapshot.assignor_name,
        members=members,
        group_type=snapshot.group_type,
        protocol_type=snapshot.protocol_type,
    )


def listed_group(group: ListedGroup, call: CallContext) -> broker_pb2.ListedGroup:
    return broker_pb2.ListedGroup(group_id=call.plain(group.group_id), state=group.state.value, protocol_type=group.protocol_type, group_type=group.group_type)
