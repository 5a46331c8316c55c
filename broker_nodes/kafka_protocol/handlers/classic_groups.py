"""The classic group protocol: JoinGroup (key 11, v0-v9), SyncGroup (14, v0-v5), Heartbeat (12, v0-v4), LeaveGroup (13, v0-v5).

Thin conversions to ``requests.groups``, which authorizes (READ on the group), maps the group id
into the caller's tenant and hands back the wait, bounded, for the rebalance (parked on the
listener's loop, no thread held; see ``api.answer_when_done``) (see ``coordinator.groups.classic``
for the state machine). The broker passes the members' protocol metadata and the leader's
assignments through as bytes; it never decodes them.

Version notes: v0 JoinGroup has no rebalance timeout (the session timeout is used, as Kafka
does); a v4+ JoinGroup without a member id is answered MEMBER_ID_REQUIRED with one (KIP-394);
v5+ carries ``group.instance.id`` (static members); v7+ JoinGroup and v5 SyncGroup name the
protocol type; LeaveGroup v3+ takes several members (by member id, or a static member by its
instance id alone) and answers each.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.coordinator.groups.classic import JoinRequest
from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module, timeout_ms
from broker_nodes.kafka_protocol.handlers.data_common import throttle_time
from broker_nodes.requests import groups as group_requests
from broker_nodes.requests.groups import SyncRequest

JOIN_GROUP_KEY = 11
HEARTBEAT_KEY = 12
LEAVE_GROUP_KEY = 13
SYNC_GROUP_KEY = 14
MEMBER_ID_REQUIRED_VERSION = 4  # JoinGroup: a new member first gets its id (KIP-394)
NULLABLE_PROTOCOL_VERSION = 7  # JoinGroup: protocol_name may be null (on errors)
BATCHED_LEAVE_VERSION = 3
NO_GENERATION = -1


@api.handles(JOIN_GROUP_KEY, 0, 9)
def handle_join_group(context: api.KafkaRequestContext, request: Any) -> Any:
    session_timeout_ms = timeout_ms(request.session_timeout)
    rebalance_timeout = getattr(request, "rebalance_timeout", None)
    rebalance_timeout_ms = timeout_ms(rebalance_timeout) if rebalance_timeout is not None and context.api_version >= 1 else session_timeout_ms
    join = JoinRequest(
        member_id=request.member_id,
        protocol_type=request.protocol_type,
        protocols=tuple((protocol.name, bytes(protocol.metadata)) for protocol in request.protocols),
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms > 0 else session_timeout_ms,
        instance_id=getattr(request, "group_instance_id", None) or "",
        client_id=context.client_id or "",
        client_host=context.call.client_host,
        require_known_member_id=context.api_version >= MEMBER_ID_REQUIRED_VERSION,
    )
    pending = group_requests.start_join_group(context.broker, context.call, request.group_id, join)
    # Parks on the listener's loop (no thread held) until the rebalance completes.
    return api.answer_when_done(pending, lambda: _join_response(context, pending.outcome()))


def _join_response(context: api.KafkaRequestContext, outcome: group_requests.JoinOutcome) -> Any:
    schema = response_module(context)
    answer = outcome.answer
    if answer is None:
        return build(
            schema.JoinGroupResponse,
            throttle_time=throttle_time(0),
            error_code=ErrorCode(outcome.error_code),
            generation_id=NO_GENERATION,
            protocol_type=None,
            protocol_name=None if context.api_version >= NULLABLE_PROTOCOL_VERSION else "",
            leader="",
            skip_assignment=False,
            member_id=outcome.member_id,
            members=(),
        )
    return build(
        schema.JoinGroupResponse,
        throttle_time=throttle_time(0),
        error_code=ErrorCode.none,
        generation_id=answer.generation,
        protocol_type=answer.protocol_type,
        protocol_name=answer.protocol_name,
        leader=answer.leader,
        skip_assignment=False,
        member_id=answer.member_id,
        members=tuple(
            build(schema.JoinGroupResponseMember, member_id=member.member_id, group_instance_id=member.instance_id or None, metadata=member.metadata)
            for member in answer.members
        ),
    )


@api.handles(SYNC_GROUP_KEY, 0, 5)
def handle_sync_group(context: api.KafkaRequestContext, request: Any) -> Any:
    sync = SyncRequest(
        member_id=request.member_id,
        generation=request.generation_id,
        instance_id=getattr(request, "group_instance_id", None) or "",
        protocol_type=getattr(request, "protocol_type", None),
        protocol_name=getattr(request, "protocol_name", None),
        assignments={entry.member_id: bytes(entry.assignment) for entry in request.assignments},
    )
    pending = group_requests.start_sync_group(context.broker, context.call, request.group_id, sync)
    # Parks on the listener's loop (no thread held) until the leader's assignment arrives.
    return api.answer_when_done(pending, lambda: _sync_response(context, pending.outcome()))


def _sync_response(context: api.KafkaRequestContext, outcome: group_requests.SyncOutcome) -> Any:
    schema = response_module(context)
    answer = outcome.answer
    return build(
        schema.SyncGroupResponse,
        throttle_time=throttle_time(0),
        error_code=ErrorCode(outcome.error_code),
        protocol_type=answer.protocol_type if answer is not None else None,
        protocol_name=answer.protocol_name if answer is not None else None,
        assignment=answer.assignment if answer is not None else b"",
    )


@api.handles(HEARTBEAT_KEY, 0, 4)
def handle_heartbeat(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    code, _ = group_requests.classic_heartbeat(
        context.broker, context.call, request.group_id, request.member_id, getattr(request, "group_instance_id", None) or "", request.generation_id
    )
    return build(schema.HeartbeatResponse, throttle_time=throttle_time(0), error_code=ErrorCode(code))


@api.handles(LEAVE_GROUP_KEY, 0, 5)
def handle_leave_group(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    if context.api_version < BATCHED_LEAVE_VERSION:
        outcome = group_requests.leave_group(context.broker, context.call, request.group_id, [(request.member_id, "")])
        return build(schema.LeaveGroupResponse, throttle_time=throttle_time(0), error_code=ErrorCode(outcome.error_code))
    leaving = [(member.member_id, member.group_instance_id or "") for member in request.members]
    outcome = group_requests.leave_group(context.broker, context.call, request.group_id, leaving)
    return schema.LeaveGroupResponse(
        throttle_time=throttle_time(0),
        # Per member from v3: the top-level code is for the request as a whole (not coordinator, not authorized...).
        error_code=ErrorCode(outcome.error_code if not outcome.members else 0),
        members=tuple(
            schema.MemberResponse(member_id=member_id, group_instance_id=instance_id or None, error_code=ErrorCode(code))
            for member_id, instance_id, code, _ in outcome.members
        ),
    )
