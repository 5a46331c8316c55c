"""Shapes of tenants, members, invitations, service accounts, API keys, quotas, sign-up."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.accounts.facade import (
    PLAN_LIMITS,
    ApiKey,
    ApiKeyApplication,
    ApiKeyKind,
    Invitation,
    KeyAccess,
    Membership,
    Plan,
    Role,
    ServiceAccount,
    Tenant,
    key_access,
)
from webapp.api.serializers.common import JobSummarySerializer
from webapp.api.serializers.strict import InputSerializer
from webapp.catalog.facade import Quota


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


# Text that is not only white space (names are stripped, and a blank one is refused).
NOT_BLANK = r"\S"
# The rates a quota may name: 1 .. the largest plan's (a tenant's own plan may allow less: 409).
MAX_QUOTA_RATE = max(max(limits.produce_bytes_per_second, limits.consume_bytes_per_second) for limits in PLAN_LIMITS.values())


class TenantUpdateSerializer(InputSerializer):
    name = serializers.RegexField(NOT_BLANK, max_length=100, required=False, help_text="1 to 100 characters, not only spaces.")
    plan = serializers.ChoiceField(choices=Plan.values, required=False)


class MemberSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="public_id")
    username = serializers.CharField(source="user.username")
    email = serializers.EmailField(source="user.email")
    principal = serializers.CharField()

    class Meta:
        model = Membership
        fields = ["id", "username", "email", "role", "principal", "created_at"]


class MemberRoleChangeSerializer(MemberSerializer):
    """The member after a role change, with the job that tells the brokers (``PATCH /members/{id}``)."""

    job = serializers.SerializerMethodField(
        help_text=(
            "SYNC_SECURITY when the role crossed the admin line and the member holds cluster keys (they become, or stop being, the tenant's"
            " cluster administrator once the brokers have it); null otherwise."
        )
    )

    class Meta(MemberSerializer.Meta):
        fields = MemberSerializer.Meta.fields + ["job"]

    @extend_schema_field(JobSummarySerializer(allow_null=True))
    def get_job(self, membership: Membership) -> dict[str, Any] | None:
        return self.context["job"]


class MemberUpdateSerializer(InputSerializer):
    # A PATCH whose one field is required: the schema must not call it optional.
    patch_requires_fields = True

    role = serializers.ChoiceField(choices=Role.choices)


class InvitationCreateSerializer(InputSerializer):
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


class InvitationAcceptSerializer(InputSerializer):
    token = serializers.CharField(max_length=200)
    # Without a signed-in session, the invitee signs up with these.
    username = serializers.RegexField(r"^[\w.@+-]+$", max_length=150, required=False, help_text="Letters, digits and @ . + - _ (Django's user names).")
    password = serializers.RegexField(
        r"[^0-9]",
        min_length=10,
        max_length=200,
        required=False,
        write_only=True,
        help_text="As for sign-up: at least 10 characters, not all digits, not common.",
    )


class ServiceAccountSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="public_id")
    display_name = serializers.CharField(source="name")
    principal = serializers.CharField()

    class Meta:
        model = ServiceAccount
        fields = ["id", "display_name", "description", "role", "principal", "created_at"]


# A service account is never an owner.
SERVICE_ACCOUNT_ROLES = [(role, label) for role, label in Role.choices if role != Role.OWNER]


class ServiceAccountCreateSerializer(InputSerializer):
    display_name = serializers.RegexField(NOT_BLANK, max_length=64, help_text="1 to 64 characters, not only spaces.")
    description = serializers.CharField(max_length=256, allow_blank=True, default="")
    role = serializers.ChoiceField(choices=SERVICE_ACCOUNT_ROLES, default=Role.DEVELOPER, help_text="At most the caller's own role (403 otherwise).")


class ServiceAccountUpdateSerializer(InputSerializer):
    display_name = serializers.RegexField(NOT_BLANK, max_length=64, required=False, help_text="1 to 64 characters, not only spaces.")
    description = serializers.CharField(max_length=256, allow_blank=True, required=False)
    role = serializers.ChoiceField(choices=SERVICE_ACCOUNT_ROLES, required=False, help_text="At most the caller's own role (403 otherwise).")


class KeyOwnerSerializer(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.CharField()


class ApiKeySerializer(serializers.ModelSerializer):
    """Never carries the secret: it exists only in the creation response."""

    id = serializers.CharField(source="key_id")
    owner = serializers.SerializerMethodField()
    state = serializers.SerializerMethodField()
    access = serializers.SerializerMethodField(
        help_text=(
            "What the key acts with, from its owner's current role. cluster_admin: a cluster key of a member with the admin or owner role is its"
            " tenant's cluster administrator; the brokers consult no ACL for it (Confluent Cloud's CloudClusterAdmin, Kafka's super.users within"
            " the tenant). acls: every other cluster key (developers', viewers' and every service account's, whatever its role): the ACL"
            " bindings naming the owner's principal decide. role: a cloud key, which the REST API authorizes with its owner's role."
            " A revoked key does nothing."
        )
    )

    class Meta:
        model = ApiKey
        fields = ["id", "kind", "owner", "access", "description", "state", "created_at", "last_used_at", "revoked_at"]

    @extend_schema_field(KeyOwnerSerializer)
    def get_owner(self, key: ApiKey) -> dict[str, str]:
        if key.owner_service_account is not None:
            return {"id": key.owner_service_account.public_id, "kind": "ServiceAccount"}
        assert key.owner_membership is not None
        return {"id": key.owner_membership.public_id, "kind": "User"}

    def get_state(self, key: ApiKey) -> str:
        return "ACTIVE" if key.revoked_at is None else "REVOKED"

    @extend_schema_field(serializers.ChoiceField(choices=KeyAccess.choices))
    def get_access(self, key: ApiKey) -> str:
        return key_access(key).value


class KeyApplicationSerializer(serializers.ModelSerializer):
    """An application brokers saw using a cluster key. ``client_id``, ``software_name`` and
    ``software_version`` are what the client sent (Kafka client.id, KIP-511 client software):
    untrusted text, at most 128 characters, to be escaped wherever it is shown."""

    class Meta:
        model = ApiKeyApplication
        fields = ["client_id", "software_name", "software_version", "address", "first_seen_at", "last_seen_at"]
        read_only_fields = fields


class ApiKeyDetailSerializer(ApiKeySerializer):
    """One key with the applications brokers saw using it (the 20 most recently seen, newest
    first; empty for cloud keys and for cluster keys no broker has reported)."""

    applications = KeyApplicationSerializer(many=True, read_only=True)

    class Meta(ApiKeySerializer.Meta):
        fields = ApiKeySerializer.Meta.fields + ["applications"]


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


class RevokedApiKeySerializer(ApiKeySerializer):
    """The revoked key, with the job that makes the brokers forget a cluster key (``DELETE /api-keys/{id}``)."""

    job = serializers.SerializerMethodField(help_text="SYNC_SECURITY for a cluster key; null for a cloud key and for a key already revoked.")

    class Meta(ApiKeySerializer.Meta):
        fields = ApiKeySerializer.Meta.fields + ["job"]

    @extend_schema_field(JobSummarySerializer(allow_null=True))
    def get_job(self, key: ApiKey) -> dict[str, Any] | None:
        return self.context["job"]


class ApiKeyFilterSerializer(serializers.Serializer):
    """Query parameters of ``GET /api-keys``."""

    state = serializers.ChoiceField(choices=["ACTIVE", "REVOKED"], required=False, help_text="Only keys in this state.")
    owner = serializers.CharField(max_length=64, required=False, help_text="Only keys of this owner: sa-... or u-....")


class ApiKeyCreateSerializer(InputSerializer):
    kind = serializers.ChoiceField(choices=ApiKeyKind.values)
    owner = serializers.RegexField(
        r"^(sa|u)-", max_length=64, required=False, help_text="sa-... or u-...; yourself when left out. One that is not in the tenant: 409."
    )
    description = serializers.CharField(max_length=256, allow_blank=True, default="")


class QuotaSerializer(serializers.ModelSerializer):
    effective_produce_bytes_per_second = serializers.IntegerField()
    effective_consume_bytes_per_second = serializers.IntegerField()

    class Meta:
        model = Quota
        fields = [
            "produce_bytes_per_second",
            "consume_bytes_per_second",
            "effective_produce_bytes_per_second",
            "effective_consume_bytes_per_second",
            "updated_at",
        ]


class QuotaUpdateSerializer(InputSerializer):
    produce_bytes_per_second = serializers.IntegerField(
        allow_null=True, min_value=1, max_value=MAX_QUOTA_RATE, help_text="Null: the plan's rate. Above the tenant's plan's rate: 409."
    )
    consume_bytes_per_second = serializers.IntegerField(
        allow_null=True, min_value=1, max_value=MAX_QUOTA_RATE, help_text="Null: the plan's rate. Above the tenant's plan's rate: 409."
    )


class SignUpSerializer(InputSerializer):
    username = serializers.RegexField(r"^[\w.@+-]+$", max_length=150, help_text="Letters, digits and @ . + - _ (Django's user names).")
    email = serializers.EmailField(max_length=254)
    password = serializers.RegexField(
        r"[^0-9]",
        min_length=10,
        max_length=200,
        write_only=True,
        help_text="At least 10 characters, not all digits; also refused (400): common passwords and ones close to the username or e-mail.",
    )
    tenant_name = serializers.RegexField(NOT_BLANK, max_length=100, help_text="1 to 100 characters, not only spaces.")


class SignUpResultSerializer(serializers.Serializer):
    username = serializers.CharField()
    tenant = serializers.DictField()
    member_id = serializers.CharField()
