"""Inputs and outputs of the ACL templates and the ACL explainer."""

from __future__ import annotations

from rest_framework import serializers

from webapp.api.serializers.acls import AclSerializer
from webapp.api.serializers.common import JobSummarySerializer
from webapp.api.serializers.strict import InputSerializer
from webapp.catalog.facade import ACL_TEMPLATES, Operation, PatternType, ResourceType


class AclTemplateSerializer(InputSerializer):
    template = serializers.ChoiceField(choices=list(ACL_TEMPLATES), help_text="; ".join(f"{name}: {text}" for name, text in ACL_TEMPLATES.items()))
    principal = serializers.CharField(max_length=200, help_text="User:<service account or member id>")
    topic = serializers.CharField(max_length=255, help_text="The topic name, or its prefix with pattern_type PREFIXED.")
    pattern_type = serializers.ChoiceField(choices=PatternType.values, default=PatternType.LITERAL)
    group = serializers.CharField(max_length=255, required=False, default="", allow_blank=True, help_text="The consumer group (required for consumer).")
    transactional_id = serializers.CharField(
        max_length=255,
        required=False,
        default="",
        allow_blank=True,
        help_text="The producer's transactional.id, or its prefix with PREFIXED (required for transactional-producer).",
    )


class BindingFieldsSerializer(serializers.Serializer):
    resource_type = serializers.CharField()
    resource_name = serializers.CharField()
    pattern_type = serializers.CharField()
    principal = serializers.CharField()
    host = serializers.CharField()
    operation = serializers.CharField()
    permission = serializers.CharField()


class AclTemplateResultSerializer(serializers.Serializer):
    created = AclSerializer(many=True)
    existing = BindingFieldsSerializer(many=True, help_text="Bindings the template asks for that were already there.")
    job = JobSummarySerializer(allow_null=True)


class AclExplainQuerySerializer(serializers.Serializer):
    principal = serializers.RegexField(r"^User:\S+$", max_length=200, help_text="User:<service account or member id>, or User:*")
    operation = serializers.ChoiceField(choices=[value for value in Operation.values if value != Operation.ALL])
    resource_type = serializers.ChoiceField(choices=ResourceType.values)
    resource_name = serializers.CharField(max_length=255)
    host = serializers.IPAddressField(required=False, help_text="The client's IP address; absent: any address (only host '*' bindings apply).")


class AclExplanationSerializer(serializers.Serializer):
    allowed = serializers.BooleanField()
    implied = serializers.BooleanField(help_text="The deciding ALLOW grants the operation by implication (READ -> DESCRIBE).")
    reason = serializers.CharField()
    deciding_acl = AclSerializer(allow_null=True, help_text="The binding that decides; null when none matched (denied by default).")
