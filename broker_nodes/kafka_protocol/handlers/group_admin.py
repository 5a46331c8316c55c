"""DescribeGroups (key 15, v0-v5), ListGroups (16, v0-v5) and DeleteGroups (42, v0-v2), via ``requests.groups``.

DescribeGroups shows classic groups as Kafka does (members' metadata and assignments only while
Stable), a KIP-848 group in the same shape without the bytes, and a group that does not exist
as Dead without an error. ListGroups lists the groups this broker coordinates that the caller
may describe, with the states filter (v4+) and the types filter (v5: ``classic`` or ``consumer``).
With ``include_authorized_operations`` (v3+) a described group carries the caller's operations
on it (``requests.groups.authorized_group_operations``), else Kafka's "not provided" (INT32_MIN).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import throttle_time
from broker_nodes.kafka_protocol.handlers.describe_cluster import operation_bits
from broker_nodes.requests import groups as group_requests
from broker_nodes.server.errors import InvalidRequestError, error_code_and_message

DESCRIBE_GROUPS_KEY = 15
LIST_GROUPS_KEY = 16
DELETE_GROUPS_KEY = 42


@api.handles(DESCRIBE_GROUPS_KEY, 0, 5)
def handle_describe_groups(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    groups = []
    for outcome in group_requests.describe_classic_groups(context.broker, context.call, list(request.groups)):
        members = tuple(
            build(
                schema.DescribedGroupMember,
                member_id=member.member_id,
                group_instance_id=member.instance_id or None,
                client_id=member.client_id,
                client_host=member.client_host,
                member_metadata=member.metadata,
                member_assignment=member.assignment,
            )
            for member in outcome.members
        )
        groups.append(
            build(
                schema.DescribedGroup,
                error_code=ErrorCode(outcome.error_code),
                group_id=outcome.group_id,
                group_state=outcome.state if not outcome.error_code else "",
                protocol_type=outcome.protocol_type,
                protocol_data=outcome.protocol_name,
                members=members,
                authorized_operations=group_operations(
                    context, outcome.group_id, getattr(request, "include_authorized_operations", False) and not outcome.error_code
                ),
            )
        )
    return build(schema.DescribeGroupsResponse, throttle_time=throttle_time(0), groups=tuple(groups))


def group_operations(context: api.KafkaRequestContext, group_id: str, requested: bool) -> int:
    """The caller's operations on the group as Kafka's bit field, or "not requested"."""
    return operation_bits(frozenset(group_requests.authorized_group_operations(context.call, group_id)) if requested else None)


@api.handles(LIST_GROUPS_KEY, 0, 5)
def handle_list_groups(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    try:
        listed = group_requests.list_groups(
            context.broker, context.call, tuple(getattr(request, "states_filter", ()) or ()), tuple(getattr(request, "types_filter", ()) or ())
        )
    except InvalidRequestError as error:
        code, _ = error_code_and_message(error)
        return build(schema.ListGroupsResponse, throttle_time=throttle_time(0), error_code=ErrorCode(code), groups=())
    return build(
        schema.ListGroupsResponse,
        throttle_time=throttle_time(0),
        error_code=ErrorCode.none,
        groups=tuple(
            build(schema.ListedGroup, group_id=group.group_id, protocol_type=group.protocol_type, group_state=group.state.value, group_type=group.group_type)
            for group in listed
        ),
    )


@api.handles(DELETE_GROUPS_KEY, 0, 2)
def handle_delete_groups(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    names = list(request.groups_names)
    try:
        results = [(result.group_id, result.error_code) for result in group_requests.delete_groups(context.broker, context.call, names)]
    except InvalidRequestError as error:  # a group named twice, or none: Kafka's answer is per group
        code, _ = error_code_and_message(error)
        results = [(name, code) for name in names]
    return schema.DeleteGroupsResponse(
        throttle_time=throttle_time(0), results=tuple(schema.DeletableGroupResult(group_id=group_id, error_code=ErrorCode(code)) for group_id, code in results)
    )
