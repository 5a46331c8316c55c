"""``/consumer-groups``: list, get, delete; members (``/consumers``), per-partition lag
(``/lags``), ``/lag-summary``, and ``/offsets:reset`` (a dry run by default).

Groups live on the brokers, not in the database: every call asks them through
``webapp.consumer_groups`` as the caller's tenant, so another tenant's group is not found
(404). Viewers read; developers delete groups and reset offsets. Brokers that cannot be
reached answer 503 with the standard error body.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import exceptions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.facade import Actor, Role
from webapp.api.permissions import HasRequiredRole, IsTenantMember
from webapp.api.schema import ERROR_DESCRIPTIONS, single_object
from webapp.api.serializers.groups import (
    STATE_NAMES,
    TYPE_NAMES,
    ConsumerGroupSerializer,
    ConsumerLagSerializer,
    ConsumerSerializer,
    LagSummarySerializer,
    OffsetResetResultSerializer,
    OffsetResetSerializer,
    PlannedChangeSerializer,
)
from webapp.api.views.base import ActionErrorsMixin
from webapp.consumer_groups import BrokerError, ResetOutcome, get_group, get_group_lag, list_groups, plan_reset
from webapp.group_changes import apply_recorded_reset, delete_recorded_group, undo_last_reset

ConsumerGroupListSerializer = single_object(
    inline_serializer("KafkaConsumerGroupList", {"kind": serializers.CharField(), "data": ConsumerGroupSerializer(many=True)})
)
ConsumerListSerializer = inline_serializer("KafkaConsumerList", {"kind": serializers.CharField(), "data": ConsumerSerializer(many=True)})
ConsumerLagListSerializer = inline_serializer("KafkaConsumerLagList", {"kind": serializers.CharField(), "data": ConsumerLagSerializer(many=True)})
UNAVAILABLE = OpenApiResponse(description=ERROR_DESCRIPTIONS["503"])


class BrokersUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The brokers cannot be reached; try again later."
    default_code = "brokers_unavailable"


class ConsumerGroupViewSet(ActionErrorsMixin, viewsets.ViewSet):
    permission_classes = [IsTenantMember, HasRequiredRole]
    lookup_field = "consumer_group_id"
    # Group ids are the tenant's own strings; only "/" cannot travel in one path segment.
    lookup_value_regex = r"[^/]+"

    def required_role(self, request: Request) -> str:
        return Role.VIEWER if request.method in ("GET", "HEAD", "OPTIONS") else Role.DEVELOPER

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, BrokerError):
            exc = BrokersUnavailable(exc.message)
        return super().handle_exception(exc)

    @property
    def actor(self) -> Actor:
        user = self.request.user
        assert isinstance(user, Actor), "IsTenantMember admits only actors"
        return user

    @property
    def tenant_id(self) -> str:
        return self.actor.tenant.public_id

    def context(self, **values: Any) -> dict[str, Any]:
        return {"request": self.request, "tenant_public_id": self.tenant_id, **values}

    @extend_schema(
        parameters=[
            OpenApiParameter("state", str, enum=STATE_NAMES, many=True, description="Only groups in these states (repeatable)."),
            OpenApiParameter("type", str, enum=TYPE_NAMES, many=True, description="Only groups of these types (repeatable): CONSUMER (KIP-848) or CLASSIC."),
        ],
        responses={200: ConsumerGroupListSerializer, 503: UNAVAILABLE},
    )
    def list(self, request: Request) -> Response:
        states = set(request.query_params.getlist("state"))
        unknown = sorted(states - set(STATE_NAMES))
        if unknown:
            raise exceptions.ValidationError({"state": [f"Unknown state {', '.join(unknown)}; known states: {', '.join(STATE_NAMES)}."]})
        types = set(request.query_params.getlist("type"))
        unknown_types = sorted(types - set(TYPE_NAMES))
        if unknown_types:
            raise exceptions.ValidationError({"type": [f"Unknown group type {', '.join(unknown_types)}; known types: {', '.join(TYPE_NAMES)}."]})
        groups = [overview.group for overview in list_groups(self.tenant_id, states=states or None, types=types or None)]
        return Response({"kind": "KafkaConsumerGroupList", "data": ConsumerGroupSerializer(groups, many=True, context=self.context()).data})

    @extend_schema(responses={200: ConsumerGroupSerializer, 503: UNAVAILABLE})
    def retrieve(self, request: Request, consumer_group_id: str) -> Response:
        return Response(ConsumerGroupSerializer(get_group(self.tenant_id, consumer_group_id), context=self.context()).data)

    @extend_schema(
        responses={204: None, 409: OpenApiResponse(description="The group has members."), 503: UNAVAILABLE},
        description="Delete a group without members and its committed offsets.",
    )
    def destroy(self, request: Request, consumer_group_id: str) -> Response:
        delete_recorded_group(self.actor, consumer_group_id)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(responses={200: ConsumerListSerializer, 503: UNAVAILABLE})
    @action(detail=True, methods=["get"], url_path="consumers", url_name="consumers")
    def consumers(self, request: Request, consumer_group_id: str) -> Response:
        group = get_group(self.tenant_id, consumer_group_id)
        data = ConsumerSerializer(group.members, many=True, context=self.context(consumer_group_id=group.group_id)).data
        return Response({"kind": "KafkaConsumerList", "data": data})

    @extend_schema(operation_id="v1_consumer_groups_consumer_retrieve", responses={200: ConsumerSerializer, 503: UNAVAILABLE})
    @action(detail=True, methods=["get"], url_path=r"consumers/(?P<consumer_id>[^/]+)", url_name="consumer")
    def consumer(self, request: Request, consumer_group_id: str, consumer_id: str) -> Response:
        group = get_group(self.tenant_id, consumer_group_id)
        for member in group.members:
            if member.member_id == consumer_id:
                return Response(ConsumerSerializer(member, context=self.context(consumer_group_id=group.group_id)).data)
        raise exceptions.NotFound(f"Consumer group '{group.group_id}' has no consumer '{consumer_id}'.")

    @extend_schema(
        responses={200: ConsumerLagListSerializer, 503: UNAVAILABLE},
        description="Committed offset, end offset and lag of every partition the group has committed or is assigned.",
    )
    @action(detail=True, methods=["get"], url_path="lags", url_name="lags")
    def lags(self, request: Request, consumer_group_id: str) -> Response:
        _, lag = get_group_lag(self.tenant_id, consumer_group_id)
        data = ConsumerLagSerializer(lag.partitions, many=True, context=self.context(consumer_group_id=consumer_group_id)).data
        return Response({"kind": "KafkaConsumerLagList", "data": data})

    @extend_schema(responses={200: LagSummarySerializer, 503: UNAVAILABLE})
    @action(detail=True, methods=["get"], url_path="lag-summary", url_name="lag-summary")
    def lag_summary(self, request: Request, consumer_group_id: str) -> Response:
        _, lag = get_group_lag(self.tenant_id, consumer_group_id)
        return Response(LagSummarySerializer(lag, context=self.context(consumer_group_id=consumer_group_id)).data)

    @extend_schema(
        request=OffsetResetSerializer,
        responses={200: OffsetResetResultSerializer, 409: OpenApiResponse(description="The group has members: its offsets cannot change."), 503: UNAVAILABLE},
        description="Plan (dry_run true, the default) or apply a change of the group's committed offsets. Applying needs a group without members.",
    )
    @action(detail=True, methods=["post"], url_path="offsets:reset", url_name="offsets-reset")
    def reset_offsets(self, request: Request, consumer_group_id: str) -> Response:
        payload = OffsetResetSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        dry_run = payload.validated_data["dry_run"]
        if dry_run:
            outcome = plan_reset(self.tenant_id, consumer_group_id, payload.reset_request())
        else:
            # Applied resets are audited with the offsets they replaced (what offsets:undo-reset writes back).
            outcome = apply_recorded_reset(self.actor, consumer_group_id, payload.reset_request())
        return self._reset_response(consumer_group_id, outcome, dry_run)

    @extend_schema(
        request=None,
        responses={
            200: OffsetResetResultSerializer,
            404: OpenApiResponse(description="The group has no applied reset to undo (or the last one was an undo)."),
            409: OpenApiResponse(description="The group has members, or committed offsets since the reset: undoing would discard that progress."),
            503: UNAVAILABLE,
        },
        description="Write back the offsets committed just before the group's last applied reset (recorded in the audit log), "
        "while the group has no members and has committed nothing since. Partitions with no commit before the reset keep their offset.",
    )
    @action(detail=True, methods=["post"], url_path="offsets:undo-reset", url_name="offsets-undo-reset")
    def undo_reset_offsets(self, request: Request, consumer_group_id: str) -> Response:
        return self._reset_response(consumer_group_id, undo_last_reset(self.actor, consumer_group_id), dry_run=False)

    def _reset_response(self, consumer_group_id: str, outcome: ResetOutcome, dry_run: bool) -> Response:
        return Response(
            {
                "kind": "KafkaConsumerGroupOffsetReset",
                "cluster_id": self.tenant_id,
                "consumer_group_id": consumer_group_id,
                "dry_run": dry_run,
                "applied": outcome.applied,
                "active_members_count": outcome.active_members,
                "data": PlannedChangeSerializer(outcome.changes, many=True).data,
            }
        )
