"""ACL binding shape (Confluent REST v3 KafkaAcl) and its inputs."""

from __future__ import annotations

from urllib.parse import urlencode

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.api.serializers.common import ResourceMetadataSerializer, resource_name
from webapp.api.serializers.strict import InputSerializer
from webapp.catalog.facade import AclBinding, Operation, PatternType, Permission, ResourceType

ANY_CHOICE = ["ANY"]


class AclCreateSerializer(InputSerializer):
    resource_type = serializers.ChoiceField(choices=ResourceType.values)
    resource_name = serializers.CharField(max_length=300, allow_blank=True)
    pattern_type = serializers.ChoiceField(choices=PatternType.values, default=PatternType.LITERAL)
    principal = serializers.CharField(max_length=200)
    host = serializers.CharField(max_length=64, default="*")
    operation = serializers.ChoiceField(choices=Operation.values)
    permission = serializers.ChoiceField(choices=Permission.values, default=Permission.ALLOW)


class AclFilterSerializer(serializers.Serializer):
    """Query parameters of ``GET`` and ``DELETE /acls``; absent or ``ANY`` matches anything."""

    resource_type = serializers.ChoiceField(choices=ANY_CHOICE + ResourceType.values, required=False)
    resource_name = serializers.CharField(max_length=300, required=False)
    pattern_type = serializers.ChoiceField(choices=ANY_CHOICE + ["MATCH"] + PatternType.values, required=False)
    principal = serializers.CharField(max_length=200, required=False)
    host = serializers.CharField(max_length=64, required=False)
    operation = serializers.ChoiceField(choices=ANY_CHOICE + Operation.values, required=False)
    permission = serializers.ChoiceField(choices=ANY_CHOICE + Permission.values, required=False)


class AclDeleteFilterSerializer(AclFilterSerializer):
    # Deleting needs at least the resource type (ANY allowed), so that a bare DELETE /acls
    # cannot wipe every binding by accident.
    resource_type = serializers.ChoiceField(choices=ANY_CHOICE + ResourceType.values)


class AclSerializer(serializers.ModelSerializer):
    kind = serializers.SerializerMethodField()
    id = serializers.CharField(source="public_id")
    metadata = serializers.SerializerMethodField()
    cluster_id = serializers.SerializerMethodField()

    class Meta:
        model = AclBinding
        fields = [
            "kind",
            "id",
            "metadata",
            "cluster_id",
            "resource_type",
            "resource_name",
            "pattern_type",
            "principal",
            "host",
            "operation",
            "permission",
            "created_at",
        ]

    def get_kind(self, binding: AclBinding) -> str:
        return "KafkaAcl"

    @extend_schema_field(ResourceMetadataSerializer)
    def get_metadata(self, binding: AclBinding) -> dict[str, str]:
        tenant_id = self.context["tenant_public_id"]
        request = self.context["request"]
        # Encoded: a resource name may hold any character, and the link must stay one URL.
        query = urlencode(
            {
                "resource_type": binding.resource_type,
                "resource_name": binding.resource_name,
                "pattern_type": binding.pattern_type,
                "principal": binding.principal,
                "host": binding.host,
                "operation": binding.operation,
                "permission": binding.permission,
            }
        )
        return {
            "self": request.build_absolute_uri("/api/v1/acls") + "?" + query,
            "resource_name": resource_name(tenant_id, f"acl={binding.public_id}"),
        }

    def get_cluster_id(self, binding: AclBinding) -> str:
        return self.context["tenant_public_id"]
