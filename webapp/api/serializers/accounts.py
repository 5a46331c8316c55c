"""Shapes of tenants, members, invitations, service accounts, API keys, quotas, sign-up."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.accounts.models import ApiKey, ApiKeyKind, Invitation, Membership, Plan, Role, ServiceAccount, Tenant
from webapp.catalog.models import Quota


class PlanLimitsSerializer(serializers.Serializer):
    max_topics = serializers.IntegerField()
    max_partitions = serializers.IntegerField()
    max_partitions_per_topic = serializers.IntegerField()
    produce_bytes_per_second = serializers.IntegerField()
    consume_bytes_per_second = serializers.IntegerField()


class TenantSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="public_id")
    limits = PlanLimitsSerializer()
    role = serializers.SerializerMethodField()

    class Meta:
        model = Tenant
        fields = ["id", "name", "slug", "plan", "limits", "role", "created_at"]

    def get_role(self, tenant: Tenant) -> str:
        """The caller's role in the tenant."""
        return self.context["role"]


class TenantUpdateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    plan = serializers.ChoiceField(choices=Plan.values, required=False)


class MemberSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="public_id")
    username = serializers.CharField(source="user.username")
    email = serializers.EmailField(source="user.email")
    principal = serializers.CharField()

    class Meta:
        model = Membership
        fields = ["id", "username", "email", "role", "principal", "created_at"]


class MemberUpdateSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)


class InvitationCreateSerializer(serializers.Serializer):
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=Role.choices, default=Role.DEVELOPER)


class InvitationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Invitation
        fields = ["email", "role", "created_at", "expires_at", "accepted_at"]


class NewInvitationSerializer(InvitationSerializer):
    token = serializers.SerializerMethodField()

    class Meta(InvitationSerializer.Meta):
        fields = InvitationSerializer.Meta.fields + ["token"]

    def get_token(self, invitation: Invitation) -> str:
        """Shown once: the invitee accepts with it."""
        return self.context["token"]


class InvitationAcceptSerializer(serializers.Serializer):
    token = serializers.CharField(max_length=200)
    # Without a signed-in session, the invitee signs up with these.
    username = serializers.CharField(max_length=200, required=False)
    password = serializers.CharField(max_length=200, required=False, write_only=True)


class ServiceAccountSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="public_id")
    display_name = serializers.CharField(source="name")
    principal = serializers.CharField()

    class Meta:
        model = ServiceAccount
        fields = ["id", "display_name", "description", "role", "principal", "created_at"]


class ServiceAccountCreateSerializer(serializers.Serializer):
    display_name = serializers.CharField(max_length=200, allow_blank=True)
    description = serializers.CharField(max_length=1000, allow_blank=True, default="")
    role = serializers.ChoiceField(choices=Role.choices, default=Role.DEVELOPER)


class ServiceAccountUpdateSerializer(serializers.Serializer):
    display_name = serializers.CharField(max_length=200, allow_blank=True, required=False)
    description = serializers.CharField(max_length=1000, allow_blank=True, required=False)
    role = serializers.ChoiceField(choices=Role.choices, required=False)


class KeyOwnerSerializer(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.CharField()


class ApiKeySerializer(serializers.ModelSerializer):
    """Never carries the secret: it exists only in the creation response."""

    id = serializers.CharField(source="key_id")
    owner = serializers.SerializerMethodField()
    state = serializers.SerializerMethodField()

    class Meta:
        model = ApiKey
        fields = ["id", "kind", "owner", "description", "state", "created_at", "last_used_at", "revoked_at"]

    @extend_schema_field(KeyOwnerSerializer)
    def get_owner(self, key: ApiKey) -> dict[str, str]:
        if key.owner_service_account is not None:
            return {"id": key.owner_service_account.public_id, "kind": "ServiceAccount"}
        assert key.owner_membership is not None
        return {"id": key.owner_membership.public_id, "kind": "User"}

    def get_state(self, key: ApiKey) -> str:
        return "ACTIVE" if key.revoked_at is None else "REVOKED"


class NewApiKeySerializer(ApiKeySerializer):
    secret = serializers.SerializerMethodField()
    job = serializers.SerializerMethodField()

    class Meta(ApiKeySerializer.Meta):
        fields = ApiKeySerializer.Meta.fields + ["secret", "job"]

    def get_secret(self, key: ApiKey) -> str:
        """Shown once; store it now."""
        return self.context["secret"]

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_job(self, key: ApiKey) -> dict[str, Any] | None:
        return self.context.get("job")


class ApiKeyCreateSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=ApiKeyKind.values)
    owner = serializers.CharField(max_length=64, required=False, help_text="sa-... or u-...; yourself when left out.")
    description = serializers.CharField(max_length=1000, allow_blank=True, default="")


class QuotaSerializer(serializers.ModelSerializer):
    effective_produce_bytes_per_second = serializers.IntegerField()
    effective_consume_bytes_per_second = serializers.IntegerField()

    class Meta:
        model = Quota
        fields = ["produce_bytes_per_second", "consume_bytes_per_second", "effective_produce_bytes_per_second", "effective_consume_bytes_per_second", "updated_at"]


class QuotaUpdateSerializer(serializers.Serializer):
    produce_bytes_per_second = serializers.IntegerField(allow_null=True, min_value=-(2**62), max_value=2**62)
    consume_bytes_per_second = serializers.IntegerField(allow_null=True, min_value=-(2**62), max_value=2**62)


class SignUpSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=200)
    email = serializers.CharField(max_length=254)
    password = serializers.CharField(max_length=200, write_only=True)
    tenant_name = serializers.CharField(max_length=200, allow_blank=True)


class SignUpResultSerializer(serializers.Serializer):
    username = serializers.CharField()
    tenant = serializers.DictField()
    member_id = serializers.CharField()
