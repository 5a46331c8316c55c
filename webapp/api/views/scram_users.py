"""``/scram-users``: the tenant's SCRAM users (members list; admins ``DELETE /scram-users/{name}``).

SCRAM users are made with Kafka's AlterUserScramCredentials (any Kafka AdminClient, or the SDK's
``AdminClient.alter_user_scram_credentials``): the password never reaches the control plane in
clear, so there is no REST call that sets one. The tenant's admins list them here, with the
login name Kafka clients use (``<name>@<tenant id>``) and their mechanisms and iteration counts
(never a salt or a key), and delete one with every credential it has; its open Kafka
connections are refused at their next request once the brokers have the new security snapshot.
Like service accounts, every member reads them and admins delete them. Another tenant's user,
like an unknown one, is 404.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.facade import Actor, Role, do_delete_scram_user, scram_users
from webapp.api.permissions import HasRequiredRole, IsTenantMember
from webapp.api.schema import single_object
from webapp.api.views.base import ActionErrorsMixin


class ScramCredentialInfoSerializer(serializers.Serializer):
    mechanism = serializers.CharField()
    iterations = serializers.IntegerField()


class ScramUserSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The user's name in this tenant; its principal is User:<name>.")
    login_name = serializers.CharField(help_text="The SASL/SCRAM username Kafka clients log in with: <name>@<tenant id>.")
    principal = serializers.SerializerMethodField()
    credentials = serializers.SerializerMethodField()
    updated_at = serializers.DateTimeField()

    def get_principal(self, user: object) -> str:
        return f"User:{user.name}"  # type: ignore[attr-defined]

    @extend_schema_field(ScramCredentialInfoSerializer(many=True))
    def get_credentials(self, user: object) -> list[dict[str, object]]:
        return [{"mechanism": mechanism, "iterations": iterations} for mechanism, iterations in user.mechanisms]  # type: ignore[attr-defined]


ScramUserListSerializer = single_object(inline_serializer("ScramUserList", {"kind": serializers.CharField(), "data": ScramUserSerializer(many=True)}))


class ScramUserViewSet(ActionErrorsMixin, viewsets.ViewSet):
    permission_classes = [IsTenantMember, HasRequiredRole]
    lookup_field = "name"
    lookup_value_regex = "[^/]+"

    def required_role(self, request: Request) -> str:
        return Role.VIEWER if request.method in ("GET", "HEAD", "OPTIONS") else Role.ADMIN

    @property
    def actor(self) -> Actor:
        user = self.request.user
        assert isinstance(user, Actor), "IsTenantMember admits only actors"
        return user

    @extend_schema(responses={200: ScramUserListSerializer}, description="The tenant's SCRAM users, by name.")
    def list(self, request: Request) -> Response:
        return Response({"kind": "ScramUserList", "data": ScramUserSerializer(scram_users(self.actor.tenant), many=True).data})

    @extend_schema(responses={204: OpenApiResponse(description="Deleted with every credential it had.")})
    def destroy(self, request: Request, name: str) -> Response:
        do_delete_scram_user(self.actor, name, self.request_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
