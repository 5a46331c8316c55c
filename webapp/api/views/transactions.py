"""``/transactions``: list, get, ``{id}:abort``; and ``/transactions:hanging?topic=`` (Kafka's find-hanging).

Transactions live on the brokers, not in the database: every call asks them through
``webapp.transactions`` as the caller's tenant, so another tenant's transactional id is not
found (404). Viewers read; developers abort (as they reset consumer groups' offsets). Brokers
that cannot be reached answer 503 with the standard error body.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import exceptions, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.facade import Actor, Role
from webapp.api.permissions import HasRequiredRole, IsTenantMember
from webapp.api.schema import single_object
from webapp.api.serializers.transactions import HangingTransactionSerializer, TransactionSerializer
from webapp.api.views.base import ActionErrorsMixin
from webapp.api.views.groups import UNAVAILABLE, BrokersUnavailable
from webapp.consumer_groups import BrokerError
from webapp.transactions import STATE_NAMES, abort_transaction, find_hanging, get_transaction, list_transactions

TransactionListSerializer = single_object(
    inline_serializer("KafkaTransactionList", {"kind": serializers.CharField(), "data": TransactionSerializer(many=True)})
)
HangingTransactionListSerializer = single_object(
    inline_serializer("KafkaHangingTransactionList", {"kind": serializers.CharField(), "data": HangingTransactionSerializer(many=True)})
)
# Kafka's rule for topic names (the brokers refuse any other name).
TOPIC_NAME_PATTERN = r"^[a-zA-Z0-9._-]{1,249}$"


class TransactionViewSet(ActionErrorsMixin, viewsets.ViewSet):
    permission_classes = [IsTenantMember, HasRequiredRole]
    lookup_field = "transactional_id"

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

    def context(self) -> dict[str, Any]:
        return {"request": self.request, "tenant_public_id": self.tenant_id}

    @extend_schema(
        parameters=[OpenApiParameter("state", str, enum=STATE_NAMES, many=True, description="Only transactional ids in these states (repeatable).")],
        responses={200: TransactionListSerializer, 503: UNAVAILABLE},
        description="The tenant's transactional ids with their state; hanging marks transactions open longer than their timeout.",
    )
    def list(self, request: Request) -> Response:
        states = set(request.query_params.getlist("state"))
        unknown = sorted(states - set(STATE_NAMES))
        if unknown:
            raise exceptions.ValidationError({"state": [f"Unknown state {', '.join(unknown)}; known states: {', '.join(STATE_NAMES)}."]})
        transactions = list_transactions(self.tenant_id, states=states or None)
        return Response({"kind": "KafkaTransactionList", "data": TransactionSerializer(transactions, many=True, context=self.context()).data})

    @extend_schema(responses={200: TransactionSerializer, 503: UNAVAILABLE})
    def retrieve(self, request: Request, transactional_id: str) -> Response:
        return Response(TransactionSerializer(get_transaction(self.tenant_id, transactional_id), context=self.context()).data)

    @extend_schema(
        operation_id="v1_transactions_abort",
        request=None,
        responses={204: None, 409: OpenApiResponse(description="No transaction is open, or one is completing."), 503: UNAVAILABLE},
        description="Abort the transactional id's ongoing transaction: its producer is fenced and ABORT markers end it in every partition.",
    )
    def abort(self, request: Request, transactional_id: str) -> Response:
        abort_transaction(self.tenant_id, transactional_id, actor=self.actor, door="api")
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        operation_id="v1_transactions_hanging_list",
        parameters=[OpenApiParameter("topic", str, required=True, pattern=TOPIC_NAME_PATTERN, description="The topic whose partitions are examined.")],
        responses={200: HangingTransactionListSerializer, 404: OpenApiResponse(description="No such topic in the caller's tenant."), 503: UNAVAILABLE},
        description="Transactions left open in the topic's partitions that no coordinator will end (Kafka's find-hanging).",
    )
    def hanging(self, request: Request) -> Response:
        topic = request.query_params.get("topic", "")
        if not topic:
            raise exceptions.ValidationError({"topic": ["This query parameter is required."]})
        found = find_hanging(self.tenant_id, topic)
        return Response({"kind": "KafkaHangingTransactionList", "data": HangingTransactionSerializer(found, many=True, context=self.context()).data})
